package loader

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"rigscope/engine/hfconfig"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// hfGemmaFields are the config.json fields of Gemma3ForCausalLM beyond
// the Llama block's (transformers' Gemma3TextConfig).
type hfGemmaFields struct {
	QueryPreAttnScalar    *float64 `json:"query_pre_attn_scalar"`
	LayerTypes            []string `json:"layer_types"`
	SlidingWindowPattern  *int     `json:"sliding_window_pattern"`  // transformers 4
	SlidingWindowPattern5 *int     `json:"_sliding_window_pattern"` // transformers 5 writes it beside layer_types
	SlidingWindow         *int     `json:"sliding_window"`
	RopeLocalBaseFreq     *float64 `json:"rope_local_base_freq"` // transformers 4
	FinalLogitSoftcapping *float64 `json:"final_logit_softcapping"`
	HiddenActivation      *string  `json:"hidden_activation"`
	HiddenAct             *string  `json:"hidden_act"`
	TieWordEmbeddings     *bool    `json:"tie_word_embeddings"`
}

// hfGemmaNotNull are the fields Gemma 3 uses that a config.json may leave
// out (for the default) but not state as null (transformers fails on it).
var hfGemmaNotNull = []string{"sliding_window", "query_pre_attn_scalar", "head_dim", "rope_local_base_freq"}

// Gemma3TextConfig's defaults, for what config.json leaves out.
const (
	gemmaDefaultQueryScale = 256
	gemmaDefaultHeadDim    = 256
	gemmaDefaultWindow     = 4096
	gemmaDefaultPattern    = 6
	gemmaDefaultTheta      = 1e6
	gemmaDefaultLocalTheta = 1e4
	gemmaDefaultContext    = 131072
	gemmaActivation        = "gelu_pytorch_tanh"
)

// hfGemmaReads are the fields of hfconfig's checks the Gemma 3 reader
// reads itself.
var hfGemmaReads = []string{"layer_types", "query_pre_attn_scalar", "final_logit_softcapping", "hidden_activation", "hidden_act"}

// hfGemmaConfig completes cfg (read as a Llama block with q/k norms) with
// Gemma 3's fields of config.json raw, and lists what it asks for that is
// not implemented (an activation other than GELU-tanh).
func hfGemmaConfig(raw []byte, hc *hfConfig, cfg model.Config) (model.Config, []unsupported.Item, error) {
	var g hfGemmaFields
	if err := json.Unmarshal(raw, &g); err != nil {
		return cfg, nil, err
	}
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return cfg, nil, err
	}
	for _, k := range hfGemmaNotNull {
		if v, stated := all[k]; stated && v == nil {
			return cfg, nil, fmt.Errorf("%s is null; Gemma 3 needs one (leave it out for the default)", k)
		}
	}
	var items []unsupported.Item
	for _, a := range []struct {
		field string
		v     *string
	}{{"hidden_activation", g.HiddenActivation}, {"hidden_act", g.HiddenAct}} {
		if a.v != nil && *a.v != gemmaActivation {
			items = append(items, unsupported.Item{Kind: unsupported.Activation, Field: a.field, Value: fmt.Sprintf("%q", *a.v), Supported: gemmaActivation + " (Gemma 3)"})
		}
	}
	gm := model.Gemma3{On: true, QueryScale: gemmaDefaultQueryScale, LocalRopeTheta: gemmaDefaultLocalTheta}
	if v := g.QueryPreAttnScalar; v != nil {
		gm.QueryScale = float32(*v)
	}
	if v := g.FinalLogitSoftcapping; v != nil {
		gm.FinalSoftcap = float32(*v)
		if !(*v > 0) {
			return cfg, items, fmt.Errorf("final_logit_softcapping %g is not above 0 (null for none)", *v)
		}
	}
	if hc.HeadDim == nil {
		cfg.HeadDim = gemmaDefaultHeadDim
	}
	if hc.MaxPos == nil {
		cfg.MaxSeq = gemmaDefaultContext
	}
	if g.TieWordEmbeddings == nil {
		cfg.TiedEmbed = true
	}
	cfg.SlidingWindow = gemmaDefaultWindow
	if v := g.SlidingWindow; v != nil {
		if *v <= 0 {
			return cfg, items, fmt.Errorf("sliding_window %d is not a positive number of positions", *v)
		}
		cfg.SlidingWindow = *v
	}
	var err error
	if gm.Layers, err = gemmaLayerTypes(g, cfg.Layers); err != nil {
		return cfg, items, err
	}
	if err := gemmaRope(g, hc, &cfg, &gm); err != nil {
		return cfg, items, err
	}
	cfg.Gemma = gm
	if err := cfg.ValidateNamed(hfSizeNames); err != nil {
		return cfg, items, err
	}
	return cfg, items, nil
}

// gemmaLayerTypes is layer_types ("sliding_attention" or
// "full_attention" per layer), else sliding_window_pattern's (every
// pattern-th layer global), else the default pattern 6.
func gemmaLayerTypes(g hfGemmaFields, layers int) (string, error) {
	if g.LayerTypes != nil {
		if len(g.LayerTypes) != layers {
			return "", fmt.Errorf("layer_types lists %d layers, num_hidden_layers is %d", len(g.LayerTypes), layers)
		}
		kinds := make([]byte, layers)
		for i, t := range g.LayerTypes {
			switch t {
			case "sliding_attention":
				kinds[i] = model.LayerLocal
			case "full_attention":
				kinds[i] = model.LayerGlobal
			default:
				return "", fmt.Errorf("layer_types[%d] = %q: want sliding_attention or full_attention", i, t)
			}
		}
		return string(kinds), nil
	}
	field, period := "sliding_window_pattern", gemmaDefaultPattern
	switch {
	case g.SlidingWindowPattern != nil:
		period = *g.SlidingWindowPattern
	case g.SlidingWindowPattern5 != nil:
		field, period = "_sliding_window_pattern", *g.SlidingWindowPattern5
	}
	kinds, err := model.LocalPattern(layers, period)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return kinds, nil
}

// gemmaRope reads the global and local layers' RoPE: transformers 5's
// rope_parameters keyed by layer type, or transformers 4's rope_theta
// and rope_scaling (global) with rope_local_base_freq (local, unscaled).
func gemmaRope(g hfGemmaFields, hc *hfConfig, cfg *model.Config, gm *model.Gemma3) error {
	per, err := hc.PerLayerRope()
	if err != nil {
		return err
	}
	if per == nil {
		theta, err := hc.RopeBase(gemmaDefaultTheta)
		if err != nil {
			return err
		}
		cfg.RopeTheta = theta
		if v := g.RopeLocalBaseFreq; v != nil {
			if err := model.CheckRopeTheta(*v); err != nil {
				return fmt.Errorf("rope_local_base_freq: %w", err)
			}
			gm.LocalRopeTheta = float32(*v)
		}
		return nil // cfg.RopeScaling: rope_scaling, read as the Llama block's
	}
	if present(hc.RopeScaling) || hc.RopeTheta != nil || g.RopeLocalBaseFreq != nil {
		return fmt.Errorf("rope_parameters per layer type together with rope_scaling, rope_theta or rope_local_base_freq: state the RoPE once")
	}
	for k := range per {
		if !slices.Contains(hfconfig.LayerTypes, k) {
			return fmt.Errorf("rope_parameters.%s: not a Gemma 3 layer type (%s)", k, strings.Join(hfconfig.LayerTypes, ", "))
		}
	}
	full, sliding := per["full_attention"], per["sliding_attention"]
	cfg.RopeTheta, cfg.RopeScaling = gemmaDefaultTheta, full.Scaling
	if full.Theta != 0 {
		cfg.RopeTheta = full.Theta
	}
	gm.LocalRopeScaling = sliding.Scaling
	if sliding.Theta != 0 {
		gm.LocalRopeTheta = sliding.Theta
	}
	return nil
}

func present(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

// hfGemmaParts are Gemma 3's Hugging Face names where they differ from
// the Llama block's (hfLayerParts): its post-attention norm is a norm of
// the attention output, and the MLP's input norm is "pre_feedforward".
var hfGemmaParts = map[string]string{
	"attn_norm": "input_layernorm", "ffn_norm": "pre_feedforward_layernorm",
	model.PartPostAttnNorm: "post_attention_layernorm", model.PartPostFFNNorm: "post_feedforward_layernorm",
}

// gemmaTensorName maps a canonical tensor name to its Gemma 3 Hugging
// Face name.
func gemmaTensorName(canonical string) (string, bool) {
	if m := hfLayerRe.FindStringSubmatch(canonical); m != nil {
		if part, ok := hfGemmaParts[m[2]]; ok {
			return "model.layers." + m[1] + "." + part + "." + m[3], true
		}
	}
	return hfTensorName(canonical)
}

// gemmaNormPlusOne is a Gemma 3 norm weight as the model holds it: the
// file's w as 1 + w in float32 (Gemma3RMSNorm multiplies by 1 + w; GGUF
// files hold 1 + w already). Other tensors pass through.
func gemmaNormPlusOne(t *tensor.Tensor) *tensor.Tensor {
	isFloat := t.DType == tensor.F32 || t.DType == tensor.F16 || t.DType == tensor.BF16
	if len(t.Shape) != 1 || !isFloat || !(strings.HasSuffix(t.Name, "_norm.weight") || t.Name == model.NameOutputNorm) {
		return t // validateWeights refuses a norm of another dtype
	}
	n := t.Shape[0]
	v := make([]float32, n)
	for i := range v {
		v[i] = 1 + floatAt(t, i)
	}
	out := &tensor.Tensor{Name: t.Name, DType: tensor.F32, Shape: []int{n}, Data: make([]byte, 4*n)}
	tensor.Encode(out.Data, tensor.F32, v)
	return out
}
