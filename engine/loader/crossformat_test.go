package loader

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

// floats decodes an F32, F16 or BF16 tensor.
func floats(t *testing.T, w *tensor.Tensor) []float32 {
	t.Helper()
	out := make([]float32, w.Elems())
	for i := range out {
		switch w.DType {
		case tensor.F32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.Data[4*i:]))
		case tensor.F16:
			out[i] = tensor.F16ToF32(binary.LittleEndian.Uint16(w.Data[2*i:]))
		case tensor.BF16:
			out[i] = tensor.BF16ToF32(binary.LittleEndian.Uint16(w.Data[2*i:]))
		default:
			t.Fatalf("floats(%q): dtype %v", w.Name, w.DType)
		}
	}
	return out
}

// halfToInterleaved permutes the rows of a rotate-half Q or K weight
// ([heads*headDim, cols]) into the interleaved layout, as llama.cpp's
// converter does: interleaved row h*d + 2i + j is rotate-half row
// h*d + j*d/2 + i.
func halfToInterleaved(w []float32, heads, headDim, cols int) []float32 {
	out := make([]float32, len(w))
	for h := range heads {
		for i := range headDim / 2 {
			for j := range 2 {
				dst := h*headDim + 2*i + j
				src := h*headDim + j*headDim/2 + i
				copy(out[dst*cols:(dst+1)*cols], w[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}

// TestCrossFormatWeights checks that gocoder-draft-1m's three files hold the
// same weights: HF (BF16, rotate-half), GGUF (F16, interleaved) and llama2.c
// (F32, interleaved). bf16 values have 8 significant bits, so they are
// exact in f16 unless tiny (f16 subnormals) or huge; compare with a
// tolerance relative to the tensor's scale.
func TestCrossFormatWeights(t *testing.T) {
	paths := []string{
		fixtures.Path(t, "gocoder-draft-1m-hf"),
		fixtures.Path(t, "gocoder-draft-1m.F16.gguf"),
		fixtures.Path(t, "gocoder-draft-1m.llama2c.bin"),
	}
	var srcs []Source
	for _, p := range paths {
		s, err := Open(p, Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", p, err)
		}
		defer s.Close()
		srcs = append(srcs, s)
	}
	cfg := srcs[0].Config()
	names := []string{model.NameTokEmbd, model.NameOutputNorm}
	for l := range cfg.Layers {
		for _, p := range []string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"} {
			names = append(names, model.LayerName(l, p))
		}
	}
	for _, name := range names {
		var vals [][]float32
		for i, s := range srcs {
			w, err := s.Tensor(name)
			if err != nil {
				t.Fatalf("Open(%q).Tensor(%q): %v", paths[i], name, err)
			}
			v := floats(t, w)
			if i == 0 { // HF: permute Q and K rows to the interleaved layout
				var heads int
				switch {
				case name == model.LayerName(0, "attn_q") || name == model.LayerName(1, "attn_q"):
					heads = cfg.Heads
				case name == model.LayerName(0, "attn_k") || name == model.LayerName(1, "attn_k"):
					heads = cfg.KVHeads
				}
				if heads > 0 {
					v = halfToInterleaved(v, heads, cfg.HeadDim, w.Cols())
				}
			}
			vals = append(vals, v)
		}
		scale := float32(0)
		for _, x := range vals[2] {
			scale = max(scale, float32(math.Abs(float64(x))))
		}
		for i := 1; i < len(vals); i++ {
			if err := closeTo(vals[0], vals[i], scale*1e-3); err != nil {
				t.Errorf("tensor %q: %s vs %s: %v", name, paths[0], paths[i], err)
			}
		}
	}
}

func closeTo(a, b []float32, tol float32) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d vs %d elements", len(a), len(b))
	}
	for i := range a {
		if d := float32(math.Abs(float64(a[i] - b[i]))); d > tol {
			return fmt.Errorf("element %d: %v vs %v (tolerance %v)", i, a[i], b[i], tol)
		}
	}
	return nil
}
