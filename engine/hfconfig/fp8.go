package hfconfig

import (
	"encoding/json"
	"fmt"
	"slices"

	"rigscope/engine/loader/unsupported"
)

// FP8 is a quantization_config of quant_method "fp8" as vLLM and the
// DeepSeek-V3 / Qwen3 FP8 releases write it: the projection weights are
// F8_E4M3 with float32 scales, named WEIGHT_scale (one per tensor, or one
// per output row) or, with weight_block_size, WEIGHT_scale_inv (one per
// block; the weight is the e4m3 value times it, despite the name).
// Activations stay float32 here (weight-only, as vLLM runs these files
// through Marlin on GPUs without FP8 arithmetic): activation_scheme
// "static" files' input_scale tensors are read past.
type FP8 struct {
	BlockRows, BlockCols int  // weight_block_size; 0, 0 without
	StaticActivations    bool // activation_scheme "static": input_scale tensors in the file
}

// FP8BlockSizes are the weight_block_size values implemented.
var FP8BlockSizes = [][2]int{{128, 128}}

// fp8Supported says what an FP8 quantization_config may ask for.
const fp8Supported = "quant_method fp8, fmt e4m3, activation_scheme dynamic or static, weight_block_size [128, 128] or none (per-tensor or per-channel weight_scale)"

// ReadFP8 reads config.json's quantization_config (raw is the whole
// config.json): nil without one, and an error naming what is not
// implemented.
func ReadFP8(raw []byte) (*FP8, error) {
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	q, items, err := fp8Items(cfg["quantization_config"])
	if err != nil {
		return nil, err
	}
	if len(items) > 0 {
		return nil, fmt.Errorf("%s", items[0].String())
	}
	return q, nil
}

// fp8Items reads quantization_config v: nil when absent, and an item for
// each thing it asks that is not implemented.
func fp8Items(v any) (*FP8, []unsupported.Item, error) {
	if v == nil {
		return nil, nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("quantization_config %s is not an object", compact(v))
	}
	item := func(field string, val any) unsupported.Item {
		return unsupported.Item{Kind: unsupported.Quantization, Field: "quantization_config." + field, Value: compact(val), Supported: fp8Supported}
	}
	if m["quant_method"] != "fp8" {
		return nil, []unsupported.Item{{Kind: unsupported.Quantization, Field: "quantization_config", Value: compact(v)}}, nil
	}
	q := &FP8{}
	var items []unsupported.Item
	if f, has := m["fmt"]; has && f != "e4m3" {
		items = append(items, item("fmt", f))
	}
	switch a := m["activation_scheme"]; a {
	case nil, "dynamic":
	case "static":
		q.StaticActivations = true
	default:
		items = append(items, item("activation_scheme", a))
	}
	if kv := m["kv_cache_scheme"]; kv != nil {
		items = append(items, item("kv_cache_scheme", kv))
	}
	if bs := m["weight_block_size"]; bs != nil {
		l, ok := bs.([]any)
		var blk [2]int
		if ok && len(l) == 2 {
			r, okr := l[0].(float64)
			c, okc := l[1].(float64)
			blk, ok = [2]int{int(r), int(c)}, okr && okc && r == float64(int(r)) && c == float64(int(c))
		}
		if !ok || !slices.Contains(FP8BlockSizes, blk) {
			items = append(items, item("weight_block_size", bs))
		}
		q.BlockRows, q.BlockCols = blk[0], blk[1]
	}
	return q, items, nil
}
