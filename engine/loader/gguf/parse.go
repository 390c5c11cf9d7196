package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// Limits on what a file may declare; each is far beyond any real model and
// exists so that a hostile header cannot make the parser allocate or loop
// without bound. Counts are further bounded by the bytes remaining.
const (
	maxDims       = 4 // GGML_MAX_DIMS
	maxArrayDepth = 8
)

// gguf metadata value type ids.
const (
	typUint8   = 0
	typInt8    = 1
	typUint16  = 2
	typInt16   = 3
	typUint32  = 4
	typInt32   = 5
	typFloat32 = 6
	typBool    = 7
	typString  = 8
	typArray   = 9
	typUint64  = 10
	typInt64   = 11
	typFloat64 = 12
)

// minValueBytes is the smallest encoding of one value of each type (used to
// bound array counts by the bytes that remain).
func minValueBytes(typ uint32) (int, bool) {
	switch typ {
	case typUint8, typInt8, typBool:
		return 1, true
	case typUint16, typInt16:
		return 2, true
	case typUint32, typInt32, typFloat32:
		return 4, true
	case typUint64, typInt64, typFloat64:
		return 8, true
	case typString:
		return 8, true // length prefix
	case typArray:
		return 12, true // element type + count
	}
	return 0, false
}

// errShort is wrapped by every read past the end of the data.
var errShort = errors.New("unexpected end of file (truncated)")

type reader struct {
	data []byte
	pos  int
}

func (r *reader) remaining() int { return len(r.data) - r.pos }

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > r.remaining() {
		return nil, fmt.Errorf("at offset %d: need %d bytes, %d left: %w", r.pos, n, r.remaining(), errShort)
	}
	b := r.data[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

func (r *reader) u8() (uint8, error) {
	b, err := r.bytes(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (r *reader) u16() (uint16, error) {
	b, err := r.bytes(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (r *reader) u32() (uint32, error) {
	b, err := r.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a u64 count of items of at least minBytes each and checks it
// against the bytes that remain.
func (r *reader) count(what string, minBytes int) (int, error) {
	at := r.pos
	n, err := r.u64()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if n > uint64(r.remaining()/minBytes) {
		return 0, fmt.Errorf("at offset %d: %s %d is impossible: only %d bytes remain (truncated or corrupt)", at, what, n, r.remaining())
	}
	return int(n), nil
}

func (r *reader) str(what string) (string, error) {
	n, err := r.count(what+" length", 1)
	if err != nil {
		return "", err
	}
	b, err := r.bytes(n)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func parse(data []byte, path string) (*File, error) {
	f, err := parseHeader(data, path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	return f, nil
}

func parseHeader(data []byte, path string) (*File, error) {
	r := &reader{data: data}
	magic, err := r.bytes(4)
	if err != nil {
		return nil, fmt.Errorf("not a GGUF file (%d bytes, too short for the header)", len(data))
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("not a GGUF file: bad magic %q, want %q", magic, Magic)
	}
	version, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("unsupported GGUF version %d (supported: 2, 3)", version)
	}
	// A tensor info takes at least 8 (name len) + 4 (n_dims) + 4 (type) + 8 (offset).
	nTensors, err := r.count("tensor count", 24)
	if err != nil {
		return nil, err
	}
	// A KV takes at least 8 (key len) + 4 (type) + 1 (value).
	nKV, err := r.count("metadata count", 13)
	if err != nil {
		return nil, err
	}
	f := &File{
		Version: version,
		Path:    path,
		KV:      make([]KV, 0, nKV),
		Tensors: make([]TensorInfo, 0, nTensors),
		data:    data,
		kvIndex: make(map[string]int, nKV),
		tIndex:  make(map[string]int, nTensors),
	}
	for i := range nKV {
		key, err := r.str("key")
		if err != nil {
			return nil, fmt.Errorf("metadata entry %d: %w", i, err)
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, fmt.Errorf("metadata key %q appears twice", key)
		}
		typ, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("metadata %q: type: %w", key, err)
		}
		v, err := r.value(typ, 0)
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}

	f.Alignment = DefaultAlignment
	if _, ok := f.Get("general.alignment"); ok {
		a, ok := f.Uint("general.alignment")
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
			v, _ := f.Get("general.alignment")
			return nil, fmt.Errorf("general.alignment %v (%T) is not a power of two up to 1 MiB", v, v)
		}
		f.Alignment = a
	}

	for i := range nTensors {
		ti, err := r.tensorInfo()
		if err != nil {
			return nil, fmt.Errorf("tensor info %d: %w", i, err)
		}
		if _, dup := f.tIndex[ti.Name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice", ti.Name)
		}
		f.tIndex[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}

	// The data region starts at the next multiple of the alignment.
	start := alignUp(uint64(r.pos), f.Alignment)
	if nTensors > 0 && start > uint64(len(data)) {
		return nil, fmt.Errorf("data region would start at %d, past the end of the file (%d bytes): truncated", start, len(data))
	}
	f.DataOffset = start
	dataLen := uint64(0)
	if start < uint64(len(data)) {
		dataLen = uint64(len(data)) - start
	}
	for _, ti := range f.Tensors {
		if ti.Offset%f.Alignment != 0 {
			return nil, fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", ti.Name, ti.Offset, f.Alignment)
		}
		if ti.Offset > dataLen || ti.Size > dataLen-ti.Offset {
			return nil, fmt.Errorf("tensor %q: offset %d + size %d exceeds the data region (%d bytes from file offset %d): truncated or corrupt", ti.Name, ti.Offset, ti.Size, dataLen, start)
		}
	}
	if err := checkLayout(f.Tensors, f.Alignment, dataLen); err != nil {
		return nil, err
	}
	return f, nil
}

// checkLayout checks that the tensors tile the data region as GGUF writers
// lay it out: each tensor's bytes (its type's size times its shape) end
// where the next tensor starts, give or take the alignment padding, and
// the last ends within one alignment of the end of the file. A tensor
// whose stored type or shape does not match its data (a Q8_0 tensor
// relabelled F32, say) breaks this even when it stays in bounds.
func checkLayout(tensors []TensorInfo, align, dataLen uint64) error {
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return tensors[order[a]].Offset < tensors[order[b]].Offset })
	for k, i := range order {
		ti := &tensors[i]
		end := ti.Offset + ti.Size
		next, nextName := dataLen, "the end of the file"
		if k+1 < len(order) {
			n := &tensors[order[k+1]]
			next, nextName = n.Offset, fmt.Sprintf("tensor %q at offset %d", n.Name, n.Offset)
		}
		switch {
		case end > next:
			return fmt.Errorf("tensor %q (%v %v, %d bytes at offset %d) runs %d bytes into %s: its stored type or shape does not match its data", ti.Name, ti.Type, ti.Shape, ti.Size, ti.Offset, end-next, nextName)
		case next-end >= align:
			return fmt.Errorf("tensor %q (%v %v, %d bytes at offset %d) is followed by %d bytes that no tensor holds before %s: its stored type or shape does not match its data", ti.Name, ti.Type, ti.Shape, ti.Size, ti.Offset, next-end, nextName)
		}
	}
	return nil
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

func (r *reader) tensorInfo() (TensorInfo, error) {
	name, err := r.str("tensor name")
	if err != nil {
		return TensorInfo{}, err
	}
	if !utf8.ValidString(name) || len(name) > 1024 {
		return TensorInfo{}, fmt.Errorf("tensor name %q is not valid UTF-8 of at most 1024 bytes", name)
	}
	nDims, err := r.u32()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: dims: %w", name, err)
	}
	if nDims == 0 || nDims > maxDims {
		return TensorInfo{}, fmt.Errorf("tensor %q: %d dimensions (want 1 to %d)", name, nDims, maxDims)
	}
	shape := make([]int, nDims)
	elems := uint64(1)
	var ne0 uint64
	for d := range int(nDims) {
		n, err := r.u64()
		if err != nil {
			return TensorInfo{}, fmt.Errorf("tensor %q: dim %d: %w", name, d, err)
		}
		if n == 0 || n > math.MaxInt32 {
			return TensorInfo{}, fmt.Errorf("tensor %q: dimension %d is %d (want 1 to %d)", name, d, n, math.MaxInt32)
		}
		hi, lo := bits.Mul64(elems, n)
		if hi != 0 || lo > math.MaxInt64/8 {
			return TensorInfo{}, fmt.Errorf("tensor %q: element count overflows", name)
		}
		elems = lo
		if d == 0 {
			ne0 = n
		}
		shape[int(nDims)-1-d] = int(n) // GGUF dims are innermost first
	}
	typ, err := r.u32()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: type: %w", name, err)
	}
	off, err := r.u64()
	if err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: offset: %w", name, err)
	}
	ti := TensorInfo{Name: name, Shape: shape, Offset: off, Type: GGMLType(typ)}
	geo, known := ggmlTypes[ti.Type]
	if !known {
		return TensorInfo{}, fmt.Errorf("tensor %q: unknown ggml type %d", name, typ)
	}
	if ne0%uint64(geo.blockElems) != 0 {
		return TensorInfo{}, fmt.Errorf("tensor %q: row length %d is not a multiple of the %v block size %d", name, ne0, ti.Type, geo.blockElems)
	}
	hi, size := bits.Mul64(elems/uint64(geo.blockElems), uint64(geo.blockBytes))
	if hi != 0 || size > math.MaxInt64 {
		return TensorInfo{}, fmt.Errorf("tensor %q: byte size overflows", name)
	}
	ti.Size = size
	if dt, ok := ggmlToDType[ti.Type]; ok {
		ti.DType = dt
	}
	return ti, nil
}

// value reads one metadata value of type typ; depth counts array nesting.
func (r *reader) value(typ uint32, depth int) (any, error) {
	switch typ {
	case typUint8:
		return r.u8()
	case typInt8:
		v, err := r.u8()
		return int8(v), err
	case typUint16:
		return r.u16()
	case typInt16:
		v, err := r.u16()
		return int16(v), err
	case typUint32:
		return r.u32()
	case typInt32:
		v, err := r.u32()
		return int32(v), err
	case typFloat32:
		v, err := r.u32()
		return math.Float32frombits(v), err
	case typUint64:
		return r.u64()
	case typInt64:
		v, err := r.u64()
		return int64(v), err
	case typFloat64:
		v, err := r.u64()
		return math.Float64frombits(v), err
	case typBool:
		v, err := r.u8()
		if err != nil {
			return nil, err
		}
		if v > 1 {
			return nil, fmt.Errorf("at offset %d: bool value %d is not 0 or 1", r.pos-1, v)
		}
		return v == 1, nil
	case typString:
		return r.str("string")
	case typArray:
		if depth >= maxArrayDepth {
			return nil, fmt.Errorf("at offset %d: arrays nested deeper than %d", r.pos, maxArrayDepth)
		}
		return r.array(depth + 1)
	}
	return nil, fmt.Errorf("at offset %d: unknown value type %d", r.pos-4, typ)
}

func (r *reader) array(depth int) (any, error) {
	et, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("array element type: %w", err)
	}
	min, ok := minValueBytes(et)
	if !ok {
		return nil, fmt.Errorf("at offset %d: unknown array element type %d", r.pos-4, et)
	}
	n, err := r.count("array length", min)
	if err != nil {
		return nil, err
	}
	switch et {
	case typUint8:
		return readFixed(r, n, func(b []byte) uint8 { return b[0] }, 1)
	case typInt8:
		return readFixed(r, n, func(b []byte) int8 { return int8(b[0]) }, 1)
	case typUint16:
		return readFixed(r, n, binary.LittleEndian.Uint16, 2)
	case typInt16:
		return readFixed(r, n, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }, 2)
	case typUint32:
		return readFixed(r, n, binary.LittleEndian.Uint32, 4)
	case typInt32:
		return readFixed(r, n, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }, 4)
	case typFloat32:
		return readFixed(r, n, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }, 4)
	case typUint64:
		return readFixed(r, n, binary.LittleEndian.Uint64, 8)
	case typInt64:
		return readFixed(r, n, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }, 8)
	case typFloat64:
		return readFixed(r, n, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }, 8)
	case typBool:
		out := make([]bool, n)
		for i := range out {
			v, err := r.value(typBool, depth)
			if err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
			out[i] = v.(bool)
		}
		return out, nil
	case typString:
		out := make([]string, n)
		for i := range out {
			s, err := r.str("string")
			if err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
			out[i] = s
		}
		return out, nil
	}
	// typArray: arrays of arrays.
	out := make([]any, n)
	for i := range out {
		v, err := r.value(typArray, depth)
		if err != nil {
			return nil, fmt.Errorf("array element %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

func readFixed[T any](r *reader, n int, dec func([]byte) T, size int) ([]T, error) {
	b, err := r.bytes(n * size) // n <= remaining/size, so no overflow
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		out[i] = dec(b[i*size : i*size+size])
	}
	return out, nil
}
