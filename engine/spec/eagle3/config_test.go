package eagle3_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor/cpu"
)

func nil2() *rand.Rand { return rand.New(rand.NewPCG(2, 2)) }

const baseConfig = `"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 512, "intermediate_size": 1024,
	"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64, "num_hidden_layers": 1,
	"rms_norm_eps": 1e-05, "vocab_size": 4096, "draft_vocab_size": 2048`

var target14m = model.Config{Dim: 512, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 64, FFN: 1024, Vocab: 4096}

// TestParseConfig: what each field becomes, both layer-id conventions,
// RoPE settings, and the checks that need no target.
func TestParseConfig(t *testing.T) {
	cases := []struct {
		name    string
		json    string
		aux     []int   // after Resolve against gocoder-14m's shape
		theta   float32 // 0: not checked
		tdim    int     // 0: not checked
		wantErr string
	}{
		{"SGLang convention", `{` + baseConfig + `, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}`, []int{0, 1, 2}, 10000, 512, ""},
		{"vLLM convention", `{` + baseConfig + `, "eagle_aux_hidden_state_layer_ids": [1, 2, 3]}`, []int{0, 1, 2}, 0, 0, ""},
		{"both, agreeing", `{` + baseConfig + `, "eagle_aux_hidden_state_layer_ids": [2, 3, 4], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3]}}`, []int{1, 2, 3}, 0, 0, ""},
		{"vLLM architecture name", `{"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8, "vocab_size": 4096, "eagle_aux_hidden_state_layer_ids": [2, 3, 4]}`, []int{1, 2, 3}, 0, 512, ""},
		{"rope_theta top level", `{` + baseConfig + `, "rope_theta": 500000, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}`, []int{0, 1, 2}, 500000, 0, ""},
		{"rope_parameters", `{` + baseConfig + `, "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"}, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}`, []int{0, 1, 2}, 1e6, 0, ""},
		{"target_hidden_size", `{` + baseConfig + `, "target_hidden_size": 512, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 3]}}`, []int{0, 1, 3}, 0, 512, ""},
		{"not JSON", `{`, nil, 0, 0, "not JSON"},
		{"no architectures", `{"hidden_size": 512}`, nil, 0, 0, "not an EAGLE-3 head"},
		{"zero sizes", `{"architectures": ["LlamaForCausalLMEagle3"]}`, nil, 0, 0, "non-positive size"},
		{"heads not divisible", `{` + baseConfig + `, "num_key_value_heads": 3}`, nil, 0, 0, "not divisible"},
		{"odd head dim", `{` + baseConfig + `, "head_dim": 63}`, nil, 0, 0, "odd"},
		{"draft vocab larger", `{` + baseConfig + `, "draft_vocab_size": 5000}`, nil, 0, 0, "exceeds vocab_size"},
		{"gelu", `{` + baseConfig + `, "hidden_act": "gelu"}`, nil, 0, 0, `hidden_act = "gelu" (supported: silu)`},
		{"negative layer", `{` + baseConfig + `, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 1, 2]}}`, nil, 0, 0, "negative"},
		{"four layers", `{` + baseConfig + `, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2, 3]}}`, nil, 0, 0, "4 aux layers"},
		{"bad theta", `{` + baseConfig + `, "rope_theta": -1}`, nil, 0, 0, "rope_theta"},
		{"rope_scaling linear, type key", `{` + baseConfig + `, "rope_scaling": {"type": "linear", "factor": 2}, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}`, []int{0, 1, 2}, 0, 0, ""},
		{"llama3 in rope_parameters", `{` + baseConfig + `, "rope_parameters": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 8192, "rope_theta": 500000}, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}`, []int{0, 1, 2}, 500000, 0, ""},
		{"llama3 missing a parameter", `{` + baseConfig + `, "rope_scaling": {"rope_type": "llama3", "factor": 8}}`, nil, 0, 0, "rope_scaling"},
		{"yarn", `{` + baseConfig + `, "rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 4096}}`, nil, 0, 0, `rope_scaling.rope_type = yarn`},
		{"attention bias", `{` + baseConfig + `, "attention_bias": true}`, nil, 0, 0, `attention_bias = true`},
		{"theta 0", `{` + baseConfig + `, "rope_theta": 0}`, nil, 0, 0, "rope_theta: RoPE base 0"},
		{"eps 1e39", `{` + baseConfig + `, "rms_norm_eps": 1e39}`, nil, 0, 0, "rms_norm_eps: norm epsilon 1e+39"},
		{"eps negative", `{` + baseConfig + `, "rms_norm_eps": -1e-5}`, nil, 0, 0, "rms_norm_eps: norm epsilon -1e-05"},
		{"context 0", `{` + baseConfig + `, "max_position_embeddings": 0}`, nil, 0, 0, "max_position_embeddings: context length 0"},
		{"absurd", `{` + baseConfig + `, "hidden_size": 100000000}`, nil, 0, 0, "absurd"},
	}
	for _, c := range cases {
		cfg, err := eagle3.ParseConfig([]byte(c.json))
		if err == nil {
			err = cfg.Resolve(target14m, false)
		}
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: ParseConfig+Resolve(%s) = %v, want an error containing %q", c.name, c.json, err, c.wantErr)
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: ParseConfig+Resolve(%s): %v", c.name, c.json, err)
		case c.wantErr != "":
		case !slices.Equal(cfg.AuxLayers, c.aux):
			t.Errorf("%s: ParseConfig(%s).AuxLayers = %v, want %v (%s)", c.name, c.json, cfg.AuxLayers, c.aux, cfg.AuxFrom)
		case c.theta != 0 && cfg.RopeTheta != c.theta:
			t.Errorf("%s: ParseConfig(%s).RopeTheta = %g, want %g", c.name, c.json, cfg.RopeTheta, c.theta)
		case c.tdim != 0 && cfg.TargetDim != c.tdim:
			t.Errorf("%s: ParseConfig(%s).TargetDim = %d, want %d", c.name, c.json, cfg.TargetDim, c.tdim)
		}
	}
}

// TestResolveDefaultLayers: without layer ids, SGLang's default
// [1, L/2-1, L-4] is used when it names three distinct layers.
func TestResolveDefaultLayers(t *testing.T) {
	cfg, err := eagle3.ParseConfig([]byte(`{` + baseConfig + `}`))
	if err != nil {
		t.Fatal(err)
	}
	tc := target14m
	tc.Layers = 32
	if err := cfg.Resolve(tc, false); err != nil {
		t.Fatalf("Resolve(32-layer target): %v", err)
	}
	if want := []int{1, 15, 28}; !slices.Equal(cfg.AuxLayers, want) {
		t.Errorf("default AuxLayers for 32 layers = %v, want %v", cfg.AuxLayers, want)
	}
}

// FuzzParseConfig: any config.json is parsed or refused, never a panic,
// and an accepted one resolves or is refused against a target.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{` + baseConfig + `, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 1, 2]}}`))
	f.Add([]byte(`{` + baseConfig + `, "eagle_aux_hidden_state_layer_ids": [1, 2, 3], "rope_scaling": {"type": "linear"}}`))
	f.Add([]byte(`{"architectures": ["Eagle3LlamaForCausalLM"], "rope_parameters": null}`))
	f.Add([]byte(`{` + baseConfig + `, "rope_theta": 0, "rms_norm_eps": 1e39, "max_position_embeddings": 0}`))
	f.Add([]byte(`{` + baseConfig + `, "attention_bias": true, "rope_parameters": {"rope_type": "llama3", "factor": 8}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := eagle3.ParseConfig(b)
		if err != nil {
			return
		}
		if model.CheckRopeTheta(float64(cfg.RopeTheta)) != nil || model.CheckNormEps(float64(cfg.NormEps)) != nil || model.CheckContext(cfg.MaxPos) != nil {
			t.Fatalf("ParseConfig(%q) accepted theta %g, eps %g, context %d", b, cfg.RopeTheta, cfg.NormEps, cfg.MaxPos)
		}
		if err := cfg.Resolve(target14m, false); err == nil && len(cfg.AuxLayers) != eagle3.NumAux {
			t.Errorf("ParseConfig(%q) resolved to %d aux layers", b, len(cfg.AuxLayers))
		}
	})
}

// TestHeadRopeLlama31: the Llama 3.1 EAGLE-3 heads state llama3 RoPE
// scaling (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config.json, trimmed);
// the head's table keeps the high frequencies and stretches the low ones
// by the factor, as the target's own table does.
func TestHeadRopeLlama31(t *testing.T) {
	cfg, err := eagle3.ParseConfig([]byte(`{"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096, "intermediate_size": 14336,
		"num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 1, "rms_norm_eps": 1e-05, "max_position_embeddings": 2048,
		"rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
		"rope_theta": 500000.0, "vocab_size": 128256, "draft_vocab_size": 32000}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RopeScaling.Type != model.RopeScaleLlama3 || cfg.RopeScaling.Factor != 8 {
		t.Fatalf("RopeScaling = %+v, want llama3 factor 8", cfg.RopeScaling)
	}
	const pos, hd = 1000, 128
	cs, _ := cfg.Rope(pos + 1).Tables(pos + 1)
	plain, _ := cpu.NewRopeTable(hd, pos+1, cfg.RopeTheta).Tables(pos + 1)
	stretched, _ := cpu.NewScaledRopeTable(hd, pos+1, cfg.RopeTheta, slices.Repeat([]float32{8}, hd/2)).Tables(pos + 1)
	row := func(tab []float32) []float32 { return tab[pos*hd/2 : (pos+1)*hd/2] }
	if got, want := row(cs)[0], row(plain)[0]; got != want {
		t.Errorf("pair 0 (wavelength 2π, kept): cos %g, want the plain table's %g", got, want)
	}
	if got, want := row(cs)[hd/2-1], row(stretched)[hd/2-1]; got != want {
		t.Errorf("last pair (wavelength > 8192, stretched by 8): cos %g, want %g", got, want)
	}
	if row(cs)[hd/2-1] == row(plain)[hd/2-1] {
		t.Errorf("last pair equals the plain table's: the scaling was not applied")
	}
}
