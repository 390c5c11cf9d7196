package model

import "fmt"

// RopeLayout says how the two halves of each rotated pair are laid out in a
// head's Q and K rows.
type RopeLayout uint8

const (
	// RopeInterleaved rotates pairs (2i, 2i+1): GGUF (llama.cpp's converter
	// permutes Q/K rows to it) and llama2.c checkpoints.
	RopeInterleaved RopeLayout = iota
	// RopeHalf rotates pairs (i, i+d/2): Hugging Face "rotate_half".
	RopeHalf
)

func (l RopeLayout) String() string {
	if l == RopeHalf {
		return "rotate-half"
	}
	return "interleaved"
}

// Config is a Llama-family decoder's hyperparameters.
type Config struct {
	Arch       string // "llama"
	Dim        int    // d_model
	Layers     int
	Heads      int // query heads
	KVHeads    int // key/value heads (GQA: Heads % KVHeads == 0)
	HeadDim    int // usually Dim/Heads
	FFN        int // hidden size of the SiLU-gated MLP
	Vocab      int
	MaxSeq     int // context length the model was trained for
	NormEps    float32
	RopeTheta  float32
	RopeLayout RopeLayout
	TiedEmbed  bool // output projection reuses token_embd
}

// Validate reports the first inconsistent field.
func (c *Config) Validate() error {
	switch {
	case c.Dim <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0 || c.FFN <= 0 || c.Vocab <= 0:
		return fmt.Errorf("config: non-positive size in %+v", *c)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("config: %d heads not divisible by %d kv heads", c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("config: head dim %d is odd; RoPE needs pairs", c.HeadDim)
	case c.Dim > 1<<20 || c.Layers > 1<<12 || c.Vocab > 1<<24 || c.FFN > 1<<22 || c.Heads > 1<<12:
		return fmt.Errorf("config: absurd sizes in %+v", *c)
	}
	if c.MaxSeq <= 0 {
		c.MaxSeq = 2048
	}
	if c.NormEps <= 0 {
		c.NormEps = 1e-5
	}
	if c.RopeTheta <= 0 {
		c.RopeTheta = 10000
	}
	return nil
}

// Canonical tensor names (GGUF's). Loaders for other formats map their
// names to these.
const (
	NameTokEmbd    = "token_embd.weight"
	NameOutputNorm = "output_norm.weight"
	NameOutput     = "output.weight"
)

// LayerName returns the canonical name of a per-layer tensor, e.g.
// LayerName(3, "attn_q") = "blk.3.attn_q.weight". Parts: attn_norm, attn_q,
// attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down.
func LayerName(layer int, part string) string {
	return fmt.Sprintf("blk.%d.%s.weight", layer, part)
}
