// Package loader opens model files of any supported format (GGUF, Hugging
// Face safetensors directories, llama2.c checkpoints, synthetic presets)
// behind one Source interface. The format is sniffed from the path.
//
// A model is never run silently wrong: a file whose config, metadata or
// tensors ask for anything the engine does not implement (a RoPE scaling,
// window, bias, norm, expert layout or attention variant beyond what its
// architecture's entry reads, quantization, another architecture, a tensor
// nothing reads) is refused with an
// *unsupported.Error that names each; the floats and sizes a file states
// are range-checked, and only an absent one gets a default.
package loader

import (
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tokenizer"
)

// Source is an opened model: its config, its weights by canonical name
// (model.LayerName), and its tokenizer. Weights alias the (memory-mapped)
// file and stay valid until Close.
type Source interface {
	Config() model.Config
	// Tensor returns the weight with the canonical name, or an error naming
	// the file and the tensor when it is missing.
	Tensor(name string) (*tensor.Tensor, error)
	// Tokenizer returns the model's tokenizer, or an error that says how to
	// supply one (--tokenizer) when the file has none.
	Tokenizer() (tokenizer.Tokenizer, error)
	// Meta is free-form metadata for display (format, file, dtype, template).
	Meta() map[string]string
	Close() error
}
