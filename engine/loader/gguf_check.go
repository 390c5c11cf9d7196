package loader

import (
	"fmt"
	"slices"
	"strings"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
)

// ggufArch is a general.architecture the engine reads: the Llama block,
// its ARCH.* keys named after it, with what the architecture adds.
type ggufArch struct {
	name      string
	layout    model.RopeLayout // llama.cpp permutes llama's Q/K rows to interleaved pairs; qwen2/3 keep NeoX halves
	qkvBias   bool             // qwen2: blk.N.attn_{q,k,v}.bias
	qkNorm    bool             // qwen3: blk.N.attn_{q,k}_norm.weight
	ropeFreqs bool             // llama: an optional rope_freqs.weight (Llama 3.1's scaling)
	experts   bool             // llama: expert_count > 0 is Mixtral (blk.N.ffn_*_exps, ffn_gate_inp)
	gemma     bool             // gemma3 (gguf_gemma.go)
}

// ggufArchitectures are the general.architecture values the engine reads.
var ggufArchitectures = []ggufArch{
	{name: "llama", layout: model.RopeInterleaved, ropeFreqs: true, experts: true},
	{name: "qwen2", layout: model.RopeHalf, qkvBias: true},
	{name: "qwen3", layout: model.RopeHalf, qkNorm: true},
	{name: "gemma3", layout: model.RopeHalf, qkNorm: true, gemma: true},
}

// reads says whether a reads the ARCH.* key beyond ggufRead's.
func (a ggufArch) reads(key string) bool { return a.gemma && ggufGemmaRead[key] }

func findGGUFArch(name string) (ggufArch, bool) {
	for _, a := range ggufArchitectures {
		if a.name == name {
			return a, true
		}
	}
	return ggufArch{}, false
}

func ggufArchNames() string {
	names := make([]string, len(ggufArchitectures))
	for i, a := range ggufArchitectures {
		names[i] = a.name
	}
	return strings.Join(names, ", ")
}

// ggufRead are the ARCH.* metadata keys read into the config, or that
// change nothing whatever their value.
var ggufRead = map[string]bool{
	"context_length": true, "embedding_length": true, "block_count": true, "feed_forward_length": true,
	"attention.head_count": true, "attention.head_count_kv": true, "attention.layer_norm_rms_epsilon": true,
	"rope.freq_base": true, "attention.key_length": true, "vocab_size": true,
	"rope.scaling.original_context_length": true, "rope.scaling.finetuned": true, "tensor_data_layout": true,
	"rope.scaling.yarn_beta_fast": true, "rope.scaling.yarn_beta_slow": true, "rope.scaling.yarn_attn_factor": true,
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
	"rope.dimension_count":             {unsupported.AttentionShape, sameAsHeadDim, "RoPE over the whole head (rope.dimension_count = the head dim)"},
	"attention.value_length":           {unsupported.AttentionShape, sameAsHeadDim, "value heads as wide as key heads"},
	"rope.scaling.type":                {unsupported.RopeScaling, isString("none", "", "linear", "yarn"), "plain RoPE, linear or yarn scaling (rope.scaling.type none, linear or yarn)"},
	"rope.scaling.factor":              {unsupported.RopeScaling, linearFactor, "plain RoPE (rope.scaling.factor 1), linear or yarn scaling"},
	"rope.scaling.yarn_ext_factor":     {unsupported.RopeScaling, isNumber(1), "YaRN with its full ramp (rope.scaling.yarn_ext_factor 1)"},
	"rope.scaling.yarn_log_multiplier": {unsupported.RopeScaling, isNumber(0), "YaRN's attention factor 0.1·ln(factor)+1 (DeepSeek's yarn_log_multiplier is not implemented)"},
	"attention.sliding_window":         {unsupported.SlidingWindow, isNumber(0), ""},
	"expert_count":                     {unsupported.Experts, expertsRead, ""},
	"expert_used_count":                {unsupported.Experts, expertsRead, ""},
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

// expertsRead: the architecture reads its experts (ggufConfig), or states
// none.
func expertsRead(f *gguf.File, arch, key string) bool {
	a, _ := findGGUFArch(arch)
	return a.experts || isNumber(0)(f, arch, key)
}

// linearFactor: a factor of 1 (or 0, llama.cpp's "none"), or that of a
// linear scaling (ggufConfig reads it).
func linearFactor(f *gguf.File, arch, key string) bool {
	typ, _ := f.String(arch + ".rope.scaling.type")
	return typ == "linear" || typ == "yarn" || isNumber(0, 1)(f, arch, key)
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
// not implement: an architecture not in ggufArchitectures, and every
// ARCH.* key that is not off (in file order).
func ggufUnsupported(f *gguf.File, arch string) []unsupported.Item {
	var items []unsupported.Item
	if _, known := findGGUFArch(arch); arch != "" && !known {
		items = append(items, unsupported.Item{Kind: unsupported.Architecture, Field: "general.architecture", Value: fmt.Sprintf("%q", arch), Supported: ggufArchNames()})
	}
	var unread []string
	for _, kv := range f.KV {
		key, ok := strings.CutPrefix(kv.Key, arch+".")
		if arch == "" || !ok {
			continue
		}
		k, checked := ggufChecks[key]
		a, _ := findGGUFArch(arch)
		switch {
		case ggufRead[key] || a.reads(key):
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
