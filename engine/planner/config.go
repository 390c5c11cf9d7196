package planner

import (
	"fmt"
	"path/filepath"

	"rigscope/engine/model"
)

// Shape is what the planner needs of a model: its sizes, the allreduce
// calls a forward makes, and the bytes one token puts on the wire.
type Shape struct {
	Name   string `json:"name"` // for people (the model's path)
	DType  string `json:"dtype"`
	Layers int    `json:"layers"`
	Hidden int    `json:"hidden"`
	// AllReducesPerLayer: the sharded forward sums the attention output
	// and the MLP output across ranks (Megatron-LM's two per layer).
	AllReducesPerLayer int `json:"allreduces_per_layer"`
	// WireBytes is one activation value on the allreduce wire: 4 on CPU
	// ranks (float32 buffers), 2 for bf16 on GPUs.
	WireBytes int    `json:"wire_bytes"`
	Heads     int    `json:"heads"`
	KVHeads   int    `json:"kv_heads"`
	FFN       int    `json:"ffn"`
	Vocab     int    `json:"vocab"`
	Key       string `json:"key"` // what the compute table is filed under
}

// ShapeOf is the shape of a model config on a device (cpu: float32 wire).
func ShapeOf(name, dtype string, c model.Config, wireBytes int) Shape {
	s := Shape{Name: name, DType: dtype, Layers: c.Layers, Hidden: c.Dim, AllReducesPerLayer: 2, WireBytes: wireBytes,
		Heads: c.Heads, KVHeads: c.KVHeads, FFN: c.FFN, Vocab: c.Vocab}
	s.Key = fmt.Sprintf("%s layers=%d dim=%d heads=%d/%d head_dim=%d ffn=%d vocab=%d dtype=%s", c.Arch, c.Layers, c.Dim, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab, dtype)
	return s
}

// AllReduces is the allreduce calls of one forward pass.
func (s Shape) AllReduces() int { return s.Layers * s.AllReducesPerLayer }

// MessageBytes is one allreduce's message for a batch of tokens rows:
// tokens x hidden x wire bytes.
func (s Shape) MessageBytes(tokens int) int64 {
	return int64(tokens) * int64(s.Hidden) * int64(s.WireBytes)
}

// Config is one configuration the planner predicts.
type Config struct {
	Device  string `json:"device"`
	TP      int    `json:"tp"`
	Backend string `json:"backend,omitempty"` // "" at TP 1
	// Drafter is "none", "ngram", "model" or "eagle3"; DrafterPath the
	// draft model or head (the acceptance and draft time are per path).
	Drafter     string `json:"drafter"`
	DrafterPath string `json:"drafter_path,omitempty"`
	K           int    `json:"k,omitempty"`
	Tree        int    `json:"tree,omitempty"` // 0 = chain
}

// DrafterKey names a drafter for the tables: its kind, and its file's
// name for a model or head (the name alone: runs log the path as it was
// given, relative or not).
func (c Config) DrafterKey() string {
	if c.DrafterPath == "" {
		return c.Drafter
	}
	return c.Drafter + ":" + filepath.Base(filepath.Clean(c.DrafterPath))
}

// Speculative says the configuration drafts.
func (c Config) Speculative() bool { return c.Drafter != "" && c.Drafter != "none" }

// VerifyTokens is the batch of a full proposal's verify: the context's
// token and every proposed node (k for a chain, k x branching for a tree).
func (c Config) VerifyTokens() int { return 1 + c.K*max(c.Tree, 1) }

func (c Config) String() string {
	s := fmt.Sprintf("%s TP %d", c.Device, c.TP)
	if c.TP > 1 {
		s += " " + c.Backend
	}
	if !c.Speculative() {
		return s + ", no drafter"
	}
	s += fmt.Sprintf(", %s k=%d", c.Drafter, c.K)
	if c.Tree > 0 {
		s += fmt.Sprintf(" tree %d", c.Tree)
	}
	return s
}
