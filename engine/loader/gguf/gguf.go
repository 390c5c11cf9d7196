package gguf

import (
	"fmt"

	"rigscope/engine/loader/internal/mmap"
	"rigscope/engine/tensor"
)

// File is a parsed GGUF file. Its metadata is copied out of the file; tensor
// data is not: Tensor returns views of the data region.
type File struct {
	Version uint32
	Path    string // the file's path, or "<memory>" for Parse
	KV      []KV
	Tensors []TensorInfo

	Alignment  uint64 // general.alignment, default 32
	DataOffset uint64 // file offset of the data region (a multiple of Alignment)

	data    []byte         // the whole file (mapped or caller-owned)
	mapped  bool           // data is an mmap that Close unmaps
	kvIndex map[string]int // key -> index in KV
	tIndex  map[string]int // tensor name -> index in Tensors
}

// KV is one metadata entry. Value is one of uint8, int8, uint16, int16,
// uint32, int32, uint64, int64, float32, float64, bool, string, or an array:
// []uint8, []int8, []uint16, []int16, []uint32, []int32, []uint64, []int64,
// []float32, []float64, []bool, []string, or []any for arrays of arrays
// (each element itself one of these slice types).
type KV struct {
	Key   string
	Value any
}

// TensorInfo describes one tensor as the file lists it.
type TensorInfo struct {
	Name   string
	DType  tensor.DType // meaningful only when Type.Supported()
	Shape  []int        // outermost first (GGUF's dims reversed)
	Offset uint64       // from the start of the data region
	Type   GGMLType     // the file's type id
	Size   uint64       // storage bytes; 0 when Type's geometry is unknown
}

// Open memory-maps the GGUF file at path read-only and parses it. The
// returned File must be closed; tensors it hands out are invalid after Close.
func Open(path string) (*File, error) {
	data, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := parse(data, path)
	if err != nil {
		mmap.Unmap(data)
		return nil, err
	}
	f.mapped = true
	// The metadata (the vocabulary, mostly) has been copied out: its pages
	// need not stay resident beside the copy. Best effort: on error they
	// stay mapped, which costs memory only.
	_ = mmap.Release(data[:min(f.DataOffset, uint64(len(data)))])
	return f, nil
}

// Parse parses a GGUF file held in memory. The File aliases data.
func Parse(data []byte) (*File, error) {
	return parse(data, "<memory>")
}

// Close releases the mapping (a no-op for Parse'd files).
func (f *File) Close() error {
	if f.mapped && f.data != nil {
		err := mmap.Unmap(f.data)
		f.data = nil
		f.mapped = false
		if err != nil {
			return fmt.Errorf("gguf: %s: unmap: %w", f.Path, err)
		}
	}
	return nil
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// String returns a string-valued key.
func (f *File) String(key string) (string, bool) {
	v, _ := f.Get(key)
	s, ok := v.(string)
	return s, ok
}

// Uint returns an integer-valued key of any integer type; negative values
// are refused.
func (f *File) Uint(key string) (uint64, bool) {
	v, _ := f.Get(key)
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// Float returns a key of any numeric type as float64.
func (f *File) Float(key string) (float64, bool) {
	v, _ := f.Get(key)
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	if u, ok := f.Uint(key); ok {
		return float64(u), true
	}
	return 0, false
}

// Bool returns a bool-valued key.
func (f *File) Bool(key string) (bool, bool) {
	v, _ := f.Get(key)
	b, ok := v.(bool)
	return b, ok
}

// Strings returns a string-array key.
func (f *File) Strings(key string) ([]string, bool) {
	v, _ := f.Get(key)
	s, ok := v.([]string)
	return s, ok
}

// Float32s returns a float32-array key.
func (f *File) Float32s(key string) ([]float32, bool) {
	v, _ := f.Get(key)
	s, ok := v.([]float32)
	return s, ok
}

// Int32s returns an integer-array key of any integer element type converted
// to int32; it fails when a value does not fit.
func (f *File) Int32s(key string) ([]int32, bool) {
	v, _ := f.Get(key)
	switch x := v.(type) {
	case []int32:
		return x, true
	case []uint8:
		return convInts(x)
	case []int8:
		return convInts(x)
	case []uint16:
		return convInts(x)
	case []int16:
		return convInts(x)
	case []uint32:
		return convInts(x)
	case []uint64:
		return convInts(x)
	case []int64:
		return convInts(x)
	}
	return nil, false
}

func convInts[T uint8 | int8 | uint16 | int16 | uint32 | uint64 | int64](s []T) ([]int32, bool) {
	out := make([]int32, len(s))
	for i, v := range s {
		if int64(v) != int64(int32(v)) || (v > 0 && int32(v) < 0) {
			return nil, false
		}
		out[i] = int32(v)
	}
	return out, true
}

// Info returns the description of a tensor.
func (f *File) Info(name string) (TensorInfo, bool) {
	i, ok := f.tIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// Tensor returns the named tensor with Data aliasing the file's data region.
func (f *File) Tensor(name string) (*tensor.Tensor, error) {
	i, ok := f.tIndex[name]
	if !ok {
		return nil, fmt.Errorf("gguf: %s: no tensor %q", f.Path, name)
	}
	if f.data == nil {
		return nil, fmt.Errorf("gguf: %s: tensor %q: file is closed", f.Path, name)
	}
	ti := f.Tensors[i]
	if !ti.Type.Supported() {
		return nil, fmt.Errorf("gguf: %s: tensor %q has type %v, which is not supported (supported: %s)", f.Path, name, ti.Type, supportedTypeNames())
	}
	start := f.DataOffset + ti.Offset
	t := &tensor.Tensor{
		Name:  ti.Name,
		DType: ti.DType,
		Shape: append([]int(nil), ti.Shape...),
		Data:  f.data[start : start+ti.Size : start+ti.Size],
	}
	if err := t.Check(); err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", f.Path, err)
	}
	return t, nil
}
