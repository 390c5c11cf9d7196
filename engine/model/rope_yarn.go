package model

import (
	"fmt"
	"math"
)

// YaRN ("YaRN: Efficient Context Window Extension of Large Language
// Models", Peng et al. 2023) as transformers 5 computes it
// (_compute_yarn_parameters in modeling_rope_utils.py) and llama.cpp
// applies it (ggml's rope_yarn):
//
//	corr(r)   = d · ln(OrigContext / (2π·r)) / (2 · ln θ)   the pair index whose wavelength turns r times over OrigContext
//	low, high = max(0, ⌊corr(BetaFast)⌋), min(d-1, ⌈corr(BetaSlow)⌉)   (not rounded with NoTruncate)
//	ramp_j    = clamp((j - low) / (high - low), 0, 1)                  (high += 0.001 when equal)
//	inv_j     = θ^(-2j/d) · ((1 - ramp_j) + ramp_j / Factor)
//
// so fast pairs (j ≤ low) keep their frequency, slow ones (j ≥ high) are
// divided by Factor, and cos and sin are multiplied by AttnFactor.

// YaRN defaults (transformers and llama.cpp): the ramp runs from 32
// rotations to 1.
const (
	YaRNBetaFast = 32
	YaRNBetaSlow = 1
)

// yarnMScale is YaRN's get_mscale: 0.1·m·ln(factor) + 1, and 1 for a
// factor of at most 1.
func yarnMScale(factor, m float64) float64 {
	if factor <= 1 {
		return 1
	}
	return 0.1*m*math.Log(factor) + 1
}

// YaRNAttentionFactor is the factor cos and sin are multiplied by, as
// transformers 5 resolves it: attention_factor when stated; else, when
// mscale and mscale_all_dim are both stated and non-zero (DeepSeek),
// mscale(factor, mscale) / mscale(factor, mscale_all_dim); else
// mscale(factor, 1) = 0.1·ln(factor) + 1. Zero means "not stated".
func YaRNAttentionFactor(factor, attentionFactor, mscale, mscaleAllDim float64) float32 {
	switch {
	case attentionFactor != 0:
		return float32(attentionFactor)
	case mscale != 0 && mscaleAllDim != 0:
		return float32(yarnMScale(factor, mscale) / yarnMScale(factor, mscaleAllDim))
	}
	return float32(yarnMScale(factor, 1))
}

func (s RopeScaling) yarnString() string {
	str := fmt.Sprintf("yarn (factor %g, original context %d, beta fast/slow %g/%g, attention factor %g", s.Factor, s.OrigContext, s.BetaFast, s.BetaSlow, s.AttnFactor)
	if s.MScaleAllDim != 0 {
		str += fmt.Sprintf(", mscale_all_dim %g", s.MScaleAllDim)
	}
	if s.NoTruncate {
		str += ", not truncated"
	}
	return str + ")"
}

func (s RopeScaling) checkYaRN() error {
	switch {
	case !(s.Factor >= 1 && s.Factor <= 1e6):
		return fmt.Errorf("yarn RoPE scaling factor %g is not between 1 and 1e6", s.Factor)
	case s.OrigContext <= 0 || s.OrigContext > MaxContext:
		return fmt.Errorf("yarn RoPE scaling original_max_position_embeddings %d is not between 1 and %d", s.OrigContext, MaxContext)
	case !(s.BetaSlow > 0 && s.BetaFast > s.BetaSlow && s.BetaFast < 1e6):
		return fmt.Errorf("yarn RoPE scaling beta_fast %g and beta_slow %g: want 0 < beta_slow < beta_fast", s.BetaFast, s.BetaSlow)
	case !(s.AttnFactor > 0 && s.AttnFactor <= 100):
		return fmt.Errorf("yarn RoPE scaling attention factor %g is not a number above 0 and at most 100", s.AttnFactor)
	case !(s.MScaleAllDim >= 0 && s.MScaleAllDim <= 100):
		return fmt.Errorf("yarn RoPE scaling mscale_all_dim %g is not a number between 0 and 100", s.MScaleAllDim)
	}
	return nil
}

// yarnRange is the ramp's ends (low, high) in pair indices for a head of
// headDim rotated pairs' worth of dimensions.
func (s RopeScaling) yarnRange(theta float32, headDim int) (low, high float64) {
	d := float64(headDim)
	corr := func(rotations float64) float64 {
		return d * math.Log(float64(s.OrigContext)/(rotations*2*math.Pi)) / (2 * math.Log(float64(theta)))
	}
	low, high = corr(float64(s.BetaFast)), corr(float64(s.BetaSlow))
	if !s.NoTruncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = math.Max(low, 0), math.Min(high, d-1)
	if low == high {
		high += 0.001 // as transformers: no division by zero
	}
	return low, high
}

// yarnDivisors are the per-pair frequency divisors 1 / ((1-ramp) +
// ramp/Factor), (headDim/2).
func (s RopeScaling) yarnDivisors(theta float32, headDim int) []float32 {
	low, high := s.yarnRange(theta, headDim)
	d := make([]float32, headDim/2)
	for j := range d {
		ramp := math.Min(1, math.Max(0, (float64(j)-low)/(high-low)))
		d[j] = float32(1 / ((1 - ramp) + ramp/float64(s.Factor)))
	}
	return d
}

// scoreFactor is what a scaling multiplies q·k by: YaRN's attention
// factor squared (it multiplies both q's and k's rotations), 1 otherwise.
func (s RopeScaling) scoreFactor() float64 {
	if s.Type != RopeScaleYaRN {
		return 1
	}
	a := float64(s.AttnFactor)
	return a * a
}
