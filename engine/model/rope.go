package model

import (
	"fmt"
	"math"
)

// RopeScalingType is how a model stretches RoPE's wavelengths beyond the
// context it was first trained for.
type RopeScalingType uint8

const (
	RopeScaleNone RopeScalingType = iota
	// RopeScaleLinear divides every frequency by Factor (position
	// interpolation, Chen et al. 2023).
	RopeScaleLinear
	// RopeScaleLlama3 is Llama 3.1's: wavelengths longer than
	// OrigContext/LowFreqFactor are stretched by Factor, those shorter than
	// OrigContext/HighFreqFactor are kept, and a smooth ramp in between.
	RopeScaleLlama3
	// RopeScaleFreqs divides pair j's frequency by the j-th entry of the
	// tensor rope_freqs.weight (GGUF: llama.cpp's converter writes Llama
	// 3.1's factors there).
	RopeScaleFreqs
	// RopeScaleYaRN is YaRN (Peng et al. 2023; rope_yarn.go): wavelengths
	// short against OrigContext kept, long ones stretched by Factor, a
	// linear ramp between (BetaFast, BetaSlow rotations), and the scores
	// scaled by AttnFactor².
	RopeScaleYaRN
)

var ropeScaleNames = [...]string{"none", "linear", "llama3", "rope_freqs tensor", "yarn"}

func (t RopeScalingType) String() string {
	if int(t) < len(ropeScaleNames) {
		return ropeScaleNames[t]
	}
	return fmt.Sprintf("RopeScalingType(%d)", t)
}

// RopeScaling is a RoPE scaling and its parameters (the zero value: none).
type RopeScaling struct {
	Type           RopeScalingType
	Factor         float32 // linear, llama3: the stretch of long wavelengths
	LowFreqFactor  float32 // llama3
	HighFreqFactor float32 // llama3
	OrigContext    int     // llama3, yarn: original_max_position_embeddings

	// YaRN (rope_yarn.go).
	BetaFast, BetaSlow float32 // the ramp's ends, in rotations over OrigContext (32 and 1 unless stated)
	AttnFactor         float32 // cos and sin are multiplied by it, so q·k by its square (resolved by YaRNAttentionFactor)
	MScaleAllDim       float32 // mscale_all_dim as stated (DeepSeek's attention also scales its softmax by it); 0: none
	NoTruncate         bool    // truncate: false (gpt-oss): the ramp's ends are not rounded to whole pairs
}

func (s RopeScaling) String() string {
	switch s.Type {
	case RopeScaleLinear:
		return fmt.Sprintf("linear (factor %g)", s.Factor)
	case RopeScaleLlama3:
		return fmt.Sprintf("llama3 (factor %g, low/high freq factors %g/%g, original context %d)", s.Factor, s.LowFreqFactor, s.HighFreqFactor, s.OrigContext)
	case RopeScaleYaRN:
		return s.yarnString()
	}
	return s.Type.String()
}

// Check refuses parameters that would divide by zero or invert the ramp.
func (s RopeScaling) Check() error {
	switch s.Type {
	case RopeScaleNone, RopeScaleFreqs:
		return nil
	case RopeScaleLinear:
		if !(s.Factor >= 1 && s.Factor <= 1e6) {
			return fmt.Errorf("RoPE scaling factor %g is not between 1 and 1e6", s.Factor)
		}
		return nil
	case RopeScaleLlama3:
		switch {
		case !(s.Factor >= 1 && s.Factor <= 1e6):
			return fmt.Errorf("llama3 RoPE scaling factor %g is not between 1 and 1e6", s.Factor)
		case !(s.LowFreqFactor > 0 && s.HighFreqFactor > s.LowFreqFactor && s.HighFreqFactor < 1e6):
			return fmt.Errorf("llama3 RoPE scaling low_freq_factor %g and high_freq_factor %g: want 0 < low < high", s.LowFreqFactor, s.HighFreqFactor)
		case s.OrigContext <= 0 || s.OrigContext > MaxContext:
			return fmt.Errorf("llama3 RoPE scaling original_max_position_embeddings %d is not between 1 and %d", s.OrigContext, MaxContext)
		}
		return nil
	case RopeScaleYaRN:
		return s.checkYaRN()
	}
	return fmt.Errorf("RoPE scaling %v is not implemented", s.Type)
}

// Divisors are the per-pair frequency divisors of a scaling computed from
// its parameters (linear, llama3): pair j of a head of headDim turns at
// theta^(-2j/headDim) / divisor[j] radians per position. (headDim/2), nil
// for none; RopeScaleFreqs reads them from the file instead.
func (s RopeScaling) Divisors(theta float32, headDim int) []float32 {
	half := headDim / 2
	switch s.Type {
	case RopeScaleLinear:
		d := make([]float32, half)
		for j := range d {
			d[j] = s.Factor
		}
		return d
	case RopeScaleLlama3:
		// As transformers' _compute_llama3_parameters and llama.cpp's
		// converter: by wavelength 2π/freq against the original context.
		d := make([]float32, half)
		orig := float64(s.OrigContext)
		lowWave := orig / float64(s.LowFreqFactor)   // longer: stretched by Factor
		highWave := orig / float64(s.HighFreqFactor) // shorter: kept
		for j := range d {
			freq := 1 / math.Pow(float64(theta), float64(2*j)/float64(headDim))
			wave := 2 * math.Pi / freq
			switch {
			case wave < highWave:
				d[j] = 1
			case wave > lowWave:
				d[j] = s.Factor
			default:
				smooth := (orig/wave - float64(s.LowFreqFactor)) / float64(s.HighFreqFactor-s.LowFreqFactor)
				d[j] = float32(1 / ((1-smooth)/float64(s.Factor) + smooth))
			}
		}
		return d
	case RopeScaleYaRN:
		return s.yarnDivisors(theta, headDim)
	}
	return nil
}
