// Package quant writes a model as a GGUF file of a chosen weight type
// (q4_k_m, q8_0, q4_0, bf16, f16), choosing each tensor's type as
// llama-quantize does for that file type and quantizing with ggml's
// reference quantizers (tensor.Encode), so llama.cpp and rigscope can be
// timed on the same bytes without a download.
package quant

import (
	"fmt"
	"strconv"
	"strings"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// FileType is a GGUF file's weight type as llama-quantize names it.
type FileType string

// The file types WriteGGUF writes.
const (
	Q4KM FileType = "q4_k_m"
	Q8_0 FileType = "q8_0"
	Q4_0 FileType = "q4_0"
	BF16 FileType = "bf16"
	F16  FileType = "f16"
)

// FileTypes lists them in the order help texts give them.
var FileTypes = []FileType{Q4KM, Q8_0, Q4_0, BF16, F16}

// ParseFileType reads a file type name, in any case.
func ParseFileType(s string) (FileType, error) {
	for _, f := range FileTypes {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	names := make([]string, len(FileTypes))
	for i, f := range FileTypes {
		names[i] = string(f)
	}
	return "", fmt.Errorf("file type %q is not one this writer makes (%s)", s, strings.Join(names, ", "))
}

// ggmlFileType is llama.cpp's llama_ftype number, written as
// general.file_type.
func (f FileType) ggmlFileType() uint32 {
	switch f {
	case F16:
		return 1
	case Q4_0:
		return 2
	case Q8_0:
		return 7
	case Q4KM:
		return 15
	}
	return 32 // BF16
}

func (f FileType) quantized() bool { return f != BF16 && f != F16 }

// TensorType is the type a tensor of shape (outermost first) named name
// gets in a file of type f whose model has layers blocks, as
// llama_tensor_get_type chooses it for the llama architecture: vectors stay
// F32; the output projection (the embedding, when it is tied) is Q6_K in
// q4_k_m and q4_0 files; in q4_k_m, attn_v and ffn_down are Q6_K in the
// layers useMoreBits picks and Q4_K elsewhere, as is every other matrix.
// A matrix whose rows are not whole blocks of its type falls back to Q8_0,
// or F16 when they are not whole 32-blocks either (llama.cpp falls back to
// Q5_0, Q5_1 or Q8_0 there, which rigscope does not all read).
func (f FileType) TensorType(name string, shape []int, layers int, tied bool) tensor.DType {
	if len(shape) < 2 {
		return tensor.F32
	}
	dt := f.matrixType(name, layers, tied)
	cols := shape[len(shape)-1]
	if cols%dt.BlockSize() != 0 {
		dt = tensor.Q8_0
		if cols%32 != 0 {
			dt = tensor.F16
		}
	}
	return dt
}

func (f FileType) matrixType(name string, layers int, tied bool) tensor.DType {
	output := name == model.NameOutput || (tied && name == model.NameTokEmbd)
	switch f {
	case BF16:
		return tensor.BF16
	case F16:
		return tensor.F16
	case Q8_0:
		return tensor.Q8_0
	case Q4_0:
		if output {
			return tensor.Q6_K
		}
		return tensor.Q4_0
	}
	if output {
		return tensor.Q6_K
	}
	if l, part, ok := layerPart(name); ok && (part == "attn_v" || part == "ffn_down") && useMoreBits(l, layers) {
		return tensor.Q6_K
	}
	return tensor.Q4_K
}

// useMoreBits is llama-quantize's choice of the layers whose attn_v and
// ffn_down get more bits: the first and last eighth, and every third
// between.
func useMoreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

// layerPart splits "blk.N.PART.weight".
func layerPart(name string) (layer int, part string, ok bool) {
	rest, found := strings.CutPrefix(name, "blk.")
	if !found {
		return 0, "", false
	}
	num, rest, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	l, err := strconv.Atoi(num)
	if err != nil {
		return 0, "", false
	}
	return l, strings.TrimSuffix(rest, ".weight"), true
}
