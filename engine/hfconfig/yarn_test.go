package hfconfig

import (
	"encoding/json"
	"strings"
	"testing"

	"rigscope/engine/model"
)

// YaRN as Qwen and DeepSeek configs state it, in transformers 5's
// rope_parameters and transformers 4's top-level rope_scaling.
func TestScalingYaRN(t *testing.T) {
	qwen := model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 32768, BetaFast: 32, BetaSlow: 1, AttnFactor: model.YaRNAttentionFactor(4, 0, 0, 0)}
	fromMax := qwen
	fromMax.OrigContext = 40960
	deepseek := model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 40, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1, MScaleAllDim: 1}
	stated := qwen
	stated.AttnFactor, stated.NoTruncate, stated.BetaFast = 0.8, true, 64
	const q = `"factor": 4.0, "original_max_position_embeddings": 32768`
	for _, tc := range []struct {
		name, json string
		want       model.RopeScaling
		errSub     string
	}{
		{"Qwen3 (transformers 5)", `{"max_position_embeddings": 131072, "rope_parameters": {"rope_type": "yarn", ` + q + `, "rope_theta": 1e6}}`, qwen, ""},
		{"Qwen2.5 (transformers 4)", `{"rope_theta": 1e6, "rope_scaling": {"type": "yarn", ` + q + `}}`, qwen, ""},
		{"both spellings agreeing", `{"rope_scaling": {"type": "yarn", ` + q + `}, "rope_parameters": {"rope_type": "yarn", ` + q + `}}`, qwen, ""},
		{"DeepSeek-V3", `{"max_position_embeddings": 163840, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}}`, deepseek, ""},
		{"original context from max_position_embeddings", `{"max_position_embeddings": 40960, "rope_scaling": {"rope_type": "yarn", "factor": 4}}`, fromMax, ""},
		{"original context at the top level", `{"original_max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4}}`, qwen, ""},
		{"factor from the context ratio", `{"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 32768}}`, qwen, ""},
		{"attention_factor, truncate, beta_fast stated", `{"rope_scaling": {"rope_type": "yarn", ` + q + `, "attention_factor": 0.8, "truncate": false, "beta_fast": 64}}`, stated, ""},
		{"beta 0 means the default", `{"rope_scaling": {"rope_type": "yarn", ` + q + `, "beta_fast": 0, "beta_slow": 0}}`, qwen, ""},
		{"spellings disagreeing", `{"rope_scaling": {"type": "yarn", ` + q + `}, "rope_parameters": {"rope_type": "yarn", "factor": 8, "original_max_position_embeddings": 32768}}`, model.RopeScaling{}, "disagree"},
		{"original contexts disagreeing", `{"original_max_position_embeddings": 4096, "rope_scaling": {"rope_type": "yarn", ` + q + `}}`, model.RopeScaling{}, "original_max_position_embeddings 32768 and the top-level original_max_position_embeddings 4096 disagree"},
		{"no context at all", `{"rope_scaling": {"rope_type": "yarn", "factor": 4}}`, model.RopeScaling{}, "no original_max_position_embeddings"},
		{"factor below 1", `{"rope_scaling": {"rope_type": "yarn", "factor": 0.5, "original_max_position_embeddings": 4096}}`, model.RopeScaling{}, "rope_scaling: yarn RoPE scaling factor 0.5 is not between 1 and 1e6"},
		{"betas swapped", `{"rope_scaling": {"rope_type": "yarn", ` + q + `, "beta_fast": 1, "beta_slow": 32}}`, model.RopeScaling{}, "beta_fast 1 and beta_slow 32"},
		{"attention_factor 0", `{"rope_scaling": {"rope_type": "yarn", ` + q + `, "attention_factor": 0}}`, model.RopeScaling{}, "attention_factor 0 is not above 0"},
		{"original context fractional", `{"rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 4096.5}}`, model.RopeScaling{}, "4096.5 is not a whole number"},
		{"negative mscale", `{"rope_scaling": {"rope_type": "yarn", ` + q + `, "mscale": -1, "mscale_all_dim": 1}}`, model.RopeScaling{}, "must not be negative"},
	} {
		var f Fields
		if err := json.Unmarshal([]byte(tc.json), &f); err != nil {
			t.Fatal(err)
		}
		got, err := f.Scaling()
		switch {
		case tc.errSub != "" && (err == nil || !strings.Contains(err.Error(), tc.errSub)):
			t.Errorf("%s: Scaling() = %v, error %v; want one containing %q", tc.name, got, err, tc.errSub)
		case tc.errSub == "" && (err != nil || got != tc.want):
			t.Errorf("%s: Scaling() = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// rope_parameters keyed by layer type (Gemma 3 in transformers 5): let
// through for a reader that reads it, each entry checked like a flat one.
func TestCheckForPerLayerRope(t *testing.T) {
	impl := Implemented{RopeTypes: ScalingTypes, SlidingWindow: true, PerLayerRope: true, Reads: []string{"layer_types", "query_pre_attn_scalar"}}
	for _, tc := range []struct{ name, json, want string }{
		{"gemma3", `{"layer_types": ["sliding_attention", "full_attention"], "query_pre_attn_scalar": 256, "sliding_window": 512, "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8, "rope_theta": 1e6}, "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}`, ""},
		{"an unknown layer type", `{"rope_parameters": {"chunked_attention": {"rope_theta": 1e4}}}`, "rope_parameters.chunked_attention = a layer type (supported: full_attention, sliding_attention)"},
		{"an entry's type not implemented", `{"rope_parameters": {"full_attention": {"rope_type": "longrope", "factor": 8}}}`, "rope_parameters.full_attention.rope_type = longrope (factor 8)"},
		{"bidirectional", `{"use_bidirectional_attention": true}`, "use_bidirectional_attention = true (supported: causal attention)"},
	} {
		items, err := CheckFor([]byte(tc.json), impl)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var msgs []string
		for _, it := range items {
			msgs = append(msgs, it.String())
		}
		got := strings.Join(msgs, "; ")
		if tc.want == "" && len(items) > 0 || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: CheckFor = %q; want %q", tc.name, got, tc.want)
		}
	}
	per := Fields{RopeParameters: json.RawMessage(`{"full_attention": {"rope_type": "linear", "factor": 8, "rope_theta": 1e6}, "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}`)}
	got, err := per.PerLayerRope()
	if err != nil || got["full_attention"] != (LayerRope{Theta: 1e6, Scaling: model.RopeScaling{Type: model.RopeScaleLinear, Factor: 8}}) || got["sliding_attention"] != (LayerRope{Theta: 1e4}) {
		t.Errorf("PerLayerRope = %+v, %v", got, err)
	}
}
