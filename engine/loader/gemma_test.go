package loader

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/engine/hfconfig"
	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/internal/fixtures"
	"rigscope/internal/fixtures/ggufedit"
)

// gemmaHFDir is tiny-gemma3-hf with its config.json edited: the weights
// and tokenizer are links to the fixture's.
func gemmaHFDir(t *testing.T, edit func(map[string]any)) string {
	t.Helper()
	src := fixtures.Path(t, "arch/tiny-gemma3-hf")
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	dir := t.TempDir()
	for _, n := range []string{"model.safetensors", "tokenizer.json", "tokenizer.model", "tokenizer_config.json", "generation_config.json"} {
		if err := os.Symlink(filepath.Join(src, n), filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "config.json", b)
	return dir
}

// transformers4 rewrites a transformers 5 Gemma 3 config.json as
// transformers 4 wrote it: rope_theta, rope_local_base_freq and
// sliding_window_pattern at the top level, no rope_parameters or
// layer_types.
func transformers4(c map[string]any) {
	delete(c, "rope_parameters")
	delete(c, "layer_types")
	delete(c, "_sliding_window_pattern")
	c["rope_theta"], c["rope_local_base_freq"], c["sliding_window_pattern"] = 1e6, 1e4, 4
}

func openConfig(t *testing.T, path string) (model.Config, error) {
	t.Helper()
	src, err := Open(path, Options{})
	if err != nil {
		return model.Config{}, err
	}
	defer src.Close()
	return src.Config(), nil
}

// Gemma 3's config.json in both spellings reads to the same config:
// local layers 0-2 (window 48, RoPE base 1e4), global layer 3 (1e6),
// query_pre_attn_scalar 32, tied.
func TestGemmaHFConfig(t *testing.T) {
	want := model.Gemma3{On: true, QueryScale: 32, Layers: "LLLG", LocalRopeTheta: 1e4}
	v5, err := openConfig(t, fixtures.Path(t, "arch/tiny-gemma3-hf"))
	if err != nil {
		t.Fatal(err)
	}
	if v5.Gemma != want || v5.RopeTheta != 1e6 || v5.SlidingWindow != 48 || !v5.TiedEmbed || !v5.QKNorm || v5.RopeLayout != model.RopeHalf {
		t.Errorf("tiny-gemma3-hf: %+v", v5)
	}
	v4, err := openConfig(t, gemmaHFDir(t, transformers4))
	if err != nil {
		t.Fatal(err)
	}
	if v4 != v5 {
		t.Errorf("transformers 4 spelling: %+v\nwant the transformers 5 one: %+v", v4, v5)
	}
	linear, err := openConfig(t, gemmaHFDir(t, func(c map[string]any) {
		transformers4(c)
		c["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 8}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if linear.RopeScaling != (model.RopeScaling{Type: model.RopeScaleLinear, Factor: 8}) || linear.Gemma.LocalRopeScaling.Type != model.RopeScaleNone {
		t.Errorf("transformers 4 rope_scaling: global %v, local %v; want linear 8 on global layers only", linear.RopeScaling, linear.Gemma.LocalRopeScaling)
	}
	yarn, err := openConfig(t, gemmaHFDir(t, func(c map[string]any) {
		c["rope_parameters"].(map[string]any)["full_attention"] = map[string]any{"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 256, "rope_theta": 1e6}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if yarn.RopeScaling.Type != model.RopeScaleYaRN || yarn.RopeScaling.OrigContext != 256 || yarn.Gemma.LocalRopeScaling.Type != model.RopeScaleNone {
		t.Errorf("per-layer yarn: global %v, local %v", yarn.RopeScaling, yarn.Gemma.LocalRopeScaling)
	}
}

// Contradictory or unsupported Gemma 3 fields: a clear message naming
// the field.
func TestGemmaHFBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
		kind unsupported.Kind // a refusal of this kind; 0: a plain error
	}{
		{"pattern 0", func(c map[string]any) { transformers4(c); c["sliding_window_pattern"] = 0 }, "sliding_window_pattern: sliding window pattern 0", 0},
		{"hidden pattern 0", func(c map[string]any) { delete(c, "layer_types"); c["_sliding_window_pattern"] = 0 }, "_sliding_window_pattern: sliding window pattern 0", 0},
		{"layer_types too short", func(c map[string]any) { c["layer_types"] = []string{"sliding_attention", "full_attention"} }, "layer_types lists 2 layers, num_hidden_layers is 4", 0},
		{"layer type unknown", func(c map[string]any) {
			c["layer_types"] = []string{"sliding_attention", "chunked_attention", "sliding_attention", "full_attention"}
		}, `layer_types[1] = "chunked_attention"`, 0},
		{"heads not dividing kv heads", func(c map[string]any) { c["num_attention_heads"] = 3 }, "3 num_attention_heads are not divisible by 2 num_key_value_heads", 0},
		{"heads not dividing hidden", func(c map[string]any) {
			delete(c, "head_dim")
			c["num_attention_heads"] = 3
			c["num_key_value_heads"] = 3
		}, "hidden_size 128 is not divisible by num_attention_heads 3", 0},
		{"window 0", func(c map[string]any) { c["sliding_window"] = 0 }, "sliding_window 0 is not a positive number", 0},
		{"window null", func(c map[string]any) { c["sliding_window"] = nil }, "sliding_window is null", 0},
		{"query scale null", func(c map[string]any) { c["query_pre_attn_scalar"] = nil }, "query_pre_attn_scalar is null", 0},
		{"query scale 0", func(c map[string]any) { c["query_pre_attn_scalar"] = 0 }, "query_pre_attn_scalar 0", 0},
		{"soft-cap 0", func(c map[string]any) { c["final_logit_softcapping"] = 0 }, "final_logit_softcapping 0 is not above 0", 0},
		{"RoPE stated twice", func(c map[string]any) { c["rope_theta"] = 1e6 }, "state the RoPE once", 0},
		{"exact GELU", func(c map[string]any) { c["hidden_activation"] = "gelu" }, `hidden_activation = "gelu" (supported: gelu_pytorch_tanh (Gemma 3))`, unsupported.Activation},
		{"bidirectional", func(c map[string]any) { c["use_bidirectional_attention"] = true }, "use_bidirectional_attention = true", unsupported.AttentionShape},
		{"attention soft-cap", func(c map[string]any) { c["attn_logit_softcapping"] = 50 }, "attn_logit_softcapping = 50", unsupported.AttentionShape},
		{"local layer type scaled by an unknown type", func(c map[string]any) {
			c["rope_parameters"].(map[string]any)["sliding_attention"] = map[string]any{"rope_type": "longrope", "rope_theta": 1e4}
		}, "rope_parameters.sliding_attention.rope_type = longrope", unsupported.RopeScaling},
	} {
		dir := gemmaHFDir(t, tc.edit)
		_, err := openConfig(t, dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v; want one line containing %q", tc.name, err, tc.want)
			continue
		}
		if ref, ok := unsupported.As(err); tc.kind != 0 && (!ok || !ref.Has(tc.kind)) {
			t.Errorf("%s: %v; want a refusal of kind %v", tc.name, err, tc.kind)
		}
	}
}

// gemmaGGUF is tiny-gemma3.F16.gguf with its metadata edited.
func gemmaGGUF(t *testing.T, edit func([]gguf.KV) []gguf.KV) string {
	t.Helper()
	return ggufedit.Copy(t, "arch/tiny-gemma3.F16.gguf", edit)
}

func setKV(key string, v any) func([]gguf.KV) []gguf.KV {
	return func(kv []gguf.KV) []gguf.KV {
		for i, e := range kv {
			if e.Key == key {
				if v == nil {
					return append(kv[:i], kv[i+1:]...)
				}
				kv[i].Value = v
				return kv
			}
		}
		return append(kv, gguf.KV{Key: key, Value: v})
	}
}

// A gemma3 GGUF's layer types: sliding_window_pattern as one bool per
// layer or a period, llama.cpp's period 6 without it, all global without
// a window; the soft-cap when stated; bad patterns named.
func TestGemmaGGUF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func([]gguf.KV) []gguf.KV
		layers string
		window int
		want   string // error
	}{
		{"as written", setKV("general.name", "x"), "LLLL", 48, ""},
		{"bool per layer", setKV("gemma3.attention.sliding_window_pattern", []bool{true, true, true, false}), "LLLG", 48, ""},
		{"period 2", setKV("gemma3.attention.sliding_window_pattern", uint32(2)), "LGLG", 48, ""},
		{"no window", setKV("gemma3.attention.sliding_window", nil), "GGGG", 0, ""},
		{"period 0", setKV("gemma3.attention.sliding_window_pattern", uint32(0)), "", 0, "gemma3.attention.sliding_window_pattern: sliding window pattern 0"},
		{"3 bools for 4 layers", setKV("gemma3.attention.sliding_window_pattern", []bool{true, true, false}), "", 0, "lists 3 layers, gemma3.block_count is 4"},
		{"pattern a string", setKV("gemma3.attention.sliding_window_pattern", "LLLG"), "", 0, "is neither one bool per layer nor a period"},
		{"soft-cap negative", setKV("gemma3.final_logit_softcapping", float32(-1)), "", 0, "gemma3.final_logit_softcapping: -1 is not a number between 0"},
		{"local base 0", setKV("gemma3.rope.freq_base_swa", float32(0)), "", 0, "gemma3.rope.freq_base_swa: RoPE base 0"},
	} {
		c, err := openConfig(t, gemmaGGUF(t, tc.edit))
		switch {
		case tc.want != "":
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v; want one containing %q", tc.name, err, tc.want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case c.Gemma.Layers != tc.layers || c.SlidingWindow != tc.window || c.Gemma.QueryScale != 32 || c.Gemma.LocalRopeTheta != 1e4 || c.RopeTheta != 1e6:
			t.Errorf("%s: layers %q, window %d, query scale %g, RoPE bases %g/%g; want %q, %d, 32, 1e4/1e6", tc.name, c.Gemma.Layers, c.SlidingWindow, c.Gemma.QueryScale, c.Gemma.LocalRopeTheta, c.RopeTheta, tc.layers, tc.window)
		}
	}
	c, err := openConfig(t, gemmaGGUF(t, setKV("gemma3.final_logit_softcapping", float32(30))))
	if err != nil || c.Gemma.FinalSoftcap != 30 {
		t.Errorf("soft-cap 30: %v, %v", c.Gemma.FinalSoftcap, err)
	}
}

// GGUF yarn: factor, original_context_length (else the trained context),
// betas, yarn_attn_factor times 0.1·ln(factor)+1; DeepSeek's
// yarn_log_multiplier and a partial ramp refused by name.
func TestGGUFYaRN(t *testing.T) {
	yarn := func(extra ...gguf.KV) []gguf.KV {
		kv := append(withKV("llama.rope.scaling.type", "yarn"), gguf.KV{Key: "llama.rope.scaling.factor", Value: float32(4)})
		return append(kv, extra...)
	}
	orig := gguf.KV{Key: "llama.rope.scaling.original_context_length", Value: uint32(8)}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		kv   []gguf.KV
		want model.RopeScaling
		err  string
	}{
		{"yarn 4", yarn(orig), model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 8, BetaFast: 32, BetaSlow: 1, AttnFactor: model.YaRNAttentionFactor(4, 0, 0, 0)}, ""},
		{"original context from context_length", yarn(), model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 16, BetaFast: 32, BetaSlow: 1, AttnFactor: model.YaRNAttentionFactor(4, 0, 0, 0)}, ""},
		{"betas and attn factor", yarn(orig, gguf.KV{Key: "llama.rope.scaling.yarn_beta_fast", Value: float32(64)}, gguf.KV{Key: "llama.rope.scaling.yarn_beta_slow", Value: float32(2)}, gguf.KV{Key: "llama.rope.scaling.yarn_attn_factor", Value: float32(0.5)}),
			model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 8, BetaFast: 64, BetaSlow: 2, AttnFactor: 0.5 * model.YaRNAttentionFactor(4, 0, 0, 0)}, ""},
		{"no factor", withKV("llama.rope.scaling.type", "yarn"), model.RopeScaling{}, "llama.rope.scaling.type yarn without a llama.rope.scaling.factor"},
		{"betas swapped", yarn(orig, gguf.KV{Key: "llama.rope.scaling.yarn_beta_fast", Value: float32(1)}, gguf.KV{Key: "llama.rope.scaling.yarn_beta_slow", Value: float32(32)}), model.RopeScaling{}, "llama.rope.scaling: yarn RoPE scaling beta_fast 1 and beta_slow 32"},
		{"log multiplier", yarn(orig, gguf.KV{Key: "llama.rope.scaling.yarn_log_multiplier", Value: float32(0.1)}), model.RopeScaling{}, "llama.rope.scaling.yarn_log_multiplier = 0.1"},
		{"partial ramp", yarn(orig, gguf.KV{Key: "llama.rope.scaling.yarn_ext_factor", Value: float32(0.5)}), model.RopeScaling{}, "llama.rope.scaling.yarn_ext_factor = 0.5"},
	} {
		path := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf", ggufBytes(t, tc.kv, tinyTensors(tinyCfg)))
		c, err := openConfig(t, path)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v; want one containing %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case c.RopeScaling != tc.want:
			t.Errorf("%s: %v; want %v", tc.name, c.RopeScaling, tc.want)
		}
	}
}

// FuzzHFGemmaConfig: any config.json read as Gemma 3 is refused or gives
// a config that validates, never a panic.
func FuzzHFGemmaConfig(f *testing.F) {
	f.Add([]byte(`{"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 352, "vocab_size": 4096, "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"], "sliding_window": 48, "query_pre_attn_scalar": 32, "rope_parameters": {"full_attention": {"rope_theta": 1e6}, "sliding_attention": {"rope_theta": 1e4}}}`))
	f.Add([]byte(`{"hidden_size": 64, "num_hidden_layers": 7, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 9, "sliding_window_pattern": 0, "rope_local_base_freq": 1, "rope_scaling": {"rope_type": "yarn", "factor": 4}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var hc hfConfig
		if json.Unmarshal(raw, &hc) != nil {
			return
		}
		arch, _ := findHFArch([]string{"Gemma3ForCausalLM"})
		cfg, err := hc.config("config.json", arch)
		if err != nil {
			return
		}
		cfg, _, err = hfGemmaConfig(raw, &hc, cfg)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil || !cfg.Gemma.On {
			t.Fatalf("accepted %+v: %v", cfg, err)
		}
	})
}

// google/gemma-3-1b-it's config.json (transformers 4.50) reads as
// Gemma 3 1B: 26 layers, every 6th global, window 512, head dim 256.
func TestGemma3_1BConfig(t *testing.T) {
	raw := []byte(`{"architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "attn_logit_softcapping": null,
	"bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
	"hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02, "intermediate_size": 6912,
	"max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26,
	"num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
	"rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
	"transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144}`)
	arch, _ := findHFArch([]string{"Gemma3ForCausalLM"})
	items, err := hfconfig.CheckFor(raw, arch.implemented())
	if err != nil || len(items) > 0 {
		t.Fatalf("CheckFor: %v, %v", items, err)
	}
	var hc hfConfig
	if err := json.Unmarshal(raw, &hc); err != nil {
		t.Fatal(err)
	}
	cfg, err := hc.config("config.json", arch)
	if err != nil {
		t.Fatal(err)
	}
	cfg, items, err = hfGemmaConfig(raw, &hc, cfg)
	if err != nil || len(items) > 0 {
		t.Fatalf("hfGemmaConfig: %v, %v", items, err)
	}
	want := model.Config{Arch: "gemma3", Dim: 1152, Layers: 26, Heads: 4, KVHeads: 1, HeadDim: 256, FFN: 6912, Vocab: 262144,
		MaxSeq: 32768, NormEps: 1e-6, RopeTheta: 1e6, RopeLayout: model.RopeHalf, TiedEmbed: true, QKNorm: true, SlidingWindow: 512,
		Gemma: model.Gemma3{On: true, QueryScale: 256, Layers: "LLLLLGLLLLLGLLLLLGLLLLLGLL", LocalRopeTheta: 1e4}}
	if cfg != want {
		t.Errorf("config %+v\nwant %+v", cfg, want)
	}
}

// tiny-gemma3's two files hold the same weights as the model reads them:
// every norm as 1 + w (the HF reader adds the 1, the GGUF holds it), the
// matrices equal up to f16's subnormals, Q/K rows in the same
// rotate-half layout.
func TestGemmaCrossFormatWeights(t *testing.T) {
	hf, err := Open(fixtures.Path(t, "arch/tiny-gemma3-hf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	gg, err := Open(fixtures.Path(t, "arch/tiny-gemma3.F16.gguf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gg.Close()
	norms := 0
	for name := range ExpectedShapes(hf.Config()) {
		a, err := hf.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := gg.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		va, vb := floats(t, a), floats(t, b)
		tol := float32(1e-6)   // norms: 1 + w in float32 both ways
		if len(a.Shape) == 2 { // f16 subnormals round bf16's tiny values
			for _, x := range va {
				tol = max(tol, 1e-3*float32(math.Abs(float64(x))))
			}
		}
		if err := closeTo(va, vb, tol); err != nil {
			t.Errorf("tensor %q: HF vs GGUF: %v", name, err)
		}
		if len(a.Shape) == 1 {
			norms++
			if mean := meanOf(va); mean < 0.5 {
				t.Errorf("norm %q: mean %g; want the multiplier 1 + w (about 1)", name, mean)
			}
		}
	}
	if want := 1 + 6*4; norms != want {
		t.Errorf("%d norm vectors, want %d (output norm, and 6 per layer)", norms, want)
	}
}

func meanOf(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}
