package loader

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/engine/loader/unsupported"
	"rigscope/internal/fixtures"
	"rigscope/internal/fixtures/ggufedit"
)

// relabelHF is a copy of the tiny model folder dir of ../shared/models
// whose config.json names architecture instead (the other files are
// links to the fixture's).
func relabelHF(t *testing.T, dir, architecture string) string {
	t.Helper()
	return editHF(t, dir, func(cfg map[string]any) { cfg["architectures"] = []string{architecture} })
}

// editHF is a copy of the tiny model folder dir of ../shared/models with
// edit applied to its config.json (the other files are links to the
// fixture's).
func editHF(t *testing.T, dir string, edit func(cfg map[string]any)) string {
	t.Helper()
	src := fixtures.Path(t, dir)
	out := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "config.json" {
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(out, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchFixturesRefused opens each tiny model of ../shared/models/arch
// relabelled as a neighbouring architecture the engine does not implement
// (every fixture as written has a golden test: engine/golden_arch_test.go),
// and checks that it is refused by name: the refusal lists the kinds of
// feature expected, and the message names the field or tensor that asks
// for each.
func TestArchFixturesRefused(t *testing.T) {
	tests := []struct {
		name  string
		open  func(t *testing.T) string
		kinds []unsupported.Kind
		want  []string // in the message
	}{
		{"tiny-gemma3-hf as Gemma2ForCausalLM", func(t *testing.T) string { return relabelHF(t, "arch/tiny-gemma3-hf", "Gemma2ForCausalLM") },
			[]unsupported.Kind{unsupported.Architecture, unsupported.SlidingWindow, unsupported.AttentionShape, unsupported.Activation, unsupported.RopeScaling, unsupported.QKNorm, unsupported.UnreadTensor},
			[]string{`"Gemma2ForCausalLM"`, "sliding_window = 48", "query_pre_attn_scalar", "hidden_activation", "rope_parameters = one per layer type (full_attention, sliding_attention)", "post_feedforward_layernorm"}},
		{"tiny-mixtral-hf as PhimoeForCausalLM", func(t *testing.T) string { return relabelHF(t, "arch/tiny-mixtral-hf", "PhimoeForCausalLM") },
			[]unsupported.Kind{unsupported.Architecture, unsupported.Experts}, []string{`"PhimoeForCausalLM"`, "num_local_experts = 4", "block_sparse_moe"}},
		{"tiny-qwen3moe-hf as Qwen2MoeForCausalLM", func(t *testing.T) string { return relabelHF(t, "arch/tiny-qwen3moe-hf", "Qwen2MoeForCausalLM") },
			[]unsupported.Kind{unsupported.Architecture, unsupported.Experts, unsupported.QKNorm}, []string{`"Qwen2MoeForCausalLM"`, "experts"}},
		{"tiny-deepseekv3-hf as DeepseekV2ForCausalLM", func(t *testing.T) string { return relabelHF(t, "arch/tiny-deepseekv3-hf", "DeepseekV2ForCausalLM") },
			[]unsupported.Kind{unsupported.Architecture, unsupported.Experts, unsupported.AttentionShape}, []string{`"DeepseekV2ForCausalLM"`, "n_routed_experts = 8", "kv_lora_rank = 32"}},
		{"tiny-gemma3.F16.gguf as gemma2", func(t *testing.T) string { return ggufedit.Relabel(t, "arch/tiny-gemma3.F16.gguf", "gemma3", "gemma2") },
			[]unsupported.Kind{unsupported.Architecture, unsupported.SlidingWindow, unsupported.QKNorm, unsupported.UnreadTensor, unsupported.UnreadMetadata},
			[]string{`general.architecture = "gemma2"`, "gemma2.attention.sliding_window = 48", "blk.0.post_attention_norm.weight", "gemma2.rope.freq_base_swa"}},
		{"tiny-mixtral.F16.gguf as qwen2moe", func(t *testing.T) string {
			return ggufedit.Relabel(t, "arch/tiny-mixtral.F16.gguf", "llama", "qwen2moe")
		},
			[]unsupported.Kind{unsupported.Architecture, unsupported.Experts}, []string{`general.architecture = "qwen2moe"`, "qwen2moe.expert_count = 4", "blk.0.ffn_gate_exps.weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.open(t)
			src, err := Open(path, Options{})
			if err == nil {
				src.Close()
				t.Fatalf("Open(%q) succeeded; want a refusal", path)
			}
			t.Logf("%v", err)
			ref, ok := unsupported.As(err)
			if !ok {
				t.Fatalf("Open(%q) error %q is not an *unsupported.Error", path, err)
			}
			for _, k := range tt.kinds {
				if !ref.Has(k) {
					t.Errorf("refusal lacks %v: %v", k, err)
				}
			}
			for _, w := range append(tt.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q: %v", w, err)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("message is more than one line: %q", err)
			}
		})
	}
}

// TestLatentAttentionYaRN: DeepSeek-V3's YaRN rope_scaling (mscale =
// mscale_all_dim) loads with latent attention, its softmax scale times
// mscale(factor, mscale_all_dim)² (Config.MLAScale); with mscale other
// than mscale_all_dim (a YaRN attention factor other than 1, which
// transformers applies to the rope dims' cos and sin only) it is refused
// by name.
func TestLatentAttentionYaRN(t *testing.T) {
	yarn := func(mscale, all float64) func(cfg map[string]any) {
		return func(cfg map[string]any) {
			cfg["rope_scaling"] = map[string]any{"type": "yarn", "factor": 40.0, "mscale": mscale, "mscale_all_dim": all,
				"original_max_position_embeddings": 256.0, "beta_fast": 32.0, "beta_slow": 1.0}
		}
	}
	dir := editHF(t, "arch/tiny-deepseekv3-hf", yarn(1, 1))
	src, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	cfg := src.Config()
	src.Close()
	m := 0.1*math.Log(40) + 1
	if want := m * m / math.Sqrt(float64(cfg.MLA.QKDim())); math.Abs(float64(cfg.MLAScale())-want) > 1e-7*want {
		t.Errorf("MLAScale %g, want %g", cfg.MLAScale(), want)
	}
	dir = editHF(t, "arch/tiny-deepseekv3-hf", yarn(1, 0.707))
	src, err = Open(dir, Options{})
	if err == nil {
		src.Close()
		t.Fatalf("Open(%q) with mscale 1, mscale_all_dim 0.707 succeeded; want a refusal", dir)
	}
	for _, w := range []string{"latent attention", "RoPE scaling yarn", "attention factor other than 1", "not implemented"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message lacks %q: %v", w, err)
		}
	}
}
