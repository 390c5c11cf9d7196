package model

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// route against hand-computed transformers results.
func TestRoute(t *testing.T) {
	e := math.Exp
	for _, tc := range []struct {
		name   string
		m      MoE
		logits []float32
		bias   []float32
		ids    []int32
		w      []float64
	}{
		{"mixtral: softmax, top 2 renormalized", MoE{Experts: 4, PerToken: 2, NormTopK: true},
			[]float32{1, 3, 2, 0}, nil, []int32{1, 2}, []float64{e(3) / (e(3) + e(2)), e(2) / (e(3) + e(2))}},
		{"qwen3-moe without norm_topk_prob: softmax probabilities", MoE{Experts: 4, PerToken: 2},
			[]float32{1, 3, 2, 0}, nil, []int32{1, 2}, []float64{e(3) / (e(0) + e(1) + e(2) + e(3)), e(2) / (e(0) + e(1) + e(2) + e(3))}},
		{"tie goes to the lower id", MoE{Experts: 3, PerToken: 1, NormTopK: true}, []float32{2, 2, 1}, nil, []int32{0}, []float64{1}},
		{"deepseek: the bias chooses, the scores weigh", MoE{Experts: 4, PerToken: 2, Scoring: ScoreSigmoid, NormTopK: true, ScoreBias: true, RoutedScale: 2.5},
			[]float32{0, 1, 2, 3}, []float32{5, 0, 0, 0}, []int32{0, 3},
			[]float64{2.5 * sigmoid(0) / (sigmoid(0) + sigmoid(3)), 2.5 * sigmoid(3) / (sigmoid(0) + sigmoid(3))}},
		// Groups {0,1,2,3} and {4,5,6,7}: the second's two best (0.9+0.8)
		// beat the first's (0.95+0.1), so expert 0 is left out.
		{"deepseek: top group of 2", MoE{Experts: 8, PerToken: 2, Scoring: ScoreSigmoid, Groups: 2, TopKGroups: 1},
			logitsOf(0.95, 0.1, 0.1, 0.1, 0.9, 0.8, 0.1, 0.1), nil, []int32{4, 5}, []float64{0.9, 0.8}},
		// transformers masks the other groups' choices to 0, not -inf: with
		// a bias that makes every choice negative, a masked expert (0)
		// wins over the kept group's.
		{"deepseek: masked choices are 0, as transformers", MoE{Experts: 4, PerToken: 1, Scoring: ScoreSigmoid, ScoreBias: true, Groups: 2, TopKGroups: 1},
			logitsOf(0.6, 0.6, 0.5, 0.5), []float32{-2, -2, -2, -2}, []int32{2}, []float64{0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.m.PerToken
			ids, w := make([]int32, k), make([]float32, k)
			logits := slices.Clone(tc.logits)
			tc.m.route(ids, w, logits, tc.bias, make([]float32, tc.m.Experts), make([]float32, max(tc.m.Groups, 1)))
			if !slices.Equal(ids, tc.ids) {
				t.Fatalf("experts %v, want %v", ids, tc.ids)
			}
			for j := range w {
				if math.Abs(float64(w[j])-tc.w[j]) > 1e-6 {
					t.Errorf("weights %v, want %v", w, tc.w)
				}
			}
		})
	}
}

// logitsOf are the logits whose sigmoids are p.
func logitsOf(p ...float64) []float32 {
	l := make([]float32, len(p))
	for i, v := range p {
		l[i] = float32(math.Log(v / (1 - v)))
	}
	return l
}

// Config fields that contradict each other are refused, naming them.
func TestMoEConfigCheck(t *testing.T) {
	base := Config{Arch: "x", Dim: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 64, Vocab: 32}
	mla := MLA{QRank: 16, KVRank: 16, NopeDim: 8, RopeDim: 16, VDim: 8}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"experts per token above experts", func(c *Config) { c.MoE = MoE{Experts: 4, PerToken: 5, FFN: 8} }, "num_experts_per_tok 5 is not between 1 and the 4 experts"},
		{"no expert FFN", func(c *Config) { c.MoE = MoE{Experts: 4, PerToken: 2} }, "expert FFN size 0"},
		{"groups not dividing", func(c *Config) { c.MoE = MoE{Experts: 8, PerToken: 2, FFN: 8, Groups: 3, TopKGroups: 1} }, "n_group 3 does not divide the 8 experts"},
		{"topk_group above n_group", func(c *Config) { c.MoE = MoE{Experts: 8, PerToken: 2, FFN: 8, Groups: 2, TopKGroups: 3} }, "topk_group 3 is not between 1 and n_group 2"},
		{"top-k beyond the kept groups", func(c *Config) { c.MoE = MoE{Experts: 8, PerToken: 5, FFN: 8, Groups: 2, TopKGroups: 1} }, "num_experts_per_tok 5 is more than the 4 experts"},
		{"first dense beyond the layers", func(c *Config) { c.MoE = MoE{Experts: 4, PerToken: 2, FFN: 8, FirstDense: 3} }, "first_k_dense_replace 3"},
		{"kv_lora_rank 0", func(c *Config) { c.MLA = mla; c.MLA.KVRank = 0 }, "kv_lora_rank 0 is not between 1"},
		{"rope dims not the head dim", func(c *Config) { c.MLA = mla; c.MLA.RopeDim = 8 }, "qk_rope_head_dim 8 differs from the head dim 16"},
		{"latent attention with a YaRN attention factor", func(c *Config) {
			c.MLA = mla
			c.RopeScaling = RopeScaling{Type: RopeScaleYaRN, Factor: 40, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1.0857, MScaleAllDim: 0.707}
		}, "a YaRN attention factor other than 1"},
		{"latent attention with DeepSeek's YaRN", func(c *Config) {
			c.MLA = mla
			c.RopeScaling = RopeScaling{Type: RopeScaleYaRN, Factor: 40, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1, MScaleAllDim: 1}
		}, ""},
		{"latent attention with linear scaling", func(c *Config) {
			c.MLA = mla
			c.RopeScaling = RopeScaling{Type: RopeScaleLinear, Factor: 2}
		}, ""},
		{"valid", func(c *Config) { c.MoE = MoE{Experts: 8, PerToken: 2, FFN: 8, Groups: 2, TopKGroups: 1}; c.MLA = mla }, ""},
	} {
		c := base
		tc.edit(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// Extensions names experts and latent attention, for the GPU to refuse.
func TestExtensionsNameMoE(t *testing.T) {
	c := Config{MoE: MoE{Experts: 8, PerToken: 2, FFN: 8}, MLA: MLA{QRank: 1, KVRank: 2, NopeDim: 3, RopeDim: 4, VDim: 5}}
	got := strings.Join(c.Extensions(), "; ")
	for _, want := range []string{"mixture of experts (8 experts, top 2, softmax scores)", "multi-head latent attention (q rank 1, kv rank 2, qk 3+4, v 5)"} {
		if !strings.Contains(got, want) {
			t.Errorf("Extensions() = %q, want %q in it", got, want)
		}
	}
}

// TestMLAScale: latent attention's score scale is 1/sqrt(nope + rope),
// times mscale(factor, mscale_all_dim)² with YaRN (transformers'
// DeepseekV3Attention), and nothing else changes it.
func TestMLAScale(t *testing.T) {
	mla := MLA{QRank: 1536, KVRank: 512, NopeDim: 128, RopeDim: 64, VDim: 128}
	yarn := RopeScaling{Type: RopeScaleYaRN, Factor: 40, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1, MScaleAllDim: 1}
	m := 0.1*math.Log(40) + 1 // 1.368888
	for _, tc := range []struct {
		name string
		rs   RopeScaling
		want float64
	}{
		{"none", RopeScaling{}, 1 / math.Sqrt(192)},
		{"linear", RopeScaling{Type: RopeScaleLinear, Factor: 4}, 1 / math.Sqrt(192)},
		{"DeepSeek-V3 yarn", yarn, m * m / math.Sqrt(192)},
		{"yarn without mscale_all_dim", RopeScaling{Type: RopeScaleYaRN, Factor: 40, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1}, 1 / math.Sqrt(192)},
	} {
		c := Config{MLA: mla, RopeScaling: tc.rs}
		if got := c.MLAScale(); math.Abs(float64(got)-tc.want) > 1e-7*tc.want {
			t.Errorf("%s: scale %.9g, want %.9g", tc.name, got, tc.want)
		}
	}
}
