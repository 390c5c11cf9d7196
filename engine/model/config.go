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

	// Extensions of the Llama block; the zero value of each is plain Llama.
	RopeScaling   RopeScaling
	QKVBias       bool // q, k and v projections add a bias (Qwen2)
	QKNorm        bool // RMSNorm over each query and key head before RoPE (Qwen3)
	SlidingWindow int  // > 0: a token attends to the last SlidingWindow positions, itself included (Mistral; Gemma 3: its local layers only)
	MoE           MoE  // mixture-of-experts MLP (Mixtral, Qwen3-MoE, DeepSeek-V3); moe.go
	MLA           MLA  // multi-head latent attention (DeepSeek-V3); mla.go

	Gemma Gemma3 // Gemma 3's block (gemma.go); the zero value: not Gemma
}

// Extensions names each extension of the Llama block that c uses, for a
// device that implements none of them to refuse by name.
func (c *Config) Extensions() []string {
	var ext []string
	if c.RopeScaling.Type != RopeScaleNone {
		ext = append(ext, "RoPE scaling "+c.RopeScaling.String())
	}
	if c.QKVBias {
		ext = append(ext, "q/k/v projection biases")
	}
	if c.QKNorm {
		ext = append(ext, "q/k head norms")
	}
	if c.SlidingWindow > 0 {
		ext = append(ext, fmt.Sprintf("sliding-window attention (window %d)", c.SlidingWindow))
	}
	if c.MoE.Enabled() {
		ext = append(ext, "mixture of experts ("+c.MoE.String()+")")
	}
	if c.MLA.Enabled() {
		ext = append(ext, "multi-head latent attention ("+c.MLA.String()+")")
	}
	return append(ext, c.Gemma.extensions()...)
}

// Bounds on what a model file may state, each far beyond any real model;
// a value outside them is refused by name (with the number) before
// anything is sized by it.
const (
	MaxDim     = 1 << 20 // hidden size
	MaxLayers  = 1 << 12
	MaxHeads   = 1 << 12
	MaxHeadDim = 1 << 12
	MaxFFN     = 1 << 22
	MaxVocab   = 1 << 24
	MaxContext = 1 << 24 // trained context, tokens
)

// Defaults for a Config whose caller states none (the zero value). Loaders
// apply their format's own defaults only when a file leaves a value out,
// and refuse one it states wrongly.
const (
	DefaultMaxSeq    = 2048
	DefaultNormEps   = 1e-5
	DefaultRopeTheta = 10000
)

// CheckRopeTheta refuses a RoPE base that is not a finite number above 1
// (1 would rotate every pair by the same angle) or beyond 1e12, as the
// engine holds it (a float32).
func CheckRopeTheta(v float64) error {
	if v32 := float64(float32(v)); !(v32 > 1 && v32 <= 1e12) {
		return fmt.Errorf("RoPE base %.6g is not a finite number above 1 and at most 1e12 (as a float32)", v)
	}
	return nil
}

// CheckNormEps refuses an RMSNorm epsilon that is not a finite number above
// 0 and at most 0.1 (real models use 1e-6 to 1e-5), as the engine holds it
// (a float32: 1e-50 would be 0).
func CheckNormEps(v float64) error {
	if v32 := float64(float32(v)); !(v32 > 0 && v32 <= 0.1) {
		return fmt.Errorf("norm epsilon %.6g is not a finite number above 0 and at most 0.1 (as a float32)", v)
	}
	return nil
}

// CheckContext refuses a trained context length outside 1..MaxContext.
func CheckContext(n int) error {
	if n <= 0 || n > MaxContext {
		return fmt.Errorf("context length %d is not between 1 and %d", n, MaxContext)
	}
	return nil
}

// Validate reports the first inconsistent or out-of-range field, with its
// value. MaxSeq, NormEps and RopeTheta left at zero get the defaults above;
// any other value must pass CheckContext, CheckNormEps and CheckRopeTheta.
func (c *Config) Validate() error { return c.ValidateNamed(SizeNames{}) }

// SizeNames are a file format's names for Config's sizes (config.json's
// hidden_size, GGUF's llama.embedding_length, ...), for messages; an empty
// name is the generic one.
type SizeNames struct{ Dim, Layers, Heads, KVHeads, HeadDim, FFN, Vocab string }

func or(name, generic string) string {
	if name != "" {
		return name
	}
	return generic
}

// ValidateNamed is Validate with the sizes named as the file names them.
func (c *Config) ValidateNamed(n SizeNames) error {
	for _, s := range []struct {
		name   string
		v, max int
	}{
		{or(n.Dim, "hidden size"), c.Dim, MaxDim}, {or(n.Layers, "layers"), c.Layers, MaxLayers},
		{or(n.Heads, "attention heads"), c.Heads, MaxHeads}, {or(n.KVHeads, "kv heads"), c.KVHeads, MaxHeads},
		{or(n.HeadDim, "head dim"), c.HeadDim, MaxHeadDim}, {or(n.FFN, "ffn size"), c.FFN, MaxFFN},
		{or(n.Vocab, "vocab size"), c.Vocab, MaxVocab},
	} {
		if s.v <= 0 || s.v > s.max {
			return fmt.Errorf("config: %s %d is not between 1 and %d (%s)", s.name, s.v, s.max, c.Sizes())
		}
	}
	switch {
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("config: %d %s are not divisible by %d %s", c.Heads, or(n.Heads, "attention heads"), c.KVHeads, or(n.KVHeads, "kv heads"))
	case c.HeadDim%2 != 0:
		return fmt.Errorf("config: %s %d is odd; RoPE needs pairs", or(n.HeadDim, "head dim"), c.HeadDim)
	}
	if c.MaxSeq == 0 {
		c.MaxSeq = DefaultMaxSeq
	}
	if c.NormEps == 0 {
		c.NormEps = DefaultNormEps
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = DefaultRopeTheta
	}
	if err := CheckContext(c.MaxSeq); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := CheckNormEps(float64(c.NormEps)); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := CheckRopeTheta(float64(c.RopeTheta)); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.RopeScaling.Check(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.SlidingWindow < 0 || c.SlidingWindow > MaxContext {
		return fmt.Errorf("config: sliding window %d is not between 0 (none) and %d", c.SlidingWindow, MaxContext)
	}
	if err := c.MoE.check(c.Layers); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.MLA.check(c); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.Gemma.check(c); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// Sizes describes the config's shape in one phrase, for messages.
func (c *Config) Sizes() string {
	return fmt.Sprintf("dim %d, %d layers, %d heads, %d kv heads, head dim %d, ffn %d, vocab %d", c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab)
}

// Canonical tensor names (GGUF's). Loaders for other formats map their
// names to these.
const (
	NameTokEmbd    = "token_embd.weight"
	NameOutputNorm = "output_norm.weight"
	NameOutput     = "output.weight"
	NameRopeFreqs  = "rope_freqs.weight" // (head dim / 2) per-pair frequency divisors
)

// LayerName returns the canonical name of a per-layer tensor, e.g.
// LayerName(3, "attn_q") = "blk.3.attn_q.weight". Parts: attn_norm, attn_q,
// attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, and
// attn_q_norm, attn_k_norm (QKNorm).
func LayerName(layer int, part string) string {
	return fmt.Sprintf("blk.%d.%s.weight", layer, part)
}

// LayerBias returns the canonical name of a per-layer bias, e.g.
// LayerBias(3, "attn_q") = "blk.3.attn_q.bias" (QKVBias: attn_q, attn_k,
// attn_v).
func LayerBias(layer int, part string) string {
	return fmt.Sprintf("blk.%d.%s.bias", layer, part)
}
