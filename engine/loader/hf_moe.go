package loader

import (
	"fmt"
	"regexp"
	"strconv"

	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
)

// hfMoEKind is which family's mixture of experts a config.json
// architecture has.
type hfMoEKind uint8

const (
	moeNone     hfMoEKind = iota
	moeMixtral            // block_sparse_moe, experts w1/w3/w2, softmax router, top-k renormalized
	moeQwen3              // mlp.experts.*, softmax router, norm_topk_prob
	moeDeepSeek           // mlp.experts.* + shared_experts, sigmoid scores with a correction bias, groups
)

// hfExtFields are config.json's mixture-of-experts and latent attention
// fields (hfConfig embeds them). Pointers: absent and stated differ.
type hfExtFields struct {
	NumLocalExperts    *int     `json:"num_local_experts"` // Mixtral; Qwen3-MoE as transformers 5 writes it
	NumExperts         *int     `json:"num_experts"`       // Qwen3-MoE as transformers 4 writes it
	NRoutedExperts     *int     `json:"n_routed_experts"`  // DeepSeek
	NSharedExperts     *int     `json:"n_shared_experts"`
	ExpertsPerTok      *int     `json:"num_experts_per_tok"`
	MoEIntermediate    *int     `json:"moe_intermediate_size"`
	NormTopKProb       *bool    `json:"norm_topk_prob"`
	NGroup             *int     `json:"n_group"`
	TopKGroup          *int     `json:"topk_group"`
	RoutedScaling      *float64 `json:"routed_scaling_factor"`
	FirstKDense        *int     `json:"first_k_dense_replace"`
	ScoringFunc        *string  `json:"scoring_func"`
	TopKMethod         *string  `json:"topk_method"`
	MoELayerFreq       *int     `json:"moe_layer_freq"`
	DecoderSparseStep  *int     `json:"decoder_sparse_step"`
	MLPOnlyLayers      []int    `json:"mlp_only_layers"`
	QLoraRank          *int     `json:"q_lora_rank"`
	KVLoraRank         *int     `json:"kv_lora_rank"`
	QKNopeHeadDim      *int     `json:"qk_nope_head_dim"`
	QKRopeHeadDim      *int     `json:"qk_rope_head_dim"`
	QKHeadDim          *int     `json:"qk_head_dim"`
	VHeadDim           *int     `json:"v_head_dim"`
	RopeInterleave     *bool    `json:"rope_interleave"`
	NumNextNPredLayers *int     `json:"num_nextn_predict_layers"`
}

// extensions reads the mixture of experts and latent attention arch has
// into cfg (after the Llama fields). A field that must be stated and is
// not, or one that asks for a variant the engine does not implement, is
// an error naming it.
func (hc *hfConfig) extensions(cfg *model.Config, arch hfArch) error {
	f := &hc.hfExtFields
	var items []unsupported.Item
	refuse := func(kind unsupported.Kind, field, value, sup string) {
		items = append(items, unsupported.Item{Kind: kind, Field: field, Value: value, Supported: sup})
	}
	need := func(name string, v *int) int {
		if v == nil {
			refuse(unsupported.Experts, name, "absent", "a "+arch.name+" config.json that states "+name)
			return 0
		}
		return *v
	}
	m := &cfg.MoE
	switch arch.moe {
	case moeNone:
		return nil
	case moeMixtral:
		m.Experts = need("num_local_experts", f.NumLocalExperts)
		m.FFN = cfg.FFN
		m.NormTopK = true // MixtralSparseMoeBlock always renormalizes
	case moeQwen3:
		if f.NumLocalExperts != nil {
			m.Experts = *f.NumLocalExperts
		} else {
			m.Experts = need("num_experts", f.NumExperts)
		}
		m.FFN = need("moe_intermediate_size", f.MoEIntermediate)
		m.NormTopK = f.NormTopKProb != nil && *f.NormTopKProb // Qwen3MoeConfig's default: false
		if f.DecoderSparseStep != nil && *f.DecoderSparseStep != 1 {
			refuse(unsupported.Experts, "decoder_sparse_step", strconv.Itoa(*f.DecoderSparseStep), "an MoE MLP in every layer (decoder_sparse_step 1)")
		}
		if len(f.MLPOnlyLayers) > 0 {
			refuse(unsupported.Experts, "mlp_only_layers", fmt.Sprint(f.MLPOnlyLayers), "an MoE MLP in every layer (mlp_only_layers [])")
		}
	case moeDeepSeek:
		m.Experts = need("n_routed_experts", f.NRoutedExperts)
		m.FFN = need("moe_intermediate_size", f.MoEIntermediate)
		m.Scoring, m.ScoreBias = model.ScoreSigmoid, true
		m.NormTopK = f.NormTopKProb == nil || *f.NormTopKProb // DeepseekV3Config's default: true
		m.Groups, m.TopKGroups = need("n_group", f.NGroup), need("topk_group", f.TopKGroup)
		m.FirstDense = need("first_k_dense_replace", f.FirstKDense)
		if f.NSharedExperts != nil {
			m.SharedFFN = *f.NSharedExperts * m.FFN
		}
		m.RoutedScale = 1
		if f.RoutedScaling != nil {
			m.RoutedScale = float32(*f.RoutedScaling)
		}
		if f.ScoringFunc != nil && *f.ScoringFunc != "sigmoid" {
			refuse(unsupported.Experts, "scoring_func", *f.ScoringFunc, "sigmoid")
		}
		if f.TopKMethod != nil && *f.TopKMethod != "noaux_tc" {
			refuse(unsupported.Experts, "topk_method", *f.TopKMethod, "noaux_tc (DeepSeek-V3's group-limited top-k with the correction bias)")
		}
		if f.MoELayerFreq != nil && *f.MoELayerFreq != 1 {
			refuse(unsupported.Experts, "moe_layer_freq", strconv.Itoa(*f.MoELayerFreq), "an MoE MLP in every layer after the first dense ones (moe_layer_freq 1)")
		}
	}
	m.PerToken = need("num_experts_per_tok", f.ExpertsPerTok)
	if arch.mla {
		if err := hc.latent(cfg, f, refuse); err != nil {
			return err
		}
	}
	return unsupported.Refuse("", items)
}

// latent reads DeepSeek's latent attention shape.
func (hc *hfConfig) latent(cfg *model.Config, f *hfExtFields, refuse func(kind unsupported.Kind, field, value, sup string)) error {
	a := &cfg.MLA
	for _, v := range []struct {
		name string
		src  *int
		dst  *int
	}{
		{"q_lora_rank", f.QLoraRank, &a.QRank}, {"kv_lora_rank", f.KVLoraRank, &a.KVRank},
		{"qk_nope_head_dim", f.QKNopeHeadDim, &a.NopeDim}, {"qk_rope_head_dim", f.QKRopeHeadDim, &a.RopeDim},
		{"v_head_dim", f.VHeadDim, &a.VDim},
	} {
		if v.src == nil {
			if v.name == "q_lora_rank" {
				refuse(unsupported.AttentionShape, v.name, "null", "latent attention with a query latent (q_lora_rank stated, as DeepSeek-V3 and Kimi-K2)")
				continue
			}
			return fmt.Errorf("%s is absent; latent attention needs it", v.name)
		}
		*v.dst = *v.src
	}
	if f.QKHeadDim != nil && *f.QKHeadDim != a.QKDim() {
		return fmt.Errorf("qk_head_dim %d is not qk_nope_head_dim %d + qk_rope_head_dim %d", *f.QKHeadDim, a.NopeDim, a.RopeDim)
	}
	if hc.HeadDim != nil && *hc.HeadDim != a.RopeDim {
		return fmt.Errorf("head_dim %d differs from qk_rope_head_dim %d (the dims RoPE turns)", *hc.HeadDim, a.RopeDim)
	}
	cfg.HeadDim = a.RopeDim
	cfg.RopeLayout = model.RopeInterleaved // rope_interleave, DeepseekV3Config's default
	if f.RopeInterleave != nil && !*f.RopeInterleave {
		cfg.RopeLayout = model.RopeHalf
	}
	return nil
}

// hfMTPLayers are the indices of DeepSeek's multi-token-prediction layers
// (num_nextn_predict_layers after the last decoder layer), whose tensors
// the engine does not read: transformers ignores them too, and they are
// not needed for next-token prediction.
func (hc *hfConfig) hfMTPLayers(layers int) (lo, hi int) {
	if hc.NumNextNPredLayers == nil || *hc.NumNextNPredLayers <= 0 {
		return 0, 0
	}
	return layers, layers + *hc.NumNextNPredLayers
}

var hfLayerIndexRe = regexp.MustCompile(`^model\.layers\.(\d+)\.`)

// dropMTP drops from unread the tensors of layers [lo, hi).
func dropMTP(unread []string, lo, hi int) []string {
	if lo == hi {
		return unread
	}
	out := unread[:0:0]
	for _, n := range unread {
		if m := hfLayerIndexRe.FindStringSubmatch(n); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil && i >= lo && i < hi {
				continue
			}
		}
		out = append(out, n)
	}
	return out
}

var hfExpertRe = regexp.MustCompile(`^blk\.(\d+)\.(ffn_(?:gate|up|down)_exps)\.(\d+)\.weight$`)

// hfExtParts are the Hugging Face names of the MoE and latent attention
// parts, by family (the expert parts take the expert's index).
var hfExtParts = map[hfMoEKind]map[string]string{
	moeMixtral: {
		model.PartRouter: "block_sparse_moe.gate.weight", model.PartExpGate: "block_sparse_moe.experts.%s.w1.weight",
		model.PartExpUp: "block_sparse_moe.experts.%s.w3.weight", model.PartExpDown: "block_sparse_moe.experts.%s.w2.weight",
	},
	moeQwen3: {
		model.PartRouter: "mlp.gate.weight", model.PartExpGate: "mlp.experts.%s.gate_proj.weight",
		model.PartExpUp: "mlp.experts.%s.up_proj.weight", model.PartExpDown: "mlp.experts.%s.down_proj.weight",
	},
	moeDeepSeek: {
		model.PartRouter: "mlp.gate.weight", model.PartExpGate: "mlp.experts.%s.gate_proj.weight",
		model.PartExpUp: "mlp.experts.%s.up_proj.weight", model.PartExpDown: "mlp.experts.%s.down_proj.weight",
		model.PartScoreBias:  "mlp.gate.e_score_correction_bias",
		model.PartSharedGate: "mlp.shared_experts.gate_proj.weight", model.PartSharedUp: "mlp.shared_experts.up_proj.weight",
		model.PartSharedDown: "mlp.shared_experts.down_proj.weight",
		model.PartQA:         "self_attn.q_a_proj.weight", model.PartQANorm: "self_attn.q_a_layernorm.weight",
		model.PartQB: "self_attn.q_b_proj.weight", model.PartKVA: "self_attn.kv_a_proj_with_mqa.weight",
		model.PartKVNorm: "self_attn.kv_a_layernorm.weight", model.PartKVB: "self_attn.kv_b_proj.weight",
	},
}

// tensorName maps a canonical tensor name to arch's Hugging Face name:
// Gemma 3's, its MoE and latent attention parts, else the Llama block's.
func (a hfArch) tensorName(canonical string) (string, bool) {
	if a.gemma {
		return gemmaTensorName(canonical) // hf_gemma.go
	}
	parts := hfExtParts[a.moe]
	if m := hfExpertRe.FindStringSubmatch(canonical); m != nil {
		p, ok := parts[m[2]]
		if !ok {
			return "", false
		}
		return "model.layers." + m[1] + "." + fmt.Sprintf(p, m[3]), true
	}
	if m := hfLayerRe.FindStringSubmatch(canonical); m != nil {
		if p, ok := parts[m[2]]; ok {
			return "model.layers." + m[1] + "." + p, true
		}
	}
	return hfTensorName(canonical)
}
