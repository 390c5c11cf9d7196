package hfconfig

import (
	"encoding/json"
	"strings"
	"testing"

	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
)

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		name       string
		json       string
		kv, hd     int
		eps, theta float32
		ctx        int
		errSub     string // from whichever accessor fails
	}{
		{"defaults", `{"hidden_size": 64, "num_attention_heads": 4}`, 4, 16, 1e-6, 10000, 2048, ""},
		{"explicit", `{"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "rms_norm_eps": 1e-5, "rope_theta": 500000, "max_position_embeddings": 8192}`, 2, 32, 1e-5, 500000, 8192, ""},
		{"no heads", `{"hidden_size": 64}`, 0, 0, 1e-6, 10000, 2048, ""},
		{"rope_parameters", `{"rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}}`, 0, 0, 1e-6, 1e6, 2048, ""},
		{"both spellings agreeing", `{"rope_theta": 1e6, "rope_parameters": {"rope_theta": 1e6}}`, 0, 0, 1e-6, 1e6, 2048, ""},
		{"null", `{"rope_parameters": null, "rope_scaling": null}`, 0, 0, 1e-6, 10000, 2048, ""},
		{"both spellings disagreeing", `{"rope_theta": 1000, "rope_parameters": {"rope_theta": 1e6}}`, 0, 0, 0, 0, 0, "rope_theta 1000 and rope_parameters.rope_theta 1e+06 disagree"},
		{"bad rope_parameters", `{"rope_parameters": [1]}`, 0, 0, 0, 0, 0, "rope_parameters"},
		{"heads not dividing", `{"hidden_size": 66, "num_attention_heads": 4}`, 0, 0, 0, 0, 0, "hidden_size 66 is not divisible by num_attention_heads 4"},
		{"theta 0", `{"rope_theta": 0}`, 0, 0, 0, 0, 0, "rope_theta: RoPE base 0 is not"},
		{"theta 1", `{"rope_parameters": {"rope_theta": 1}}`, 0, 0, 0, 0, 0, "rope_parameters.rope_theta: RoPE base 1 is not"},
		{"theta huge", `{"rope_theta": 1e300}`, 0, 0, 0, 0, 0, "RoPE base 1e+300"},
		{"eps 0", `{"rms_norm_eps": 0}`, 0, 0, 0, 0, 0, "rms_norm_eps: norm epsilon 0 is not"},
		{"eps negative", `{"rms_norm_eps": -1e-6}`, 0, 0, 0, 0, 0, "norm epsilon -1e-06"},
		{"eps 1e39", `{"rms_norm_eps": 1e39}`, 0, 0, 0, 0, 0, "norm epsilon 1e+39"},
		{"eps 1e-50 (0 as a float32)", `{"rms_norm_eps": 1e-50}`, 0, 0, 0, 0, 0, "norm epsilon 1e-50 is not"},
		{"theta 1+1e-9 (1 as a float32)", `{"rope_theta": 1.000000001}`, 0, 0, 0, 0, 0, "RoPE base 1 is not"},
		{"context 0", `{"max_position_embeddings": 0}`, 0, 0, 0, 0, 0, "max_position_embeddings: context length 0"},
		{"context negative", `{"max_position_embeddings": -5}`, 0, 0, 0, 0, 0, "context length -5"},
		{"context huge", `{"max_position_embeddings": 1000000000}`, 0, 0, 0, 0, 0, "context length 1000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Fields
			if err := json.Unmarshal([]byte(tc.json), &f); err != nil {
				t.Fatal(err)
			}
			kv, hd, err1 := f.Shape()
			eps, err2 := f.NormEps(1e-6)
			theta, err3 := f.RopeBase(10000)
			ctx, err4 := f.Context(2048)
			var err error
			for _, e := range []error{err1, err2, err3, err4} {
				if e != nil && err == nil {
					err = e
				}
			}
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error %v; want one containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil || kv != tc.kv || hd != tc.hd || eps != tc.eps || theta != tc.theta || ctx != tc.ctx {
				t.Errorf("got kv %d hd %d eps %g theta %g ctx %d err %v; want %d %d %g %g %d", kv, hd, eps, theta, ctx, err, tc.kv, tc.hd, tc.eps, tc.theta, tc.ctx)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		kind unsupported.Kind // 0: nothing refused
		want string           // in the item
	}{
		{"plain llama", `{"attention_bias": false, "mlp_bias": false, "rope_scaling": null, "sliding_window": null, "hidden_act": "silu", "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}`, 0, ""},
		{"qwen2 window switched off", `{"sliding_window": 131072, "use_sliding_window": false, "layer_types": ["full_attention"]}`, 0, ""},
		{"scaling factor 1", `{"rope_scaling": {"factor": 1.0}}`, 0, ""},
		{"llama3 in rope_scaling (transformers 4)", `{"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}`, unsupported.RopeScaling, "rope_scaling.rope_type = llama3 (factor 8)"},
		{"linear, old key", `{"rope_scaling": {"type": "linear", "factor": 2}}`, unsupported.RopeScaling, "rope_scaling.type = linear (factor 2)"},
		{"yarn in rope_parameters (transformers 5)", `{"rope_parameters": {"rope_type": "yarn", "factor": 4, "rope_theta": 1e6}}`, unsupported.RopeScaling, "rope_parameters.rope_type = yarn (factor 4)"},
		{"type not a string", `{"rope_scaling": {"rope_type": 3}}`, unsupported.RopeScaling, "rope_scaling.rope_type = 3"},
		{"factor without a type", `{"rope_scaling": {"factor": 4}}`, unsupported.RopeScaling, "rope_scaling.factor = 4"},
		{"per layer type", `{"rope_parameters": {"full_attention": {"rope_theta": 1e6}, "sliding_attention": {"rope_theta": 1e4}}}`, unsupported.RopeScaling, "one per layer type (full_attention, sliding_attention)"},
		{"attention_bias", `{"attention_bias": true}`, unsupported.Bias, "attention_bias = true"},
		{"mlp_bias", `{"mlp_bias": true}`, unsupported.Bias, "mlp_bias = true"},
		{"sliding_window", `{"sliding_window": 4096}`, unsupported.SlidingWindow, "sliding_window = 4096"},
		{"layer_types", `{"layer_types": ["sliding_attention", "full_attention"]}`, unsupported.SlidingWindow, "layer_types"},
		{"experts", `{"num_local_experts": 8}`, unsupported.Experts, "num_local_experts = 8"},
		{"routed experts", `{"n_routed_experts": 256}`, unsupported.Experts, "n_routed_experts = 256"},
		{"quantization", `{"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}`, unsupported.Quantization, "quantization_config = fp8"},
		{"MLA", `{"kv_lora_rank": 512}`, unsupported.AttentionShape, "kv_lora_rank = 512"},
		{"partial rotary", `{"partial_rotary_factor": 0.5}`, unsupported.AttentionShape, "partial_rotary_factor = 0.5"},
		{"gelu", `{"hidden_act": "gelu"}`, unsupported.Activation, `hidden_act = "gelu"`},
		{"qk norm", `{"use_qk_norm": true}`, unsupported.QKNorm, "use_qk_norm = true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := Check([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if tc.kind == 0 {
				if len(items) != 0 {
					t.Errorf("Check refused %v", items)
				}
				return
			}
			if len(items) != 1 || items[0].Kind != tc.kind || !strings.Contains(items[0].String(), tc.want) {
				t.Errorf("Check = %v; want one %v item containing %q", items, tc.kind, tc.want)
			}
		})
	}
	if _, err := Check([]byte(`{"rope_scaling": "x"}`)); err == nil || !strings.Contains(err.Error(), "rope_scaling") {
		t.Errorf("Check(rope_scaling string) error = %v, want one naming rope_scaling", err)
	}
}

// TestCheckFor: what a reader implements is not refused, and the rest
// still is, naming what it reads instead.
func TestCheckFor(t *testing.T) {
	impl := Implemented{RopeTypes: ScalingTypes, SlidingWindow: true}
	for _, tc := range []struct {
		name, json string
		want       string // "" = nothing refused
	}{
		{"llama3 (transformers 5)", `{"rope_parameters": {"rope_type": "llama3", "factor": 8, "rope_theta": 5e5}}`, ""},
		{"linear (transformers 4)", `{"rope_scaling": {"type": "linear", "factor": 2}}`, ""},
		{"mistral window", `{"sliding_window": 48}`, ""},
		{"dynamic", `{"rope_scaling": {"rope_type": "dynamic", "factor": 4}}`, "rope_scaling.rope_type = dynamic (factor 4) (supported: plain RoPE or linear, llama3, yarn)"},
		{"window per layer type", `{"sliding_window": 48, "layer_types": ["sliding_attention", "full_attention"]}`, "layer_types"},
		{"qwen2 window switched on", `{"sliding_window": 48, "use_sliding_window": true}`, "use_sliding_window = true"},
	} {
		items, err := CheckFor([]byte(tc.json), impl)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		switch {
		case tc.want == "" && len(items) > 0:
			t.Errorf("%s: CheckFor refused %v", tc.name, items)
		case tc.want != "" && (len(items) != 1 || !strings.Contains(items[0].String(), tc.want)):
			t.Errorf("%s: CheckFor = %v; want one item containing %q", tc.name, items, tc.want)
		}
	}
	// Experts and latent attention: read by a reader that implements them,
	// refused by one that does not.
	moe := `{"num_local_experts": 8, "n_shared_experts": 1, "kv_lora_rank": 512, "q_lora_rank": 1536}`
	if items, _ := CheckFor([]byte(moe), Implemented{Experts: true, LatentAttention: true}); len(items) != 0 {
		t.Errorf("CheckFor(experts, latent attention implemented) refused %v", items)
	}
	if items, _ := CheckFor([]byte(moe), Implemented{Experts: true}); len(items) != 2 || items[0].Kind != unsupported.AttentionShape {
		t.Errorf("CheckFor(experts implemented) = %v; want q_lora_rank and kv_lora_rank refused", items)
	}
	// Check (a reader of plain Llama, as the EAGLE-3 head) still refuses them.
	if items, _ := Check([]byte(`{"rope_parameters": {"rope_type": "llama3", "factor": 8}, "sliding_window": 48}`)); len(items) != 2 {
		t.Errorf("Check = %v; want the window and the scaling refused", items)
	}
}

// TestScaling: RoPE scaling in either spelling, and its bad values.
func TestScaling(t *testing.T) {
	llama3 := model.RopeScaling{Type: model.RopeScaleLlama3, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8192}
	const l3 = `{"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 8192}`
	for _, tc := range []struct {
		name, json string
		want       model.RopeScaling
		errSub     string
	}{
		{"none", `{}`, model.RopeScaling{}, ""},
		{"default", `{"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}`, model.RopeScaling{}, ""},
		{"llama3 (transformers 5)", `{"rope_parameters": ` + l3 + `}`, llama3, ""},
		{"llama3 (transformers 4)", `{"rope_scaling": ` + l3 + `}`, llama3, ""},
		{"both agreeing", `{"rope_scaling": ` + l3 + `, "rope_parameters": ` + l3 + `}`, llama3, ""},
		{"linear, old key", `{"rope_scaling": {"type": "linear", "factor": 2}}`, model.RopeScaling{Type: model.RopeScaleLinear, Factor: 2}, ""},
		{"dynamic is CheckFor's to refuse", `{"rope_scaling": {"rope_type": "dynamic", "factor": 4}}`, model.RopeScaling{}, ""},
		{"both disagreeing", `{"rope_scaling": {"type": "linear", "factor": 2}, "rope_parameters": ` + l3 + `}`, model.RopeScaling{}, "rope_parameters (llama3 (factor 8"},
		{"linear without factor", `{"rope_scaling": {"type": "linear"}}`, model.RopeScaling{}, "rope_scaling: linear RoPE scaling without [factor]"},
		{"linear factor 0.5", `{"rope_scaling": {"type": "linear", "factor": 0.5}}`, model.RopeScaling{}, "rope_scaling: RoPE scaling factor 0.5 is not between 1 and 1e6"},
		{"llama3 original context as a float", `{"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192.0}}`, llama3, ""},
		{"llama3 original context 0.5", `{"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 0.5}}`, model.RopeScaling{}, "original_max_position_embeddings 0.5 is not a whole number"},
		{"llama3 factor a string", `{"rope_scaling": {"rope_type": "llama3", "factor": "8"}}`, model.RopeScaling{}, "rope_scaling: json: cannot unmarshal string"},
		{"llama3 original context 0", `{"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 0}}`, model.RopeScaling{}, "original_max_position_embeddings 0"},
	} {
		var f Fields
		if err := json.Unmarshal([]byte(tc.json), &f); err != nil {
			t.Fatal(err)
		}
		got, err := f.Scaling()
		switch {
		case tc.errSub != "" && (err == nil || !strings.Contains(err.Error(), tc.errSub)):
			t.Errorf("%s: Scaling() error %v; want one containing %q", tc.name, err, tc.errSub)
		case tc.errSub == "" && (err != nil || got != tc.want):
			t.Errorf("%s: Scaling() = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// FuzzFields: any config.json parses into Fields and is checked without a panic.
func FuzzFields(f *testing.F) {
	f.Add([]byte(`{"hidden_size": 64, "num_attention_heads": 4, "rope_parameters": {"rope_theta": 1e6}}`))
	f.Add([]byte(`{"rope_scaling": {"type": "linear"}, "num_attention_heads": 0}`))
	f.Add([]byte(`{"num_attention_heads": -3, "hidden_size": 7, "head_dim": null}`))
	f.Add([]byte(`{"rope_theta": 0, "rms_norm_eps": 1e39, "max_position_embeddings": 0}`))
	f.Add([]byte(`{"rope_parameters": {"full_attention": {"rope_theta": 1e6}}, "layer_types": [1, null], "sliding_window": 48}`))
	f.Add([]byte(`{"quantization_config": {"quant_method": "gptq"}, "num_local_experts": 8, "rope_scaling": {"rope_type": "llama3", "factor": 8}}`))
	f.Add([]byte(`{"max_position_embeddings": 163840, "rope_scaling": {"type": "yarn", "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1}}`))
	f.Add([]byte(`{"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 64, "truncate": false}, "sliding_attention": {"rope_theta": 1e4}}}`))
	f.Add([]byte(`{"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128.5]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		Check(b)
		CheckFor(b, Implemented{RopeTypes: ScalingTypes, PerLayerRope: true, SlidingWindow: true})
		items, cerr := CheckFor(b, Implemented{FP8: true})
		if q, err := ReadFP8(b); err == nil && cerr == nil && q != nil && q.BlockRows != 0 && (q.BlockRows != 128 || q.BlockCols != 128) {
			t.Fatalf("ReadFP8 accepted blocks %dx%d (items %v)", q.BlockRows, q.BlockCols, items)
		}
		var fl Fields
		if json.Unmarshal(b, &fl) != nil {
			return
		}
		fl.Shape()
		fl.NormEps(1e-5)
		fl.RopeBase(10000)
		fl.Context(2048)
		if s, err := fl.Scaling(); err == nil && s.Check() != nil {
			t.Fatalf("Scaling() accepted %v: %v", s, s.Check())
		}
		if per, err := fl.PerLayerRope(); err == nil {
			for k, lr := range per {
				if lr.Scaling.Check() != nil {
					t.Fatalf("PerLayerRope()[%s] accepted %v", k, lr.Scaling)
				}
			}
		}
	})
}
