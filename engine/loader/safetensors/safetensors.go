package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sort"

	"rigscope/engine/loader/internal/mmap"
	"rigscope/engine/tensor"
)

// MaxHeaderBytes bounds the JSON header (the reference implementation
// refuses headers over 100 MB).
const MaxHeaderBytes = 100 << 20

// elemBytes is the element size of each safetensors dtype.
var elemBytes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
	"U16": 2, "I16": 2, "F16": 2, "BF16": 2,
	"U32": 4, "I32": 4, "F32": 4,
	"U64": 8, "I64": 8, "F64": 8,
}

// loadable maps the dtypes that can be handed out as tensor.Tensor.
var loadable = map[string]tensor.DType{"F32": tensor.F32, "F16": tensor.F16, "BF16": tensor.BF16}

// TensorInfo describes one tensor in the header.
type TensorInfo struct {
	Name      string
	FileDType string       // as the header spells it: "BF16", "I64", ...
	DType     tensor.DType // meaningful only when Loadable
	Loadable  bool         // FileDType is F32, F16 or BF16
	Shape     []int        // outermost first
	Begin     uint64       // byte offsets in the data region
	End       uint64
}

// File is one parsed safetensors file.
type File struct {
	Path     string
	Metadata map[string]string // __metadata__
	Tensors  []TensorInfo      // sorted by Begin

	data   []byte // whole file
	base   uint64 // start of the data region
	mapped bool
	index  map[string]int
}

// Open memory-maps and parses the file at path.
func Open(path string) (*File, error) {
	data, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := parse(data, path)
	if err != nil {
		mmap.Unmap(data)
		return nil, err
	}
	f.mapped = true
	return f, nil
}

// Parse parses a safetensors file held in memory; the File aliases data.
func Parse(data []byte) (*File, error) { return parse(data, "<memory>") }

// Close releases the mapping.
func (f *File) Close() error {
	if f.mapped && f.data != nil {
		err := mmap.Unmap(f.data)
		f.data, f.mapped = nil, false
		if err != nil {
			return fmt.Errorf("safetensors: %s: unmap: %w", f.Path, err)
		}
	}
	return nil
}

// Info returns the description of a tensor.
func (f *File) Info(name string) (TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// Raw returns a tensor's description and bytes whatever its dtype (for
// integer and bool tensors such as an EAGLE head's d2t and t2d).
func (f *File) Raw(name string) (TensorInfo, []byte, error) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, nil, fmt.Errorf("safetensors: %s: no tensor %q", f.Path, name)
	}
	if f.data == nil {
		return TensorInfo{}, nil, fmt.Errorf("safetensors: %s: tensor %q: file is closed", f.Path, name)
	}
	ti := f.Tensors[i]
	lo, hi := f.base+ti.Begin, f.base+ti.End
	return ti, f.data[lo:hi:hi], nil
}

// Tensor returns a floating-point tensor with Data aliasing the file.
func (f *File) Tensor(name string) (*tensor.Tensor, error) {
	ti, data, err := f.Raw(name)
	if err != nil {
		return nil, err
	}
	if !ti.Loadable {
		return nil, fmt.Errorf("safetensors: %s: tensor %q has dtype %s, which is not supported (supported: F32, F16, BF16; F8_E4M3 with a quantization_config of quant_method fp8)", f.Path, name, ti.FileDType)
	}
	return f.tensor(ti, data)
}

// FP8Tensor returns an F8_E4M3 tensor with Data aliasing the file and no
// Scales: the caller attaches them from the tensors that hold them (the
// file format does not say which those are).
func (f *File) FP8Tensor(name string) (*tensor.Tensor, error) {
	ti, data, err := f.Raw(name)
	if err != nil {
		return nil, err
	}
	if ti.FileDType != "F8_E4M3" {
		return nil, fmt.Errorf("safetensors: %s: tensor %q has dtype %s, not F8_E4M3", f.Path, name, ti.FileDType)
	}
	ti.DType = tensor.F8_E4M3
	return f.tensor(ti, data)
}

func (f *File) tensor(ti TensorInfo, data []byte) (*tensor.Tensor, error) {
	t := &tensor.Tensor{Name: ti.Name, DType: ti.DType, Shape: append([]int(nil), ti.Shape...), Data: data}
	if len(t.Shape) == 0 {
		t.Shape = []int{1} // a scalar
	}
	if err := t.CheckBytes(); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", f.Path, err)
	}
	return t, nil
}

type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       []uint64 `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

func parse(data []byte, path string) (*File, error) {
	f, err := parseHeader(data, path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return f, nil
}

func parseHeader(data []byte, path string) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("not a safetensors file (%d bytes, too short for the header length)", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderBytes || n > uint64(len(data)-8) {
		return nil, fmt.Errorf("header length %d exceeds the file (%d bytes) or the %d-byte limit: not a safetensors file or truncated", n, len(data), MaxHeaderBytes)
	}
	hdr := data[8 : 8+n]
	if len(bytes.TrimSpace(hdr)) == 0 || bytes.TrimSpace(hdr)[0] != '{' {
		return nil, fmt.Errorf("header is not a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	f := &File{Path: path, data: data, base: 8 + n, index: make(map[string]int, len(raw))}
	dataLen := uint64(len(data)) - f.base
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__ is not a string map: %w", err)
			}
			continue
		}
		ti, err := checkEntry(name, msg, dataLen)
		if err != nil {
			return nil, err
		}
		f.Tensors = append(f.Tensors, ti)
	}
	sort.Slice(f.Tensors, func(i, j int) bool {
		a, b := f.Tensors[i], f.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.Name < b.Name
	})
	// As the reference implementation does, the tensors must tile the data
	// region: a hole means a header whose offsets do not describe the data.
	var end uint64
	for i, ti := range f.Tensors {
		switch {
		case i > 0 && ti.Begin < end:
			return nil, fmt.Errorf("tensors %q and %q overlap", f.Tensors[i-1].Name, ti.Name)
		case ti.Begin > end:
			return nil, fmt.Errorf("bytes %d to %d of the data region belong to no tensor (before %q): the header does not describe the data", end, ti.Begin, ti.Name)
		}
		end = ti.End
		f.index[ti.Name] = i
	}
	if end != dataLen {
		return nil, fmt.Errorf("the tensors end at byte %d of the %d-byte data region: the header does not describe the data", end, dataLen)
	}
	return f, nil
}

func checkEntry(name string, msg json.RawMessage, dataLen uint64) (TensorInfo, error) {
	var e headerEntry
	if err := json.Unmarshal(msg, &e); err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	size, ok := elemBytes[e.DType]
	if !ok {
		return TensorInfo{}, fmt.Errorf("tensor %q: unknown dtype %q", name, e.DType)
	}
	if len(e.DataOffsets) != 2 {
		return TensorInfo{}, fmt.Errorf("tensor %q: data_offsets %v is not [begin, end]", name, e.DataOffsets)
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin > end || end > dataLen {
		return TensorInfo{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the data region (%d bytes): truncated or corrupt", name, begin, end, dataLen)
	}
	if len(e.Shape) > 8 {
		return TensorInfo{}, fmt.Errorf("tensor %q: %d dimensions", name, len(e.Shape))
	}
	shape := make([]int, len(e.Shape))
	bytesNeeded := uint64(size)
	for i, d := range e.Shape {
		if d > math.MaxInt32 {
			return TensorInfo{}, fmt.Errorf("tensor %q: dimension %d is %d", name, i, d)
		}
		hi, lo := bits.Mul64(bytesNeeded, d)
		if hi != 0 || lo > math.MaxInt64 {
			return TensorInfo{}, fmt.Errorf("tensor %q: shape %v overflows", name, e.Shape)
		}
		bytesNeeded = lo
		shape[i] = int(d)
	}
	if bytesNeeded != end-begin {
		return TensorInfo{}, fmt.Errorf("tensor %q: %s %v needs %d bytes, data_offsets give %d", name, e.DType, e.Shape, bytesNeeded, end-begin)
	}
	dt, ok := loadable[e.DType]
	return TensorInfo{Name: name, FileDType: e.DType, DType: dt, Loadable: ok, Shape: shape, Begin: begin, End: end}, nil
}
