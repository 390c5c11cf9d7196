package unsupported

import (
	"fmt"
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	if Refuse("m.gguf", nil) != nil {
		t.Fatal("Refuse with no items is not nil")
	}
	items := append([]Item{{Kind: Architecture, Field: "general.architecture", Value: `"qwen2"`, Supported: "llama"}},
		Tensors([]string{"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.1.attn_q.bias", "blk.1.attn_k.bias", "blk.0.post_norm.weight", "rope_freqs.weight"})...)
	err := fmt.Errorf("loader: %w", Refuse("m.gguf", items))
	want := `loader: m.gguf: not implemented by this engine, refusing the model rather than running it wrong: ` +
		`architecture: general.architecture = "qwen2" (supported: llama); ` +
		`biases: 4 tensors (blk.0.attn_q.bias, blk.0.attn_k.bias, blk.1.attn_q.bias, ... 1 more) (supported: projections without biases); ` +
		`tensors nothing reads: 1 tensor (blk.0.post_norm.weight) (supported: only the tensors of the architecture); ` +
		`RoPE scaling: 1 tensor (rope_freqs.weight) (supported: plain RoPE from one base frequency)`
	if err.Error() != want {
		t.Errorf("message\n%s\nwant\n%s", err, want)
	}
	e, ok := As(err)
	if !ok || !e.Has(Bias) || !e.Has(RopeScaling) || e.Has(Experts) || len(e.Items) != 4 {
		t.Errorf("As(%v) = %+v, %v", err, e, ok)
	}
	if _, ok := As(fmt.Errorf("other")); ok {
		t.Error("As(a plain error) = true")
	}
	if s := (&Error{Items: items[:1]}).Error(); strings.HasPrefix(s, ":") || !strings.HasPrefix(s, "not implemented") {
		t.Errorf("Error without a file = %q", s)
	}
}

func TestTensorKinds(t *testing.T) {
	for name, want := range map[string]Kind{
		"model.layers.0.block_sparse_moe.experts.3.w1.weight": Experts,
		"blk.2.ffn_gate_exps.weight":                          Experts,
		"model.layers.1.mlp.gate.e_score_correction_bias":     Experts,
		"model.layers.0.self_attn.q_proj.weight_scale_inv":    Quantization,
		"model.layers.0.self_attn.kv_b_proj.weight":           AttentionShape,
		"blk.0.attn_k_norm.weight":                            QKNorm,
		"model.layers.0.mlp.down_proj.bias":                   Bias,
		"model.layers.0.self_attn.rotary_emb.inv_freq":        RopeScaling,
		"model.layers.0.post_feedforward_layernorm.weight":    UnreadTensor,
	} {
		if got := Tensors([]string{name}); len(got) != 1 || got[0].Kind != want {
			t.Errorf("Tensors(%q) = %+v, want kind %v", name, got, want)
		}
	}
}
