package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

// f32Tensor builds an F32 tensor of the given shape with values 0.5*i.
func f32Tensor(name string, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(0.5*float32(i)))
	}
	return &tensor.Tensor{Name: name, DType: tensor.F32, Shape: shape, Data: data}
}

func q80Tensor(name string, rows, cols int) *tensor.Tensor {
	data := make([]byte, rows*cols/32*34)
	for i := range data {
		data[i] = byte(i * 7)
	}
	return &tensor.Tensor{Name: name, DType: tensor.Q8_0, Shape: []int{rows, cols}, Data: data}
}

func sampleKV() []KV {
	return []KV{
		{"general.architecture", "llama"},
		{"u8", uint8(7)}, {"i8", int8(-7)}, {"u16", uint16(700)}, {"i16", int16(-700)},
		{"u32", uint32(70000)}, {"i32", int32(-70000)}, {"u64", uint64(1) << 40}, {"i64", int64(-1) << 40},
		{"f32", float32(1.5)}, {"f64", 2.25}, {"yes", true}, {"no", false},
		{"strs", []string{"a", "", "ü"}},
		{"f32s", []float32{1, -2.5}},
		{"i32s", []int32{1, -2, 3}},
		{"u8s", []uint8{1, 2}},
		{"i64s", []int64{5, -6}},
		{"bools", []bool{true, false}},
		{"nested", []any{[]string{"x"}, []string{"y", "z"}}},
		{"empty", []uint32{}},
	}
}

// writeBytes writes a GGUF file to memory, failing the test on error.
func writeBytes(t testing.TB, kv []KV, tensors []*tensor.Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, kv, tensors); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	kv := sampleKV()
	tensors := []*tensor.Tensor{f32Tensor("a", 3, 5), q80Tensor("b", 2, 64), f32Tensor("c", 7)}
	data := writeBytes(t, kv, tensors)
	f, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(Write(...)): %v", err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("Parse: version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if !reflect.DeepEqual(f.KV, kv) {
		t.Errorf("Parse(Write(kv)).KV = %#v, want %#v", f.KV, kv)
	}
	for _, want := range tensors {
		got, err := f.Tensor(want.Name)
		if err != nil {
			t.Fatalf("Tensor(%q): %v", want.Name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Tensor(%q) = %v %v (%d bytes), want %v %v", want.Name, got.DType, got.Shape, len(got.Data), want.DType, want.Shape)
		}
	}
	if _, err := f.Tensor("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf(`Tensor("nope") error = %v, want one naming the tensor`, err)
	}
}

func TestAccessors(t *testing.T) {
	f, err := Parse(writeBytes(t, sampleKV(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := f.String("general.architecture"); !ok || s != "llama" {
		t.Errorf("String(general.architecture) = %q, %v", s, ok)
	}
	for key, want := range map[string]uint64{"u8": 7, "u16": 700, "u32": 70000, "u64": 1 << 40} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("Uint(%q) = %d, %v; want %d", key, got, ok, want)
		}
	}
	if _, ok := f.Uint("i8"); ok {
		t.Errorf("Uint(i8) of a negative value succeeded")
	}
	for key, want := range map[string]float64{"f32": 1.5, "f64": 2.25, "i16": -700, "u32": 70000} {
		if got, ok := f.Float(key); !ok || got != want {
			t.Errorf("Float(%q) = %v, %v; want %v", key, got, ok, want)
		}
	}
	if b, ok := f.Bool("yes"); !ok || !b {
		t.Errorf("Bool(yes) = %v, %v", b, ok)
	}
	if s, ok := f.Strings("strs"); !ok || len(s) != 3 || s[2] != "ü" {
		t.Errorf("Strings(strs) = %q, %v", s, ok)
	}
	if s, ok := f.Float32s("f32s"); !ok || len(s) != 2 || s[1] != -2.5 {
		t.Errorf("Float32s(f32s) = %v, %v", s, ok)
	}
	for key, want := range map[string][]int32{"i32s": {1, -2, 3}, "u8s": {1, 2}, "i64s": {5, -6}} {
		if got, ok := f.Int32s(key); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Int32s(%q) = %v, %v; want %v", key, got, ok, want)
		}
	}
	if _, ok := f.String("u8"); ok {
		t.Errorf("String(u8) succeeded on a uint8")
	}
	if _, ok := f.Get("missing"); ok {
		t.Errorf("Get(missing) succeeded")
	}
}

func TestOpenMmap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	kv := []KV{{"general.alignment", uint32(64)}, {"k", "v"}}
	if err := os.WriteFile(path, writeBytes(t, kv, []*tensor.Tensor{f32Tensor("x", 2, 3), f32Tensor("y", 5)}), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	if f.Alignment != 64 || f.Path != path {
		t.Errorf("Open(%q): alignment %d path %q", path, f.Alignment, f.Path)
	}
	y, err := f.Tensor("y")
	if err != nil {
		t.Fatalf("Tensor(y): %v", err)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(y.Data[8:])); got != 1 {
		t.Errorf("y[2] = %v, want 1", got)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := f.Tensor("y"); err == nil {
		t.Errorf("Tensor after Close succeeded")
	}
}

// corrupt returns a copy of b with fn applied.
func corrupt(b []byte, fn func([]byte) []byte) []byte {
	return fn(append([]byte(nil), b...))
}

func TestBadInput(t *testing.T) {
	good := writeBytes(t, []KV{{"general.architecture", "llama"}}, []*tensor.Tensor{f32Tensor("w", 4, 8)})
	// Layout of good: magic 0..4, version 4..8, n_tensors 8..16, n_kv 16..24,
	// key len 24..32, key "general.architecture" 32..52, type 52..56,
	// value len 56..64, "llama" 64..69, tensor name len 69..77, "w" 77,
	// n_dims 78..82, dims 82..98, type 98..102, offset 102..110.
	put64 := func(at int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[at:], v); return b }
	}
	put32 := func(at int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[at:], v); return b }
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"bad magic", corrupt(good, func(b []byte) []byte { copy(b, "GGML"); return b }), "bad magic"},
		{"version 1", corrupt(good, put32(4, 1)), "unsupported GGUF version 1"},
		{"version 4", corrupt(good, put32(4, 4)), "unsupported GGUF version 4"},
		{"absurd tensor count", corrupt(good, put64(8, 1<<62)), "tensor count"},
		{"absurd kv count", corrupt(good, put64(16, 1<<40)), "metadata count"},
		{"absurd key length", corrupt(good, put64(24, 1<<50)), "key length"},
		{"bad value type", corrupt(good, put32(52, 99)), "unknown value type 99"},
		{"absurd string length", corrupt(good, put64(56, 1<<33)), "string length"},
		{"zero dims", corrupt(good, put32(78, 0)), "0 dimensions"},
		{"five dims", corrupt(good, put32(78, 5)), "5 dimensions"},
		{"zero dim", corrupt(good, put64(82, 0)), "dimension 0 is 0"},
		{"huge dims overflow", corrupt(good, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[82:], math.MaxInt32)
			binary.LittleEndian.PutUint64(b[90:], math.MaxInt32)
			return b
		}), "element count overflows"},
		{"unknown ggml type", corrupt(good, put32(98, 77)), "unknown ggml type 77"},
		{"bad block multiple", corrupt(good, put32(98, uint32(TypeQ8_0))), "not a multiple of the Q8_0 block size"},
		{"misaligned offset", corrupt(good, put64(102, 4)), "not a multiple of the alignment"},
		{"offset past end", corrupt(good, put64(102, 1<<20)), "exceeds the data region"},
		{"truncated data", good[:len(good)-4], "exceeds the data region"},
		{"truncated header", good[:60], "unexpected end of file"},
		{"duplicate key", writeBytesNoFail([]KV{{"a", "x"}, {"a", "y"}}), "appears twice"},
		{"bad alignment", writeBytesNoFail([]KV{{"general.alignment", "32"}}), "general.alignment"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.data)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "<memory>") {
			t.Errorf("%s: Parse(%d bytes) error = %v, want one containing %q and the file name", tt.name, len(tt.data), err, tt.want)
		}
	}
}

// writeBytesNoFail writes kv with Write's encoder only (no validation of
// alignment), for building deliberately bad files.
func writeBytesNoFail(kv []KV) []byte {
	var buf bytes.Buffer
	e := &encoder{w: &countWriter{w: &buf}}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(0)
	e.u64(uint64(len(kv)))
	for _, entry := range kv {
		e.str(entry.Key)
		if err := e.value(entry.Value, true); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

func TestOpenErrorsNameFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.gguf")
	if _, err := Open(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(%q) error = %v, want one naming the file", missing, err)
	}
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00"), 0o644)
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Open(%q) error = %v, want one naming the file", bad, err)
	}
}

func TestUnsupportedType(t *testing.T) {
	good := writeBytes(t, nil, []*tensor.Tensor{f32Tensor("w", 1, 55)})
	// tensor info starts at 24: name len 8, "w", n_dims 4, 2 dims 16 (ne0
	// at 37), type at 24+8+1+4+16. Q3_K [1 512] is 220 bytes, as F32 [1 55].
	binary.LittleEndian.PutUint64(good[37:], 512)
	binary.LittleEndian.PutUint32(good[53:], 11)
	f, err := Parse(good)
	if err != nil {
		t.Fatalf("Parse with a Q3_K tensor: %v", err)
	}
	_, err = f.Tensor("w")
	if err == nil || !strings.Contains(err.Error(), "Q3_K") || !strings.Contains(err.Error(), `"w"`) ||
		!strings.Contains(err.Error(), supportedTypeNames()) {
		t.Errorf("Tensor(w) of type Q3_K: error = %v, want one naming the tensor, its type and the supported types", err)
	}
}

// TestRelabelledType: a tensor whose stored type is changed while its data
// stays in bounds is refused, naming the tensor, whichever way the size
// moves (the layout check: each tensor's bytes end where the next starts).
func TestRelabelledType(t *testing.T) {
	build := func() []byte {
		return writeBytes(t, nil, []*tensor.Tensor{q80Tensor("a", 32, 32), f32Tensor("b", 32, 32), f32Tensor("c", 8, 32)})
	}
	// Tensor infos start at 24: "a" has name len 8, name 1, n_dims 4, dims
	// 16, then its type at 53.
	typeAt := func(b []byte, name string) int {
		i := bytes.Index(b, append([]byte{1, 0, 0, 0, 0, 0, 0, 0}, name...))
		return i + 8 + 1 + 4 + 16
	}
	for _, tc := range []struct {
		name, tensor string
		to           GGMLType
		want         string
	}{
		{"Q8_0 relabelled F32", "a", TypeF32, `tensor "a" (F32 [32 32], 4096 bytes at offset 0) runs 3008 bytes into tensor "b"`},
		{"F32 relabelled F16", "b", TypeF16, `tensor "b" (F16 [32 32], 2048 bytes at offset 1088) is followed by 2048 bytes that no tensor holds before tensor "c"`},
		{"last F32 relabelled Q8_0", "c", TypeQ8_0, `tensor "c" (Q8_0 [8 32], 272 bytes at offset 5184) is followed by 752 bytes that no tensor holds before the end of the file`},
	} {
		b := build()
		if _, err := Parse(b); err != nil {
			t.Fatalf("Parse(untouched): %v", err)
		}
		binary.LittleEndian.PutUint32(b[typeAt(b, tc.tensor):], uint32(tc.to))
		_, err := Parse(b)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "does not match its data") {
			t.Errorf("%s: Parse error = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file    string
		arch    string
		tensors int
	}{
		{"gocoder-14m.Q8_0.gguf", "llama", 4*9 + 3},
		{"gocoder-draft-1m.F16.gguf", "llama", 2*9 + 2},
		{"vocab/ggml-vocab-llama-spm.gguf", "llama", 0},
		{"vocab/ggml-vocab-gpt-2.gguf", "gpt2", 0},
	}
	for _, tt := range tests {
		path := fixtures.Path(t, tt.file)
		f, err := Open(path)
		if err != nil {
			t.Errorf("Open(%q): %v", path, err)
			continue
		}
		if a, _ := f.String("general.architecture"); a != tt.arch || len(f.Tensors) != tt.tensors {
			t.Errorf("Open(%q): architecture %q with %d tensors, want %q with %d", path, a, len(f.Tensors), tt.arch, tt.tensors)
		}
		for _, ti := range f.Tensors {
			if _, err := f.Tensor(ti.Name); err != nil {
				t.Errorf("Open(%q).Tensor(%q): %v", path, ti.Name, err)
			}
		}
		if toks, ok := f.Strings("tokenizer.ggml.tokens"); !ok || len(toks) == 0 {
			t.Errorf("Open(%q): no tokenizer.ggml.tokens", path)
		}
		f.Close()
	}
}
