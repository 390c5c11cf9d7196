package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

func bf16Tensor(name string, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(data[2*i:], tensor.F32ToBF16(float32(i)/4))
	}
	return &tensor.Tensor{Name: name, DType: tensor.BF16, Shape: shape, Data: data}
}

func writeBytes(t testing.TB, tensors []*tensor.Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

// withHeader builds a file from a literal JSON header and n data bytes.
func withHeader(hdr string, n int) []byte {
	b := make([]byte, 8, 8+len(hdr)+n)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, make([]byte, n)...)
}

func TestRoundTrip(t *testing.T) {
	tensors := []*tensor.Tensor{bf16Tensor("a", 3, 4), bf16Tensor("b", 5)}
	f, err := Parse(writeBytes(t, tensors))
	if err != nil {
		t.Fatalf("Parse(Write(...)): %v", err)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("Metadata = %v", f.Metadata)
	}
	for _, want := range tensors {
		got, err := f.Tensor(want.Name)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Tensor(%q) = %+v, %v; want %+v", want.Name, got, err, want)
		}
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"huge header", withHeader("{}", 0)[:8], "exceeds the file"},
		{"not json", withHeader("[1]", 0), "not a JSON object"},
		{"bad json", withHeader("{", 0), "header JSON"},
		{"unknown dtype", withHeader(`{"w":{"dtype":"F4","shape":[1],"data_offsets":[0,1]}}`, 1), `unknown dtype "F4"`},
		{"offset past end", withHeader(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), "outside the data region"},
		{"begin after end", withHeader(`{"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, 4), "outside the data region"},
		{"size mismatch", withHeader(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), "needs 12 bytes"},
		{"overflow", withHeader(`{"w":{"dtype":"F32","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]}}`, 8), "overflows"},
		{"negative dim", withHeader(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), `tensor "w"`},
		{"overlap", withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlap"},
		{"bad metadata", withHeader(`{"__metadata__":{"a":1}}`, 0), "__metadata__"},
		{"hole", withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, 12), `bytes 4 to 8 of the data region belong to no tensor (before "b")`},
		{"trailing bytes", withHeader(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, 8), "the tensors end at byte 4 of the 8-byte data region"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.data)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "<memory>") {
			t.Errorf("%s: Parse(%q) error = %v, want one containing %q and the file name", tt.name, tt.data, err, tt.want)
		}
	}
}

func TestUnsupportedDType(t *testing.T) {
	f, err := Parse(withHeader(`{"d2t":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}`, 16))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Tensor("d2t"); err == nil || !strings.Contains(err.Error(), "I64") {
		t.Errorf("Tensor(d2t) error = %v, want one naming dtype I64", err)
	}
	if ti, raw, err := f.Raw("d2t"); err != nil || len(raw) != 16 || ti.FileDType != "I64" {
		t.Errorf("Raw(d2t) = %+v, %d bytes, %v", ti, len(raw), err)
	}
}

func TestOpenDirSharded(t *testing.T) {
	dir := t.TempDir()
	a, b := bf16Tensor("x", 2, 2), bf16Tensor("y", 3)
	os.WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), writeBytes(t, []*tensor.Tensor{a}), 0o644)
	os.WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), writeBytes(t, []*tensor.Tensor{b}), 0o644)
	os.WriteFile(filepath.Join(dir, IndexName), []byte(`{"metadata":{},"weight_map":{"x":"model-00001-of-00002.safetensors","y":"model-00002-of-00002.safetensors"}}`), 0o644)
	m, err := OpenDir(dir)
	if err != nil {
		t.Fatalf("OpenDir(%q): %v", dir, err)
	}
	defer m.Close()
	for _, want := range []*tensor.Tensor{a, b} {
		got, err := m.Tensor(want.Name)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("OpenDir(%q).Tensor(%q) = %+v, %v", dir, want.Name, got, err)
		}
	}
	if got := m.Names(); !reflect.DeepEqual(got, []string{"x", "y"}) {
		t.Errorf("Names() = %v", got)
	}

	os.WriteFile(filepath.Join(dir, IndexName), []byte(`{"weight_map":{"x":"../evil.safetensors"}}`), 0o644)
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), "evil") {
		t.Errorf("OpenDir with a shard outside the directory: error = %v", err)
	}
	os.WriteFile(filepath.Join(dir, IndexName), []byte(`{"weight_map":{"z":"model-00001-of-00002.safetensors"}}`), 0o644)
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), `"z"`) {
		t.Errorf("OpenDir with a tensor missing from its shard: error = %v", err)
	}
}

func TestFixtures(t *testing.T) {
	for _, tt := range []struct {
		dir     string
		tensors int
	}{{"gocoder-draft-1m-hf", 2*9 + 2}, {"gocoder-14m-hf", 4*9 + 3}, {"gocoder-14m-eagle3", 15}} {
		dir := fixtures.Path(t, tt.dir)
		m, err := OpenDir(dir)
		if err != nil {
			t.Errorf("OpenDir(%q): %v", dir, err)
			continue
		}
		if n := len(m.Names()); n != tt.tensors {
			t.Errorf("OpenDir(%q): %d tensors, want %d", dir, n, tt.tensors)
		}
		m.Close()
	}
}
