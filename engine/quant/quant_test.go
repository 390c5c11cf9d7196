package quant

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/synthetic"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

func TestTensorType(t *testing.T) {
	mat := []int{512, 4096}
	for _, tc := range []struct {
		ft     FileType
		name   string
		shape  []int
		layers int
		tied   bool
		want   tensor.DType
	}{
		{Q4KM, "output.weight", mat, 32, false, tensor.Q6_K},
		{Q4KM, "token_embd.weight", mat, 32, false, tensor.Q4_K},
		{Q4KM, "token_embd.weight", mat, 32, true, tensor.Q6_K},       // tied: it is the output
		{Q4KM, "blk.0.attn_v.weight", mat, 32, false, tensor.Q6_K},    // first eighth
		{Q4KM, "blk.4.attn_v.weight", mat, 32, false, tensor.Q4_K},    // (4-4)%3 = 0
		{Q4KM, "blk.6.ffn_down.weight", mat, 32, false, tensor.Q6_K},  // (6-4)%3 = 2
		{Q4KM, "blk.28.ffn_down.weight", mat, 32, false, tensor.Q6_K}, // last eighth
		{Q4KM, "blk.6.ffn_up.weight", mat, 32, false, tensor.Q4_K},
		{Q4KM, "blk.0.attn_q.weight", []int{64, 64}, 2, false, tensor.Q8_0}, // rows not 256-blocks
		{Q4KM, "blk.0.attn_q.weight", []int{64, 48}, 2, false, tensor.F16},  // nor 32-blocks
		{Q4KM, "blk.0.attn_norm.weight", []int{4096}, 32, false, tensor.F32},
		{Q4_0, "output.weight", mat, 32, false, tensor.Q6_K},
		{Q4_0, "blk.3.ffn_down.weight", mat, 32, false, tensor.Q4_0},
		{Q8_0, "output.weight", mat, 32, false, tensor.Q8_0},
		{BF16, "blk.3.attn_k.weight", mat, 32, false, tensor.BF16},
		{F16, "output.weight", mat, 32, false, tensor.F16},
	} {
		if got := tc.ft.TensorType(tc.name, tc.shape, tc.layers, tc.tied); got != tc.want {
			t.Errorf("%s %s %v (tied %v): %v, want %v", tc.ft, tc.name, tc.shape, tc.tied, got, tc.want)
		}
	}
}

func TestParseFileType(t *testing.T) {
	for _, s := range []string{"q4_k_m", "Q4_K_M", "q8_0", "Q4_0", "bf16", "F16"} {
		if _, err := ParseFileType(s); err != nil {
			t.Errorf("ParseFileType(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "q5_k_m", "f32", "q4_k"} {
		if _, err := ParseFileType(s); err == nil || !strings.Contains(err.Error(), "q4_k_m, q8_0, q4_0, bf16, f16") {
			t.Errorf("ParseFileType(%q): error %v, want one listing the types", s, err)
		}
	}
}

// relRMS is the RMS difference of the dequantized tensor got from want
// over want's RMS.
func relRMS(t *testing.T, got *tensor.Tensor, want []float32) float64 {
	shape := got.Shape
	if len(shape) == 1 {
		shape = []int{1, shape[0]}
	}
	g := &tensor.Tensor{Name: got.Name, DType: got.DType, Shape: shape, Data: got.Data}
	row := make([]float32, g.Cols())
	var se, sx float64
	for r := range g.Rows() {
		cpu.DequantRow(row, g, r)
		for c, v := range row {
			w := want[r*g.Cols()+c]
			se += float64(v-w) * float64(v-w)
			sx += float64(w) * float64(w)
		}
	}
	return math.Sqrt(se / sx)
}

func f32s(t *tensor.Tensor) []float32 {
	v := make([]float32, t.Elems())
	shape := t.Shape
	if len(shape) == 1 {
		shape = []int{1, shape[0]}
	}
	g := &tensor.Tensor{Name: t.Name, DType: t.DType, Shape: shape, Data: t.Data}
	for r := range g.Rows() {
		cpu.DequantRow(v[r*g.Cols():(r+1)*g.Cols()], g, r)
	}
	return v
}

// TestWriteSynthetic: every file type of the "small" preset parses back
// with the tensor types TensorType chose, general.file_type set, and
// values within the type's resolution of the preset's.
func TestWriteSynthetic(t *testing.T) {
	syn, err := synthetic.Open("synthetic:small")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ft     FileType
		maxRel float64
	}{{Q4KM, 0.12}, {Q8_0, 0.01}, {Q4_0, 0.15}, {BF16, 0.005}, {F16, 0.001}} {
		if raceEnabled && (tc.ft == Q4KM || tc.ft == Q4_0) { // Q6_K output
			continue
		}
		src, _ := Open("synthetic:small")
		var buf bytes.Buffer
		if err := WriteGGUF(&buf, src, tc.ft); err != nil {
			t.Fatalf("%s: %v", tc.ft, err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("%s: parse: %v", tc.ft, err)
		}
		if v, _ := f.Uint("general.file_type"); v != uint64(tc.ft.ggmlFileType()) {
			t.Errorf("%s: general.file_type %d", tc.ft, v)
		}
		if len(f.Tensors) != len(syn.TensorNames()) {
			t.Fatalf("%s: %d tensors, want %d", tc.ft, len(f.Tensors), len(syn.TensorNames()))
		}
		for _, ti := range f.Tensors {
			want := tc.ft.TensorType(ti.Name, ti.Shape, syn.Config().Layers, false)
			if ti.DType != want {
				t.Errorf("%s: %s is %v, want %v", tc.ft, ti.Name, ti.DType, want)
			}
			got, err := f.Tensor(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := syn.Generate(ti.Name, tensor.F32)
			if rel := relRMS(t, got, f32s(ref)); rel > tc.maxRel {
				t.Errorf("%s: %s (%v) relative RMS error %.4f, want <= %.3f", tc.ft, ti.Name, ti.DType, rel, tc.maxRel)
			}
		}
	}
}

// TestWriteFromGGUF re-encodes a written bf16 file as q4_k_m through
// WriteFile (as q8_0 under the race detector): metadata carried over,
// values close to the bf16 file's, and
// bad paths refused.
func TestWriteFromGGUF(t *testing.T) {
	dir := t.TempDir()
	bf := filepath.Join(dir, "small.bf16.gguf")
	if _, err := WriteFile("synthetic:small", BF16, bf, false); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(dir, "small.Q4_K_M.gguf")
	ft, ftNum := Q4KM, uint64(15)
	if raceEnabled {
		ft, ftNum = Q8_0, 7
	}
	n, err := WriteFile(bf, ft, q, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(q); st == nil || st.Size() != n {
		t.Fatalf("WriteFile reported %d bytes; file %v", n, st)
	}
	a, _ := gguf.Open(bf)
	defer a.Close()
	b, _ := gguf.Open(q)
	defer b.Close()
	if name, _ := b.String("general.name"); name != "rigscope-synthetic-small" {
		t.Errorf("general.name %q not carried over", name)
	}
	if v, _ := b.Uint("general.file_type"); v != ftNum {
		t.Errorf("general.file_type %d, want %d", v, ftNum)
	}
	for _, ti := range a.Tensors {
		ta, _ := a.Tensor(ti.Name)
		tb, err := b.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if rel := relRMS(t, tb, f32s(ta)); rel > 0.12 {
			t.Errorf("%s: %v relative RMS error %.4f from the bf16 file", ti.Name, tb.DType, rel)
		}
	}
	if _, err := WriteFile(bf, Q8_0, q, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("existing --out: error %v, want one naming --force", err)
	}
	if _, err := WriteFile(bf, Q8_0, dir, true); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("--out a directory: error %v", err)
	}
	if _, err := WriteFile("synthetic:nope", Q8_0, filepath.Join(dir, "x.gguf"), false); err == nil || !strings.Contains(err.Error(), "llama-8b") {
		t.Errorf("unknown preset: error %v, want one listing the presets", err)
	}
	if _, err := WriteFile(filepath.Join(dir, "model.bin"), Q8_0, filepath.Join(dir, "x.gguf"), false); err == nil || !strings.Contains(err.Error(), ".gguf") {
		t.Errorf("not a GGUF file: error %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.gguf.tmp")); err == nil {
		t.Error("a failed write left its .tmp file")
	}
}
