package llama2c

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"rigscope/engine/loader/internal/mmap"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// HeaderBytes is the size of the version-0 header.
const HeaderBytes = 7 * 4

// Header is the checkpoint's config as run.c reads it.
type Header struct {
	Dim, HiddenDim, Layers, Heads, KVHeads, VocabSize, SeqLen int32
}

// Shared reports whether the classifier reuses the token embedding.
func (h Header) Shared() bool { return h.VocabSize > 0 }

// Vocab is the vocabulary size (the absolute value of VocabSize).
func (h Header) Vocab() int {
	if h.VocabSize < 0 {
		return -int(h.VocabSize)
	}
	return int(h.VocabSize)
}

// HeadDim is dim / n_heads.
func (h Header) HeadDim() int { return int(h.Dim) / int(h.Heads) }

// Config converts the header to a model config.
func (h Header) Config() model.Config {
	return model.Config{
		Arch: "llama", Dim: int(h.Dim), Layers: int(h.Layers), Heads: int(h.Heads), KVHeads: int(h.KVHeads),
		HeadDim: h.HeadDim(), FFN: int(h.HiddenDim), Vocab: h.Vocab(), MaxSeq: int(h.SeqLen),
		NormEps: 1e-5, RopeTheta: 10000, RopeLayout: model.RopeInterleaved, TiedEmbed: h.Shared(),
	}
}

// section is one contiguous float32 array in the file, in run.c's order.
type section struct {
	name   string // run.c's field name
	layers int    // 0 for a global section, else the per-layer count
	shape  []int  // shape of one layer's slice (or of the whole section)
}

func (h Header) sections() []section {
	d, f, L := int(h.Dim), int(h.HiddenDim), int(h.Layers)
	kv := d * int(h.KVHeads) / int(h.Heads)
	ss := []section{
		{"token_embedding_table", 0, []int{h.Vocab(), d}},
		{"rms_att_weight", L, []int{d}},
		{"wq", L, []int{d, d}},
		{"wk", L, []int{kv, d}},
		{"wv", L, []int{kv, d}},
		{"wo", L, []int{d, d}},
		{"rms_ffn_weight", L, []int{d}},
		{"w1", L, []int{f, d}},
		{"w2", L, []int{d, f}},
		{"w3", L, []int{f, d}},
		{"rms_final_weight", 0, []int{d}},
		{"freq_cis_real", 0, []int{int(h.SeqLen), h.HeadDim() / 2}},
		{"freq_cis_imag", 0, []int{int(h.SeqLen), h.HeadDim() / 2}},
	}
	if !h.Shared() {
		ss = append(ss, section{"wcls", 0, []int{h.Vocab(), d}})
	}
	return ss
}

// canonical maps run.c's per-layer field names to GGUF part names.
var canonical = map[string]string{
	"rms_att_weight": "attn_norm", "wq": "attn_q", "wk": "attn_k", "wv": "attn_v", "wo": "attn_output",
	"rms_ffn_weight": "ffn_norm", "w1": "ffn_gate", "w2": "ffn_down", "w3": "ffn_up",
}

var globalNames = map[string]string{
	"token_embedding_table": model.NameTokEmbd,
	"rms_final_weight":      model.NameOutputNorm,
	"wcls":                  model.NameOutput,
	"freq_cis_real":         "freq_cis_real",
	"freq_cis_imag":         "freq_cis_imag",
}

// Validate checks the header's sizes and returns the number of float32
// weights it implies, or an error.
func (h Header) Validate() (uint64, error) {
	switch {
	case h.Dim <= 0 || h.HiddenDim <= 0 || h.Layers <= 0 || h.Heads <= 0 || h.KVHeads <= 0 || h.VocabSize == 0 || h.SeqLen <= 0:
		return 0, fmt.Errorf("header %+v has a non-positive size", h)
	case h.VocabSize == math.MinInt32:
		return 0, fmt.Errorf("header %+v: vocab size out of range", h)
	case h.Dim%h.Heads != 0:
		return 0, fmt.Errorf("header %+v: dim %d not divisible by %d heads", h, h.Dim, h.Heads)
	case h.Heads%h.KVHeads != 0:
		return 0, fmt.Errorf("header %+v: %d heads not divisible by %d kv heads", h, h.Heads, h.KVHeads)
	case h.HeadDim()%2 != 0:
		return 0, fmt.Errorf("header %+v: head dim %d is odd", h, h.HeadDim())
	}
	var total uint64
	for _, s := range h.sections() {
		n := uint64(max(s.layers, 1))
		for _, d := range s.shape {
			hi, lo := bits.Mul64(n, uint64(d))
			if hi != 0 || lo > 1<<60 {
				return 0, fmt.Errorf("header %+v: size of %s overflows", h, s.name)
			}
			n = lo
		}
		total += n
		if total > 1<<60 {
			return 0, fmt.Errorf("header %+v: total size overflows", h)
		}
	}
	return total, nil
}

// ReadHeader decodes the header from the first HeaderBytes of data.
func ReadHeader(data []byte) (Header, error) {
	if len(data) < HeaderBytes {
		return Header{}, fmt.Errorf("%d bytes is too short for the %d-byte header", len(data), HeaderBytes)
	}
	v := func(i int) int32 { return int32(binary.LittleEndian.Uint32(data[4*i:])) }
	return Header{v(0), v(1), v(2), v(3), v(4), v(5), v(6)}, nil
}

// Sniff reports whether data begins with a version-0 header whose implied
// weights fill exactly size bytes.
func Sniff(data []byte, size int64) bool {
	h, err := ReadHeader(data)
	if err != nil {
		return false
	}
	n, err := h.Validate()
	return err == nil && uint64(size) == HeaderBytes+4*n
}

// File is an opened checkpoint.
type File struct {
	Path    string
	Header  Header
	tensors map[string]*tensor.Tensor
	data    []byte
	mapped  bool
}

// Open memory-maps and parses the checkpoint at path.
func Open(path string) (*File, error) {
	data, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %w", err)
	}
	f, err := parse(data, path)
	if err != nil {
		mmap.Unmap(data)
		return nil, err
	}
	f.mapped = true
	return f, nil
}

// Parse parses a checkpoint held in memory; the File aliases data.
func Parse(data []byte) (*File, error) { return parse(data, "<memory>") }

func parse(data []byte, path string) (*File, error) {
	h, err := ReadHeader(data)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", path, err)
	}
	n, err := h.Validate()
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", path, err)
	}
	if want := HeaderBytes + 4*n; uint64(len(data)) != want {
		return nil, fmt.Errorf("llama2c: %s: header %+v implies %d bytes, the file has %d: truncated, or not a version-0 llama2.c checkpoint", path, h, want, len(data))
	}
	f := &File{Path: path, Header: h, tensors: map[string]*tensor.Tensor{}, data: data}
	off := HeaderBytes
	for _, s := range h.sections() {
		size := 4
		for _, d := range s.shape {
			size *= d
		}
		for l := range max(s.layers, 1) {
			name := globalNames[s.name]
			if s.layers > 0 {
				name = model.LayerName(l, canonical[s.name])
			}
			f.tensors[name] = &tensor.Tensor{Name: name, DType: tensor.F32, Shape: s.shape, Data: data[off : off+size : off+size]}
			off += size
		}
	}
	return f, nil
}

// Names lists the tensors (canonical names, plus freq_cis_real/imag).
func (f *File) Names() []string {
	out := make([]string, 0, len(f.tensors))
	for n := range f.tensors {
		out = append(out, n)
	}
	return out
}

// Tensor returns a weight by canonical name, aliasing the file.
func (f *File) Tensor(name string) (*tensor.Tensor, error) {
	if f.data == nil {
		return nil, fmt.Errorf("llama2c: %s: tensor %q: file is closed", f.Path, name)
	}
	t, ok := f.tensors[name]
	if !ok {
		return nil, fmt.Errorf("llama2c: %s: no tensor %q", f.Path, name)
	}
	c := *t
	c.Shape = append([]int(nil), t.Shape...)
	return &c, nil
}

// Close releases the mapping.
func (f *File) Close() error {
	if f.mapped && f.data != nil {
		err := mmap.Unmap(f.data)
		f.data, f.mapped = nil, false
		if err != nil {
			return fmt.Errorf("llama2c: %s: unmap: %w", f.Path, err)
		}
	}
	return nil
}
