// Package unsupported is how a loader refuses a model that asks for
// something the engine does not implement, rather than running it wrong.
// A refusal lists every such feature (the config field or tensors that ask
// for it, the value, and what the engine supports instead), so that a
// loader's checks are tables whose entries are deleted as features land.
package unsupported

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is a feature the engine does not implement.
type Kind uint8

const (
	Architecture   Kind = iota + 1
	RopeScaling         // any RoPE scaling (llama3, linear, yarn, ...), GGUF rope_freqs
	SlidingWindow       // sliding-window or local attention layers
	Bias                // biases on attention or MLP projections
	QKNorm              // RMSNorm on each query and key head
	Experts             // mixture of experts: routers, expert tensors, counts
	Quantization        // a quantization_config (GPTQ, AWQ, FP8, bitsandbytes, ...)
	Activation          // an MLP activation other than SiLU
	AttentionShape      // MLA, partial rotary, attention scalars, soft-capping
	UnreadTensor        // a tensor in the file that nothing reads
	UnreadMetadata      // a GGUF metadata key of the architecture that nothing reads
)

var kindNames = map[Kind]string{
	Architecture: "architecture", RopeScaling: "RoPE scaling", SlidingWindow: "sliding-window attention",
	Bias: "biases", QKNorm: "q/k norms", Experts: "mixture of experts", Quantization: "quantization",
	Activation: "activation", AttentionShape: "attention variant", UnreadTensor: "tensors nothing reads",
	UnreadMetadata: "metadata nothing reads",
}

// kindSupported is what the engine does instead, for an Item that names
// nothing more specific.
var kindSupported = map[Kind]string{
	Architecture: "Llama", RopeScaling: "plain RoPE from one base frequency", SlidingWindow: "full causal attention",
	Bias: "projections without biases", QKNorm: "no norm on query and key heads", Experts: "a dense SiLU-gated MLP, or the experts of Mixtral (config.json and GGUF llama), Qwen3-MoE and DeepSeek-V3 (config.json) as those architectures state them",
	Quantization: "unquantized safetensors (F32, F16, BF16), FP8 safetensors (quant_method fp8: e4m3 with per-tensor, per-channel or 128x128 block scales) or GGUF F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K",
	Activation:   "silu", AttentionShape: "multi-head attention with grouped K/V heads, RoPE over the whole head, scores scaled by 1/sqrt(head_dim)",
	UnreadTensor: "only the tensors of the architecture", UnreadMetadata: "only the ARCH.* keys the engine reads",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Item is one unsupported feature as the file states it: by a config field
// or metadata key (Field, Value), or by the tensors (or, for
// UnreadMetadata, the keys) that carry it (Names).
type Item struct {
	Kind      Kind
	Field     string   // "rope_parameters.rope_type", "llama.expert_count"; "" for tensors
	Value     string   // what the file says, e.g. "llama3"
	Names     []string // tensors or keys, in file order (Error names the first few)
	Supported string   // what the engine does instead; "" = the kind's usual alternative
}

// shownNames is how many tensor or key names a message lists per item.
const shownNames = 3

func (it Item) String() string {
	var b strings.Builder
	b.WriteString(it.Kind.String())
	b.WriteString(": ")
	switch {
	case it.Field != "":
		fmt.Fprintf(&b, "%s = %s", it.Field, it.Value)
	case len(it.Names) > 0:
		noun := "tensor"
		if it.Kind == UnreadMetadata {
			noun = "key"
		}
		n := min(len(it.Names), shownNames)
		fmt.Fprintf(&b, "%d %s", len(it.Names), noun)
		if len(it.Names) > 1 {
			b.WriteString("s")
		}
		fmt.Fprintf(&b, " (%s", strings.Join(it.Names[:n], ", "))
		if len(it.Names) > n {
			fmt.Fprintf(&b, ", ... %d more", len(it.Names)-n)
		}
		b.WriteString(")")
	}
	sup := it.Supported
	if sup == "" {
		sup = kindSupported[it.Kind]
	}
	if sup != "" {
		fmt.Fprintf(&b, " (supported: %s)", sup)
	}
	return b.String()
}

// Error refuses the model in File ("" when the caller names it): every
// item it found, in one line.
type Error struct {
	File  string
	Items []Item
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Items))
	for i, it := range e.Items {
		parts[i] = it.String()
	}
	msg := "not implemented by this engine, refusing the model rather than running it wrong: " + strings.Join(parts, "; ")
	if e.File == "" {
		return msg
	}
	return e.File + ": " + msg
}

// Has reports whether the refusal lists a feature of kind k.
func (e *Error) Has(k Kind) bool {
	for _, it := range e.Items {
		if it.Kind == k {
			return true
		}
	}
	return false
}

// Refuse returns an *Error for items, or nil when there are none.
func Refuse(file string, items []Item) error {
	if len(items) == 0 {
		return nil
	}
	return &Error{File: file, Items: items}
}

// As returns the refusal inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// tensorKinds says what a tensor nothing reads is for, by name (Hugging
// Face and GGUF spellings); the first match wins, and a name that matches
// none is an UnreadTensor.
var tensorKinds = []struct {
	kind      Kind
	contains  []string
	supported string // "" = the kind's own
}{
	{Experts, []string{"experts", "_exps", "_shexp", "ffn_gate_inp", "block_sparse_moe", ".mlp.gate.", "shared_expert", "exp_probs_b"}, ""},
	{Quantization, []string{"weight_scale", ".scales", "qweight", "qzeros", ".g_idx", "input_scale", ".absmax", ".quant_map"}, ""},
	{AttentionShape, []string{"q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj", "q_a_layernorm", "kv_a_layernorm", "attn_q_a", "attn_q_b", "attn_kv_a", "attn_kv_b", "attn_k_b", "attn_v_b"}, "multi-head attention with grouped K/V heads; latent attention only as DeepseekV3ForCausalLM states it"},
	{QKNorm, []string{"q_norm", "k_norm"}, ""},
	{Bias, []string{".bias"}, ""},
	{RopeScaling, []string{"rope_freqs", "inv_freq"}, ""},
}

// Tensors groups the names of tensors nothing reads into items by what
// they are for, in the order of tensorKinds, then UnreadTensor.
func Tensors(unread []string) []Item {
	byKind := map[Kind]*Item{}
	var order []Kind
	for _, name := range unread {
		it := Item{Kind: UnreadTensor}
		for _, tk := range tensorKinds {
			if containsAny(name, tk.contains) {
				it = Item{Kind: tk.kind, Supported: tk.supported}
				break
			}
		}
		p, ok := byKind[it.Kind]
		if !ok {
			p = &it
			byKind[it.Kind] = p
			order = append(order, it.Kind)
		}
		p.Names = append(p.Names, name)
	}
	out := make([]Item, 0, len(order))
	for _, k := range order {
		out = append(out, *byKind[k])
	}
	return out
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
