package synthetic

import (
	"fmt"
	"io"
	"strings"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// WriteGGUF writes the model as a GGUF v3 file that llama.cpp loads:
// general.architecture=llama with the llama.* hyperparameters, the ASCII
// SentencePiece vocabulary as tokenizer.ggml.* metadata, and every weight in
// the source's dtype (norms in F32) under its canonical name. The synthetic
// weights are defined in the interleaved RoPE layout GGUF uses, so both
// engines compute the same function from the file. It generates every
// tensor, so it holds the whole model in memory while it writes.
func (s *Source) WriteGGUF(w io.Writer) error {
	if err := s.CheckExportable(); err != nil {
		return err
	}
	names := s.TensorNames()
	ts := make([]*tensor.Tensor, 0, len(names))
	for _, n := range names {
		t, err := s.Tensor(n)
		if err != nil {
			return fmt.Errorf("synthetic %s: export: %w", s.preset, err)
		}
		ts = append(ts, t)
	}
	if err := gguf.Write(w, s.GGUFMeta(), ts); err != nil {
		return fmt.Errorf("synthetic %s: export: %w", s.preset, err)
	}
	return nil
}

// CheckExportable refuses a preset that a plain Llama GGUF cannot hold
// (mixture of experts, latent attention, Gemma 3, ...): written as llama,
// it would be read as another model.
func (s *Source) CheckExportable() error {
	if ext := s.cfg.Extensions(); len(ext) > 0 {
		return fmt.Errorf("synthetic %s: export writes a plain Llama GGUF; this preset has %s", s.preset, strings.Join(ext, ", "))
	}
	return nil
}

// GGUFMeta is the metadata WriteGGUF writes: general.architecture=llama
// with the llama.* hyperparameters and the vocabulary as tokenizer.ggml.*.
func (s *Source) GGUFMeta() []gguf.KV {
	c := s.cfg
	v := Vocab(c.Vocab)
	return []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: "rigscope-synthetic-" + s.preset},
		{Key: "general.alignment", Value: uint32(32)},
		{Key: "llama.context_length", Value: uint32(c.MaxSeq)},
		{Key: "llama.embedding_length", Value: uint32(c.Dim)},
		{Key: "llama.block_count", Value: uint32(c.Layers)},
		{Key: "llama.feed_forward_length", Value: uint32(c.FFN)},
		{Key: "llama.attention.head_count", Value: uint32(c.Heads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(c.KVHeads)},
		{Key: "llama.attention.key_length", Value: uint32(c.HeadDim)},
		{Key: "llama.attention.value_length", Value: uint32(c.HeadDim)},
		{Key: "llama.rope.dimension_count", Value: uint32(c.HeadDim)},
		{Key: "llama.rope.freq_base", Value: c.RopeTheta},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: c.NormEps},
		{Key: "llama.vocab_size", Value: uint32(c.Vocab)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: v.Tokens},
		{Key: "tokenizer.ggml.scores", Value: v.Scores},
		{Key: "tokenizer.ggml.token_type", Value: v.Types},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(v.BOS)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(v.EOS)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(v.UNK)},
		{Key: "tokenizer.ggml.add_bos_token", Value: v.AddBOS},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
	}
}

// TensorNames lists the model's tensors in the order WriteGGUF writes
// them (llama.cpp's): the embedding, each block's, the final norm, then
// the output projection unless it is tied.
func (s *Source) TensorNames() []string {
	c := s.cfg
	names := []string{model.NameTokEmbd}
	for l := 0; l < c.Layers; l++ {
		for _, part := range []string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"} {
			names = append(names, model.LayerName(l, part))
		}
	}
	names = append(names, model.NameOutputNorm)
	if !c.TiedEmbed {
		names = append(names, model.NameOutput)
	}
	return names
}

// Shape is the shape (outermost first) of tensor name, or false when the
// preset has no such tensor.
func (s *Source) Shape(name string) ([]int, bool) { return s.shape(name) }
