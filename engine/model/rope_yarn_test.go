package model

import (
	"math"
	"strings"
	"testing"
)

// The YaRN frequencies of a case small enough to derive by hand
// (θ = 10000, head dim d = 8 so pairs j = 0..3 turn at 10000^(-j/4) = 1,
// 0.1, 0.01, 0.001 rad per position, original context 4096, factor 4,
// beta 32 / 1):
//
//	corr(32) = 8·ln(4096 / (2π·32)) / (2·ln 10000) = 8·3.014160 / 18.420681 = 1.309030
//	corr(1)  = 8·ln(4096 / 2π)      / (2·ln 10000) = 8·6.479817 / 18.420681 = 2.814180
//
// truncated to low = 1, high = 3: ramp = 0, 0, 1/2, 1, so the divisors
// 1 / ((1-ramp) + ramp/4) are 1, 1, 1/(1/2 + 1/8) = 1.6, and 4. Not
// truncated, pair 2's ramp is (2 - 1.309030) / (2.814180 - 1.309030) =
// 0.459070 and its divisor 1 / (0.540930 + 0.114768) = 1.525094. The
// attention factor is 0.1·ln 4 + 1 = 1.138629.
func TestYaRNByHand(t *testing.T) {
	base := RopeScaling{Type: RopeScaleYaRN, Factor: 4, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: YaRNAttentionFactor(4, 0, 0, 0)}
	noTrunc := base
	noTrunc.NoTruncate = true
	one := base
	one.Factor = 1
	for _, tc := range []struct {
		name string
		s    RopeScaling
		want []float64
	}{
		{"truncated", base, []float64{1, 1, 1.6, 4}},
		{"not truncated", noTrunc, []float64{1, 1, 1.525094, 4}},
		{"factor 1", one, []float64{1, 1, 1, 1}},
	} {
		if err := tc.s.Check(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := tc.s.Divisors(10000, 8)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d divisors, want %d", tc.name, len(got), len(tc.want))
		}
		for j := range got {
			if math.Abs(float64(got[j])-tc.want[j]) > 1e-6*tc.want[j] {
				t.Errorf("%s: divisor[%d] = %.7g, want %.7g", tc.name, j, got[j], tc.want[j])
			}
		}
	}
	if math.Abs(float64(base.AttnFactor)-1.138629) > 1e-6 {
		t.Errorf("attention factor %.7g, want 1.138629", base.AttnFactor)
	}
}

// The attention factor, as transformers 5 resolves it: attention_factor
// when stated, else mscale / mscale_all_dim (DeepSeek: equal, so 1), else
// 0.1·ln(factor) + 1 (which mscale alone does not change).
func TestYaRNAttentionFactor(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		factor, attn, mscale, msAll float64
		want                        float64
	}{
		{"factor 4", 4, 0, 0, 0, 1.138629},   // 0.1·ln 4 + 1
		{"factor 40", 40, 0, 0, 0, 1.368888}, // 0.1·ln 40 + 1 = 0.1·3.688879 + 1
		{"factor 1", 1, 0, 0, 0, 1},          // no stretch, no correction
		{"stated", 40, 0.8, 1, 1, 0.8},       // attention_factor wins
		{"DeepSeek-V3", 40, 0, 1, 1, 1},      // mscale = mscale_all_dim
		{"DeepSeek-V2-Lite", 40, 0, 0.707, 0.707, 1},
		{"mscale 1 over 0.707", 40, 0, 1, 0.707, 1.085726}, // 1.368888 / (0.0707·3.688879 + 1) = 1.368888 / 1.260804
		{"mscale alone", 40, 0, 0.707, 0, 1.368888},
	} {
		if got := YaRNAttentionFactor(tc.factor, tc.attn, tc.mscale, tc.msAll); math.Abs(float64(got)-tc.want) > 1e-6 {
			t.Errorf("%s: %.7g, want %.7g", tc.name, got, tc.want)
		}
	}
}

// Properties of a real shape (Qwen3: θ = 1e6, head dim 128, 32768
// positions stretched 4 times): every divisor between 1 and the factor,
// never decreasing from fast pairs to slow ones, the fastest kept and
// the slowest stretched in full; q·k scaled by the attention factor
// squared.
func TestYaRNProperties(t *testing.T) {
	s := RopeScaling{Type: RopeScaleYaRN, Factor: 4, OrigContext: 32768, BetaFast: 32, BetaSlow: 1, AttnFactor: YaRNAttentionFactor(4, 0, 0, 0)}
	d := s.Divisors(1e6, 128)
	if len(d) != 64 || d[0] != 1 || d[63] != 4 {
		t.Fatalf("divisors %v: want 64, the first 1 and the last 4", d)
	}
	for j := 1; j < len(d); j++ {
		if d[j] < d[j-1] || d[j] < 1 || d[j] > 4 {
			t.Fatalf("divisor[%d] = %g after %g: want non-decreasing within [1, 4]", j, d[j], d[j-1])
		}
	}
	cfg := Config{Arch: "qwen3", Dim: 256, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 128, FFN: 64, Vocab: 8, RopeTheta: 1e6, RopeScaling: s}
	attn, _ := newLayerAttns(&Weights{Cfg: cfg, RopeDivisors: d}, 8)
	want := float32(1.138629 * 1.138629 / math.Sqrt(128))
	if got := attn[1].scale; math.Abs(float64(got-want)) > 1e-6 {
		t.Errorf("score scale %g, want %g (attention factor² / sqrt(head dim))", got, want)
	}
}

// Contradictory YaRN parameters are refused with the field named.
func TestYaRNCheck(t *testing.T) {
	ok := RopeScaling{Type: RopeScaleYaRN, Factor: 4, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1}
	for _, tc := range []struct {
		name string
		edit func(*RopeScaling)
		want string
	}{
		{"factor below 1", func(s *RopeScaling) { s.Factor = 0.5 }, "factor 0.5"},
		{"no original context", func(s *RopeScaling) { s.OrigContext = 0 }, "original_max_position_embeddings 0"},
		{"betas swapped", func(s *RopeScaling) { s.BetaFast, s.BetaSlow = 1, 32 }, "beta_fast 1 and beta_slow 32"},
		{"attention factor 0", func(s *RopeScaling) { s.AttnFactor = 0 }, "attention factor 0"},
		{"NaN factor", func(s *RopeScaling) { s.Factor = float32(math.NaN()) }, "factor NaN"},
	} {
		s := ok
		tc.edit(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check() = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := ok.Check(); err != nil {
		t.Errorf("valid: %v", err)
	}
}
