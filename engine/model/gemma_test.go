package model

import (
	"math"
	"strings"
	"testing"
)

func gemmaCfg() Config {
	return Config{Arch: "gemma3", Dim: 16, Layers: 4, Heads: 2, KVHeads: 1, HeadDim: 8, FFN: 32, Vocab: 8,
		RopeTheta: 1e6, QKNorm: true, SlidingWindow: 4,
		Gemma: Gemma3{On: true, QueryScale: 8, Layers: "LLLG", LocalRopeTheta: 1e4}}
}

// A Gemma 3 config whose fields contradict each other or the block is
// refused with what is wrong.
func TestGemmaConfigCheck(t *testing.T) {
	if c := gemmaCfg(); c.Validate() != nil {
		t.Fatalf("valid config: %v", c.Validate())
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"layer list too short", func(c *Config) { c.Gemma.Layers = "LLG" }, "layer types list 3 layers, the model has 4"},
		{"unknown layer kind", func(c *Config) { c.Gemma.Layers = "LLXG" }, `layer 2 of kind 'X'`},
		{"local layers without a window", func(c *Config) { c.SlidingWindow = 0 }, "without a sliding window"},
		{"query scale 0", func(c *Config) { c.Gemma.QueryScale = 0 }, "query_pre_attn_scalar 0"},
		{"no q/k norms", func(c *Config) { c.QKNorm = false }, "without q/k head norms"},
		{"local base 1", func(c *Config) { c.Gemma.LocalRopeTheta = 1 }, "local layers: RoPE base 1"},
		{"negative soft-cap", func(c *Config) { c.Gemma.FinalSoftcap = -30 }, "final_logit_softcapping -30"},
		{"rope_freqs on local layers", func(c *Config) { c.Gemma.LocalRopeScaling.Type = RopeScaleFreqs }, "global-layer only"},
		{"Gemma fields on Llama", func(c *Config) { c.Gemma.On = false }, `Gemma 3 fields set on a "gemma3" model that is not Gemma 3`},
		{"with experts", func(c *Config) { c.MoE = MoE{Experts: 4, PerToken: 2, FFN: c.FFN, NormTopK: true} }, "Gemma 3 with mixture of experts or latent attention is not implemented"},
		{"heads not dividing", func(c *Config) { c.Heads = 3 }, "3 attention heads are not divisible by 2"},
	} {
		c := gemmaCfg()
		tc.edit(&c)
		if tc.name == "heads not dividing" {
			c.KVHeads = 2
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestLocalPattern(t *testing.T) {
	for _, tc := range []struct {
		layers, period int
		want           string
	}{
		{4, 6, "LLLL"}, // llama.cpp's rule on the 4-layer fixture: no global layer
		{4, 4, "LLLG"},
		{12, 6, "LLLLLGLLLLLG"},
		{3, 1, "GGG"},
	} {
		if got, err := LocalPattern(tc.layers, tc.period); err != nil || got != tc.want {
			t.Errorf("LocalPattern(%d, %d) = %q, %v; want %q", tc.layers, tc.period, got, err, tc.want)
		}
	}
	if _, err := LocalPattern(4, 0); err == nil || !strings.Contains(err.Error(), "pattern 0") {
		t.Errorf("LocalPattern(4, 0) error %v; want one naming the pattern 0", err)
	}
}

// gelu_tanh by hand: x = 1: 0.5·(1 + tanh(0.7978846·1.044715)) =
// 0.5·(1 + tanh(0.8335526)) = 0.5·1.6823840 = 0.8411920; x = -1: -1 + that
// (GELU is odd around x/2: gelu(x) - gelu(-x) = x) = -0.1588080; x = 0: 0.
func TestGeGLU(t *testing.T) {
	gate := []float32{1, -1, 0, 1}
	up := []float32{1, 1, 5, 2}
	geglu(gate, up)
	want := []float64{0.8411920, -0.1588080, 0, 2 * 0.8411920}
	for i := range gate {
		if math.Abs(float64(gate[i])-want[i]) > 1e-6 {
			t.Errorf("geglu[%d] = %.7g, want %.7g", i, gate[i], want[i])
		}
	}
}

// The GPU path refuses by Extensions: Gemma 3 and YaRN are named.
func TestGemmaYaRNExtensions(t *testing.T) {
	c := gemmaCfg()
	c.RopeScaling = RopeScaling{Type: RopeScaleYaRN, Factor: 4, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1.138629}
	ext := strings.Join(c.Extensions(), "; ")
	for _, want := range []string{"Gemma 3 block", "query_pre_attn_scalar 8", "interleaved local/global layers", "RoPE scaling yarn (factor 4", "q/k head norms", "sliding-window attention (window 4)"} {
		if !strings.Contains(ext, want) {
			t.Errorf("Extensions() = %q; want %q in it", ext, want)
		}
	}
}

// Each layer's geometry: local layers their window, base and 1/sqrt(query
// scale); global layers the whole context.
func TestGemmaLayerAttns(t *testing.T) {
	c := gemmaCfg()
	c.Gemma.QueryScale = 16
	attn, tables := newLayerAttns(&Weights{Cfg: c}, 8)
	if len(tables) != 2 || attn[0].rope != attn[2].rope || attn[0].rope == attn[3].rope {
		t.Fatalf("tables %d, layer 0/2/3 tables %p %p %p: want one local table shared, one global", len(tables), attn[0].rope, attn[2].rope, attn[3].rope)
	}
	for l, want := range []int{4, 4, 4, 0} {
		if attn[l].window != want || attn[l].scale != 0.25 {
			t.Errorf("layer %d: window %d, scale %g; want %d, 0.25", l, attn[l].window, attn[l].scale, want)
		}
	}
}

// LayerAttentions (what gpu/cuda uploads) is the runner's own geometry:
// the same tables, windows and scales, and Tables gives the rotations
// Apply uses (a YaRN-scaled global table here).
func TestLayerAttentionsAreTheRunners(t *testing.T) {
	c := gemmaCfg()
	c.RopeScaling = RopeScaling{Type: RopeScaleYaRN, Factor: 4, OrigContext: 16, BetaFast: 32, BetaSlow: 1, AttnFactor: 1.2}
	w := &Weights{Cfg: c, RopeDivisors: c.RopeScaling.Divisors(c.RopeTheta, c.HeadDim)}
	attn, _ := newLayerAttns(w, 40)
	got := LayerAttentions(w, 40)
	for l := range attn {
		if got[l].Rope.HeadDim != c.HeadDim || got[l].Window != attn[l].window || got[l].Scale != attn[l].scale {
			t.Errorf("layer %d: %+v, runner's window %d scale %g", l, got[l], attn[l].window, attn[l].scale)
		}
		if (got[l].Rope == got[0].Rope) != (attn[l].rope == attn[0].rope) {
			t.Errorf("layer %d: shares layer 0's table %v, the runner's %v", l, got[l].Rope == got[0].Rope, attn[l].rope == attn[0].rope)
		}
	}
	g := got[3] // global: YaRN's divisors and its attention factor squared in the scale
	if want := float32(1 / math.Sqrt(float64(c.Gemma.QueryScale)) * 1.2 * 1.2); math.Abs(float64(g.Scale-want)) > 1e-6 {
		t.Errorf("global scale %g, want %g", g.Scale, want)
	}
	cs, sn := g.Rope.Tables(104)
	if half := c.HeadDim / 2; len(cs) != 104*half || len(sn) != 104*half {
		t.Fatalf("tables of %d, %d values, want %d", len(cs), len(sn), 104*half)
	}
	half := c.HeadDim / 2
	for _, p := range []int{0, 1, 17, 103} {
		v := make([]float32, c.HeadDim)
		v[0], v[half] = 1, 0 // rotate-half pair 0: (cos, sin)
		g.Rope.Apply(v, p, false)
		if v[0] != cs[p*half] || v[half] != sn[p*half] {
			t.Errorf("position %d: Apply gives (%g, %g), Tables (%g, %g)", p, v[0], v[half], cs[p*half], sn[p*half])
		}
	}
}
