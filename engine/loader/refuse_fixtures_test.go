package loader

import (
	"strings"
	"testing"

	"rigscope/engine/loader/unsupported"
	"rigscope/internal/fixtures"
)

// TestArchFixturesRefused opens each tiny model of ../shared/models/arch
// that the engine does not implement (the others have golden tests:
// engine/golden_arch_test.go), and checks that it is refused by name: the refusal lists the kinds of feature expected, and the
// message names the field or tensor that asks for each.
func TestArchFixturesRefused(t *testing.T) {
	tests := []struct {
		file  string
		kinds []unsupported.Kind
		want  []string // in the message
	}{
		{"arch/tiny-mixtral-hf", []unsupported.Kind{unsupported.Architecture, unsupported.Experts}, []string{`"MixtralForCausalLM"`, "num_local_experts = 4", "block_sparse_moe"}},
		{"arch/tiny-qwen3moe-hf", []unsupported.Kind{unsupported.Architecture, unsupported.Experts, unsupported.QKNorm}, []string{`"Qwen3MoeForCausalLM"`, "experts"}},
		{"arch/tiny-deepseekv3-hf", []unsupported.Kind{unsupported.Architecture, unsupported.Experts, unsupported.AttentionShape}, []string{`"DeepseekV3ForCausalLM"`, "n_routed_experts = 8", "kv_lora_rank = 32"}},
		{"arch/tiny-mixtral.F16.gguf", []unsupported.Kind{unsupported.Experts}, []string{"llama.expert_count = 4", "blk.0.ffn_gate_exps.weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := fixtures.Path(t, tt.file)
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
