package quant

import (
	"fmt"
	"io"
	"strings"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// Source is a model WriteGGUF can write: its metadata, its tensors in file
// order, and each tensor's values encoded in a given type.
type Source interface {
	Meta() []gguf.KV
	Tensors() []gguf.TensorSpec // DType: the source's own
	Layers() int
	// Encode returns tensor i encoded as dt (a new buffer).
	Encode(i int, dt tensor.DType) ([]byte, error)
	Close() error
}

// Open opens "synthetic:PRESET[?seed=N&layers=N]" or a GGUF file as a
// Source.
func Open(spec string) (Source, error) {
	if strings.HasPrefix(spec, "synthetic:") {
		s, err := synthetic.Open(spec)
		if err != nil {
			return nil, err
		}
		if err := s.CheckExportable(); err != nil {
			s.Close()
			return nil, err
		}
		return &syntheticSource{s: s}, nil
	}
	if !strings.HasSuffix(strings.ToLower(spec), ".gguf") {
		return nil, fmt.Errorf("quant: model %q: want synthetic:PRESET (%s) or a .gguf file", spec, strings.Join(synthetic.PresetNames(), ", "))
	}
	f, err := gguf.Open(spec)
	if err != nil {
		return nil, err
	}
	return newGGUFSource(f)
}

// WriteGGUF writes src to w as a GGUF file of type ft, one tensor at a
// time: each tensor's type is ft.TensorType's choice, its values those of
// src re-encoded (tensors already in that type are copied as they are).
// general.file_type says ft as llama.cpp numbers it.
func WriteGGUF(w io.Writer, src Source, ft FileType) error {
	specs := src.Tensors()
	tied := true
	for _, s := range specs {
		if s.Name == model.NameOutput {
			tied = false
		}
	}
	out := make([]gguf.TensorSpec, len(specs))
	for i, s := range specs {
		out[i] = gguf.TensorSpec{Name: s.Name, Shape: s.Shape, DType: ft.TensorType(s.Name, s.Shape, src.Layers(), tied)}
	}
	var kv []gguf.KV
	for _, e := range src.Meta() {
		if e.Key != "general.file_type" && e.Key != "general.quantization_version" {
			kv = append(kv, e)
		}
	}
	kv = append(kv, gguf.KV{Key: "general.file_type", Value: ft.ggmlFileType()})
	if ft.quantized() {
		kv = append(kv, gguf.KV{Key: "general.quantization_version", Value: uint32(2)})
	}
	return gguf.WriteFunc(w, kv, out, func(i int) ([]byte, error) { return src.Encode(i, out[i].DType) })
}

type syntheticSource struct{ s *synthetic.Source }

func (s *syntheticSource) Meta() []gguf.KV { return s.s.GGUFMeta() }
func (s *syntheticSource) Layers() int     { return s.s.Config().Layers }
func (s *syntheticSource) Close() error    { return s.s.Close() }

func (s *syntheticSource) Tensors() []gguf.TensorSpec {
	var specs []gguf.TensorSpec
	for _, n := range s.s.TensorNames() {
		shape, _ := s.s.Shape(n)
		specs = append(specs, gguf.TensorSpec{Name: n, DType: tensor.F32, Shape: shape})
	}
	return specs
}

func (s *syntheticSource) Encode(i int, dt tensor.DType) ([]byte, error) {
	t, err := s.s.Generate(s.s.TensorNames()[i], dt)
	if err != nil {
		return nil, err
	}
	return t.Data, nil
}

// ggufSource re-encodes the tensors of a GGUF file (any type the CPU
// kernels dequantize).
type ggufSource struct {
	f      *gguf.File
	layers int
}

func newGGUFSource(f *gguf.File) (*ggufSource, error) {
	s := &ggufSource{f: f}
	for _, ti := range f.Tensors {
		if !ti.Type.Supported() {
			f.Close()
			return nil, fmt.Errorf("quant: %s: tensor %q has type %v, which cannot be read (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)", f.Path, ti.Name, ti.Type)
		}
		if l, _, ok := layerPart(ti.Name); ok {
			s.layers = max(s.layers, l+1)
		}
	}
	return s, nil
}

func (s *ggufSource) Meta() []gguf.KV { return s.f.KV }
func (s *ggufSource) Layers() int     { return s.layers }
func (s *ggufSource) Close() error    { return s.f.Close() }

func (s *ggufSource) Tensors() []gguf.TensorSpec {
	specs := make([]gguf.TensorSpec, len(s.f.Tensors))
	for i, ti := range s.f.Tensors {
		specs[i] = gguf.TensorSpec{Name: ti.Name, DType: ti.DType, Shape: ti.Shape}
	}
	return specs
}

func (s *ggufSource) Encode(i int, dt tensor.DType) ([]byte, error) {
	t, err := s.f.Tensor(s.f.Tensors[i].Name)
	if err != nil {
		return nil, err
	}
	if t.DType == dt {
		return t.Data, nil
	}
	if err := cpu.Supported(t.DType); err != nil {
		return nil, err
	}
	shape := t.Shape
	if len(shape) == 1 {
		shape = []int{1, shape[0]}
	}
	rb, err := dt.Bytes(shape[len(shape)-1])
	if err != nil {
		return nil, err
	}
	src := &tensor.Tensor{Name: t.Name, DType: t.DType, Shape: shape, Data: t.Data}
	dst := &tensor.Tensor{Name: t.Name, DType: dt, Shape: shape, Data: make([]byte, src.Rows()*rb)}
	tensor.FillRows(dst, func(r int, row []float32) { cpu.DequantRow(row, src, r) })
	return dst.Data, nil
}
