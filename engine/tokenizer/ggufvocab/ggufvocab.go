// Package ggufvocab reads a tokenizer.Vocab from GGUF metadata
// (tokenizer.ggml.*), so that package tokenizer need not import gguf.
package ggufvocab

import (
	"fmt"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/tokenizer"
)

// VocabFromGGUF reads the tokenizer.ggml.* keys of f, with llama.cpp's
// defaults for keys a file leaves out.
func VocabFromGGUF(f *gguf.File) (tokenizer.Vocab, error) {
	var v tokenizer.Vocab
	model, ok := f.String("tokenizer.ggml.model")
	if !ok {
		return v, fmt.Errorf("ggufvocab: %s: no tokenizer.ggml.model", f.Path)
	}
	v.Model = model
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return v, fmt.Errorf("ggufvocab: %s: no tokenizer.ggml.tokens string array", f.Path)
	}
	if _, present := f.Get("tokenizer.ggml.scores"); present {
		if v.Scores, ok = f.Float32s("tokenizer.ggml.scores"); !ok {
			return v, fmt.Errorf("ggufvocab: %s: tokenizer.ggml.scores is not a float32 array", f.Path)
		}
	}
	if _, present := f.Get("tokenizer.ggml.token_type"); present {
		if v.Types, ok = f.Int32s("tokenizer.ggml.token_type"); !ok {
			return v, fmt.Errorf("ggufvocab: %s: tokenizer.ggml.token_type is not an integer array", f.Path)
		}
	}
	if _, present := f.Get("tokenizer.ggml.merges"); present {
		if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
			return v, fmt.Errorf("ggufvocab: %s: tokenizer.ggml.merges is not a string array", f.Path)
		}
	}

	// llama.cpp's defaults per model (llama_vocab::impl::load).
	v.BOS, v.EOS, v.UNK = -1, -1, -1
	switch model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
	case "gpt2":
		switch v.Pre {
		case "llama3", "llama-v3", "llama-bpe", "falcon3", "tekken":
			v.AddBOS = true
		}
	}
	n := uint64(len(v.Tokens))
	for _, k := range []struct {
		key string
		dst *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS},
		{"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.unknown_token_id", &v.UNK},
	} {
		if id, ok := f.Uint(k.key); ok {
			if id >= n {
				return v, fmt.Errorf("ggufvocab: %s: %s = %d outside vocabulary of %d", f.Path, k.key, id, n)
			}
			*k.dst = int32(id)
		}
	}
	for _, p := range []*int32{&v.BOS, &v.EOS, &v.UNK} {
		if *p >= int32(n) {
			*p = -1
		}
	}
	if b, ok := f.Bool("tokenizer.ggml.add_bos_token"); ok {
		v.AddBOS = b
	}
	if b, ok := f.Bool("tokenizer.ggml.add_eos_token"); ok {
		v.AddEOS = b
	}
	if b, ok := f.Bool("tokenizer.ggml.add_space_prefix"); ok {
		v.AddSpacePrefix = b
	}
	if v.BOS < 0 {
		v.AddBOS = false
	}
	if v.EOS < 0 {
		v.AddEOS = false
	}
	return v, nil
}
