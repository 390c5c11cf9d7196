package hfconfig

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"rigscope/engine/loader/unsupported"
)

// fieldChecks are the config.json fields that ask for something the engine
// does not implement, unless they hold a value that asks for nothing (off).
// Delete an entry when its feature lands.
var fieldChecks = []struct {
	field     string
	kind      unsupported.Kind
	off       func(v any, cfg map[string]any) bool
	supported string // "" = the kind's own
}{
	{"attention_bias", unsupported.Bias, isFalse, ""},
	{"mlp_bias", unsupported.Bias, isFalse, ""},
	{"sliding_window", unsupported.SlidingWindow, slidingOff, ""},
	{"use_sliding_window", unsupported.SlidingWindow, isFalse, ""},
	{"layer_types", unsupported.SlidingWindow, allFullAttention, `full causal attention in every layer ("full_attention")`},
	{"num_local_experts", unsupported.Experts, isZero, ""},
	{"num_experts", unsupported.Experts, isZero, ""},
	{"n_routed_experts", unsupported.Experts, isZero, ""},
	{"n_shared_experts", unsupported.Experts, isZero, ""},
	{"quantization_config", unsupported.Quantization, isNull, ""},
	{"q_lora_rank", unsupported.AttentionShape, isNull, "multi-head attention with grouped K/V heads; latent attention only as DeepseekV3ForCausalLM states it"},
	{"kv_lora_rank", unsupported.AttentionShape, isNull, "multi-head attention with grouped K/V heads; latent attention only as DeepseekV3ForCausalLM states it"},
	{"attn_logit_softcapping", unsupported.AttentionShape, isNull, "attention scores without soft-capping"},
	{"final_logit_softcapping", unsupported.AttentionShape, isNull, "logits without soft-capping"},
	{"query_pre_attn_scalar", unsupported.AttentionShape, isNull, "attention scores scaled by 1/sqrt(head_dim)"},
	{"partial_rotary_factor", unsupported.AttentionShape, isOne, "RoPE over the whole head"},
	{"use_qk_norm", unsupported.QKNorm, isFalse, ""},
	{"use_bidirectional_attention", unsupported.AttentionShape, isFalse, "causal attention"},
	{"hidden_act", unsupported.Activation, isSiLU, ""},
	{"hidden_activation", unsupported.Activation, isSiLU, ""},
}

func isNull(v any, _ map[string]any) bool  { return v == nil }
func isFalse(v any, _ map[string]any) bool { return v == nil || v == false }
func isZero(v any, _ map[string]any) bool  { return v == nil || v == 0.0 }
func isOne(v any, _ map[string]any) bool   { return v == nil || v == 1.0 }
func isSiLU(v any, _ map[string]any) bool  { return v == nil || v == "silu" }

// slidingOff: no window, or one that use_sliding_window switches off (as
// Qwen2 checkpoints state it).
func slidingOff(v any, cfg map[string]any) bool {
	return v == nil || cfg["use_sliding_window"] == false
}

func allFullAttention(v any, _ map[string]any) bool {
	if v == nil {
		return true
	}
	types, ok := v.([]any)
	return ok && !slices.ContainsFunc(types, func(t any) bool { return t != "full_attention" })
}

// Implemented is what a reader of config.json implements beyond the plain
// Llama block; the zero value is nothing.
type Implemented struct {
	RopeTypes     []string // RoPE scaling types read (Scaling), e.g. "linear", "llama3"
	SlidingWindow bool     // sliding_window read (Mistral's one window in every layer)
	// Reads are fields of fieldChecks the reader reads and checks itself
	// (Gemma 3: layer_types, query_pre_attn_scalar, ...).
	Reads []string
	// PerLayerRope: a rope_parameters keyed by layer type
	// ("full_attention", "sliding_attention") is read, each entry of an
	// implemented type.
	PerLayerRope bool
	// Experts: the expert counts read (num_local_experts, num_experts,
	// n_routed_experts, n_shared_experts).
	Experts bool
	// LatentAttention: q_lora_rank and kv_lora_rank read (DeepSeek's MLA).
	LatentAttention bool
	// FP8: a quantization_config of quant_method fp8 read (ReadFP8); any
	// other is refused as without.
	FP8 bool
}

// reads says whether a reader implementing impl reads field itself, so
// that its fieldChecks entry does not apply.
func (impl Implemented) reads(field string) bool {
	switch field {
	case "sliding_window":
		return impl.SlidingWindow
	case "num_local_experts", "num_experts", "n_routed_experts", "n_shared_experts":
		return impl.Experts
	case "q_lora_rank", "kv_lora_rank":
		return impl.LatentAttention
	case "quantization_config":
		return impl.FP8
	}
	return slices.Contains(impl.Reads, field)
}

// Check lists every field of config.json (raw) that asks for something
// beyond the plain Llama block: the fields of fieldChecks and any RoPE
// scaling, in either spelling (transformers 5's rope_parameters,
// transformers 4's rope_scaling).
func Check(raw []byte) ([]unsupported.Item, error) { return CheckFor(raw, Implemented{}) }

// CheckFor is Check for a reader that implements impl.
func CheckFor(raw []byte, impl Implemented) ([]unsupported.Item, error) {
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	var items []unsupported.Item
	for _, fc := range fieldChecks {
		if impl.reads(fc.field) {
			continue
		}
		v, ok := cfg[fc.field]
		if ok && !fc.off(v, cfg) {
			items = append(items, unsupported.Item{Kind: fc.kind, Field: fc.field, Value: compact(v), Supported: fc.supported})
		}
	}
	if impl.FP8 {
		_, quant, err := fp8Items(cfg["quantization_config"])
		if err != nil {
			return nil, err
		}
		items = append(items, quant...)
	}
	rope, err := ropeItems(cfg, impl)
	return append(items, rope...), err
}

// LayerTypes are the layer types a per-layer rope_parameters may key.
var LayerTypes = []string{"full_attention", "sliding_attention"}

func ropeItems(cfg map[string]any, impl Implemented) ([]unsupported.Item, error) {
	implemented := impl.RopeTypes
	var items []unsupported.Item
	for _, field := range []string{"rope_parameters", "rope_scaling"} {
		v, ok := cfg[field]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s is not an object", field, compact(v))
		}
		var perLayer []string
		for k, sub := range m {
			if _, nested := sub.(map[string]any); nested {
				perLayer = append(perLayer, k)
			}
		}
		if len(perLayer) > 0 {
			sort.Strings(perLayer)
			if !impl.PerLayerRope {
				items = append(items, unsupported.Item{Kind: unsupported.RopeScaling, Field: field,
					Value: "one per layer type (" + strings.Join(perLayer, ", ") + ")"})
				continue
			}
			for _, k := range perLayer {
				if !slices.Contains(LayerTypes, k) {
					items = append(items, unsupported.Item{Kind: unsupported.SlidingWindow, Field: field + "." + k, Value: "a layer type", Supported: strings.Join(LayerTypes, ", ")})
					continue
				}
				items = append(items, ropeObjectItems(field+"."+k, m[k].(map[string]any), implemented)...)
			}
			continue
		}
		items = append(items, ropeObjectItems(field, m, implemented)...)
	}
	return items, nil
}

// ropeObjectItems checks one RoPE object (rope_scaling, rope_parameters or
// one layer type's entry of it): a type not implemented, or a factor on
// plain RoPE.
func ropeObjectItems(field string, m map[string]any, implemented []string) []unsupported.Item {
	var items []unsupported.Item
	key := "rope_type"
	rawType, has := m[key]
	if !has {
		key = "type"
		rawType = m[key]
	}
	typ, isString := rawType.(string)
	factor, hasFactor := m["factor"]
	switch {
	case rawType != nil && !isString:
		items = append(items, unsupported.Item{Kind: unsupported.RopeScaling, Field: field + "." + key, Value: compact(rawType)})
	case slices.Contains(implemented, typ):
	case !Unscaled(typ):
		val := typ
		if hasFactor {
			val += fmt.Sprintf(" (factor %s)", compact(factor))
		}
		sup := ""
		if len(implemented) > 0 {
			sup = "plain RoPE or " + strings.Join(implemented, ", ")
		}
		items = append(items, unsupported.Item{Kind: unsupported.RopeScaling, Field: field + "." + key, Value: val, Supported: sup})
	case hasFactor && factor != 1.0 && factor != nil:
		items = append(items, unsupported.Item{Kind: unsupported.RopeScaling, Field: field + ".factor", Value: compact(factor)})
	}
	return items
}

// Unscaled says whether a RoPE type means plain RoPE.
func Unscaled(scaling string) bool { return scaling == "" || scaling == "default" }

// compact is a value as JSON, cut to 80 bytes.
func compact(v any) string {
	if m, ok := v.(map[string]any); ok {
		if q, ok := m["quant_method"].(string); ok {
			return q
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
