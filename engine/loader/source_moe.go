package loader

import "rigscope/engine/model"

// expectedExtensionShapes replaces in m layer l's tensors that a mixture
// of experts or latent attention changes: an MoE layer's router and
// experts in place of ffn_gate, ffn_up, ffn_down; latent attention's
// projections in place of attn_q, attn_k, attn_v.
func expectedExtensionShapes(cfg *model.Config, l int, m map[string][]int) {
	if cfg.MoE.Sparse(l) {
		for _, part := range []string{"ffn_gate", "ffn_up", "ffn_down"} {
			delete(m, model.LayerName(l, part))
		}
		model.ExpectedMoEShapes(cfg, l, m)
	}
	if cfg.MLA.Enabled() {
		for _, part := range []string{"attn_q", "attn_k", "attn_v"} {
			delete(m, model.LayerName(l, part))
		}
		model.ExpectedMLAShapes(cfg, l, m)
	}
}
