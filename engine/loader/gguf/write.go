package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"reflect"

	"rigscope/engine/tensor"
)

// Write writes a GGUF v3 file: the metadata kv in order, then the tensors
// (Shape outermost first, as tensor.Tensor has it; written innermost first
// as GGUF wants) with their data aligned to general.alignment when kv sets
// it, else 32. Values must be of the types KV documents.
func Write(w io.Writer, kv []KV, tensors []*tensor.Tensor) error {
	specs := make([]TensorSpec, len(tensors))
	for i, t := range tensors {
		if err := t.Check(); err != nil {
			return fmt.Errorf("gguf: write: %w", err)
		}
		specs[i] = TensorSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	return WriteFunc(w, kv, specs, func(i int) ([]byte, error) { return tensors[i].Data, nil })
}

// TensorSpec is a tensor to be written without its data: WriteFunc asks for
// the data of each in turn, so a writer need not hold every tensor at once.
type TensorSpec struct {
	Name  string
	DType tensor.DType
	Shape []int // outermost first
}

// WriteFunc is Write with the tensors' data produced one at a time, in
// order, by data(i) (which must return exactly the bytes specs[i]'s dtype
// and shape take).
func WriteFunc(w io.Writer, kv []KV, specs []TensorSpec, data func(i int) ([]byte, error)) error {
	align := uint64(DefaultAlignment)
	for _, e := range kv {
		if e.Key != "general.alignment" {
			continue
		}
		a, ok := asUint(e.Value)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: write: general.alignment %v is not a power of two", e.Value)
		}
		align = a
	}
	sizes := make([]int, len(specs))
	for i, t := range specs {
		if len(t.Shape) == 0 || len(t.Shape) > maxDims {
			return fmt.Errorf("gguf: write: tensor %q: %d dimensions (want 1 to %d)", t.Name, len(t.Shape), maxDims)
		}
		n := 1
		for _, d := range t.Shape {
			if d <= 0 {
				return fmt.Errorf("gguf: write: tensor %q: shape %v", t.Name, t.Shape)
			}
			n *= d
		}
		b, err := t.DType.Bytes(n)
		if err == nil && t.DType.BlockSize() > 1 && t.Shape[len(t.Shape)-1]%t.DType.BlockSize() != 0 {
			err = fmt.Errorf("dtype %v: rows of %d are not whole %d-element blocks", t.DType, t.Shape[len(t.Shape)-1], t.DType.BlockSize())
		}
		if err != nil {
			return fmt.Errorf("gguf: write: tensor %q: %w", t.Name, err)
		}
		sizes[i] = b
	}
	bw := bufio.NewWriter(w)
	cw := &countWriter{w: bw}
	e := &encoder{w: cw}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(specs)))
	e.u64(uint64(len(kv)))
	for _, entry := range kv {
		e.str(entry.Key)
		if err := e.value(entry.Value, true); err != nil {
			return fmt.Errorf("gguf: write: metadata %q: %w", entry.Key, err)
		}
	}
	var off uint64
	for i, t := range specs {
		typ, err := GGMLTypeOf(t.DType)
		if err != nil {
			return fmt.Errorf("gguf: write: tensor %q: %w", t.Name, err)
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for d := len(t.Shape) - 1; d >= 0; d-- {
			e.u64(uint64(t.Shape[d]))
		}
		e.u32(uint32(typ))
		e.u64(off)
		off = alignUp(off+uint64(sizes[i]), align)
	}
	e.pad(align)
	for i, t := range specs {
		if i > 0 {
			e.pad(align)
		}
		if e.err != nil {
			break
		}
		b, err := data(i)
		if err != nil {
			return fmt.Errorf("gguf: write: tensor %q: %w", t.Name, err)
		}
		if len(b) != sizes[i] {
			return fmt.Errorf("gguf: write: tensor %q: %d bytes of data, want %d for %v %v", t.Name, len(b), sizes[i], t.DType, t.Shape)
		}
		e.raw(b)
	}
	if e.err != nil {
		return fmt.Errorf("gguf: write: %w", e.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

func asUint(v any) (uint64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint(), true
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		if rv.Int() >= 0 {
			return uint64(rv.Int()), true
		}
	}
	return 0, false
}

type countWriter struct {
	w io.Writer
	n uint64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

// encoder writes little-endian values, remembering the first error.
type encoder struct {
	w   *countWriter
	err error
	buf [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u8(v uint8) { e.raw([]byte{v}) }
func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:2], v)
	e.raw(e.buf[:2])
}
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.raw(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.raw(e.buf[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

func (e *encoder) pad(align uint64) {
	if n := alignUp(e.w.n, align) - e.w.n; n > 0 {
		e.raw(make([]byte, n))
	}
}

// typeOf returns the GGUF value type of a Go value.
func typeOf(v any) (uint32, error) {
	switch v.(type) {
	case uint8:
		return typUint8, nil
	case int8:
		return typInt8, nil
	case uint16:
		return typUint16, nil
	case int16:
		return typInt16, nil
	case uint32:
		return typUint32, nil
	case int32:
		return typInt32, nil
	case uint64:
		return typUint64, nil
	case int64:
		return typInt64, nil
	case float32:
		return typFloat32, nil
	case float64:
		return typFloat64, nil
	case bool:
		return typBool, nil
	case string:
		return typString, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []uint64, []int64,
		[]float32, []float64, []bool, []string, []any:
		return typArray, nil
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}

// value writes v, preceded by its type id when withType.
func (e *encoder) value(v any, withType bool) error {
	typ, err := typeOf(v)
	if err != nil {
		return err
	}
	if withType {
		e.u32(typ)
	}
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float32:
		e.u32(math.Float32bits(x))
	case float64:
		e.u64(math.Float64bits(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(x)
	case []any:
		et := uint32(typArray)
		if len(x) > 0 {
			if et, err = typeOf(x[0]); err != nil {
				return err
			}
		}
		e.u32(et)
		e.u64(uint64(len(x)))
		for i, el := range x {
			if t, err := typeOf(el); err != nil || t != et {
				return fmt.Errorf("array element %d has type %T, unlike element 0", i, el)
			}
			if err := e.value(el, false); err != nil {
				return err
			}
		}
	default: // typed slices
		rv := reflect.ValueOf(v)
		et, _ := typeOf(reflect.Zero(rv.Type().Elem()).Interface())
		e.u32(et)
		e.u64(uint64(rv.Len()))
		for i := range rv.Len() {
			if err := e.value(rv.Index(i).Interface(), false); err != nil {
				return err
			}
		}
	}
	return nil
}
