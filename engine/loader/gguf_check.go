package loader

import (
	"fmt"
	"slices"
	"strings"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/unsupported"
)

// ggufArchitectures are the general.architecture values read as Llama.
var ggufArchitectures = []string{"llama"}

// ggufRead are the ARCH.* metadata keys read into the config, or that
// change nothing whatever their value.
var ggufRead = map[string]bool{
	"context_length": true, "embedding_length": true, "block_count": true, "feed_forward_length": true,
	"attention.head_count": true, "attention.head_count_kv": true, "attention.layer_norm_rms_epsilon": true,
	"rope.freq_base": true, "attention.key_length": true, "vocab_size": true,
	"rope.scaling.original_context_length": true, "rope.scaling.finetuned": true, "tensor_data_layout": true,
}

// ggufChecks are the ARCH.* keys that ask for a feature the engine does not
// implement unless they hold a value that asks for nothing (off). A key in
// neither table is refused as metadata nothing reads. Delete or relax an
// entry when its feature lands.
var ggufChecks = map[string]struct {
	kind      unsupported.Kind
	off       func(f *gguf.File, arch, key string) bool
	supported string // "" = the kind's own
}{
	"rope.dimension_count":     {unsupported.AttentionShape, sameAsHeadDim, "RoPE over the whole head (rope.dimension_count = the head dim)"},
	"attention.value_length":   {unsupported.AttentionShape, sameAsHeadDim, "value heads as wide as key heads"},
	"rope.scaling.type":        {unsupported.RopeScaling, isString("none", ""), "plain RoPE (rope.scaling.type none)"},
	"rope.scaling.factor":      {unsupported.RopeScaling, isNumber(0, 1), "plain RoPE (rope.scaling.factor 1)"},
	"attention.sliding_window": {unsupported.SlidingWindow, isNumber(0), ""},
	"expert_count":             {unsupported.Experts, isNumber(0), ""},
	"expert_used_count":        {unsupported.Experts, isNumber(0), ""},
}

func isString(offs ...string) func(f *gguf.File, arch, key string) bool {
	return func(f *gguf.File, _, key string) bool {
		s, ok := f.String(key)
		return ok && slices.Contains(offs, s)
	}
}

func isNumber(offs ...float64) func(f *gguf.File, arch, key string) bool {
	return func(f *gguf.File, _, key string) bool {
		v, ok := f.Float(key)
		return ok && slices.Contains(offs, v)
	}
}

// sameAsHeadDim: the key equals the head dim (attention.key_length, else
// embedding_length / attention.head_count).
func sameAsHeadDim(f *gguf.File, arch, key string) bool {
	v, ok := f.Uint(key)
	if !ok {
		return false
	}
	if kl, ok := f.Uint(arch + ".attention.key_length"); ok {
		return v == kl
	}
	dim, ok1 := f.Uint(arch + ".embedding_length")
	heads, ok2 := f.Uint(arch + ".attention.head_count")
	return ok1 && ok2 && heads > 0 && v == dim/heads
}

// ggufUnsupported lists what f's metadata asks for that the engine does
// not implement: an architecture other than llama, and every ARCH.* key
// that is not off (in file order).
func ggufUnsupported(f *gguf.File, arch string) []unsupported.Item {
	var items []unsupported.Item
	if arch != "" && !slices.Contains(ggufArchitectures, arch) {
		items = append(items, unsupported.Item{Kind: unsupported.Architecture, Field: "general.architecture", Value: fmt.Sprintf("%q", arch), Supported: strings.Join(ggufArchitectures, ", ")})
	}
	var unread []string
	for _, kv := range f.KV {
		key, ok := strings.CutPrefix(kv.Key, arch+".")
		if arch == "" || !ok {
			continue
		}
		k, checked := ggufChecks[key]
		switch {
		case ggufRead[key]:
		case !checked:
			unread = append(unread, kv.Key)
		case !k.off(f, arch, kv.Key):
			items = append(items, unsupported.Item{Kind: k.kind, Field: kv.Key, Value: valueString(kv.Value), Supported: k.supported})
		}
	}
	if len(unread) > 0 {
		items = append(items, unsupported.Item{Kind: unsupported.UnreadMetadata, Names: unread})
	}
	return items
}

// valueString is a metadata value for a message, cut to 80 bytes.
func valueString(v any) string {
	s := fmt.Sprint(v)
	if str, ok := v.(string); ok {
		s = fmt.Sprintf("%q", str)
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
