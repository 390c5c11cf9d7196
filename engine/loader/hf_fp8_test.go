package loader

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"rigscope/engine/hfconfig"
	"rigscope/engine/loader/safetensors"
	"rigscope/engine/tensor"
)

// FuzzHFFP8Scales: whatever shape and values a checkpoint gives an FP8
// weight's scale tensor, hfFP8Weight either refuses it or returns a weight
// whose every element has a finite positive scale (and passes Check).
func FuzzHFFP8Scales(f *testing.F) {
	f.Add(uint8(2), uint8(8), uint8(160), uint8(2), uint8(1), uint8(2), []byte{0, 0, 128, 63, 0, 0, 0, 64})
	f.Add(uint8(0), uint8(8), uint8(32), uint8(0), uint8(0), uint8(0), []byte{0, 0, 128, 63})
	f.Add(uint8(1), uint8(4), uint8(16), uint8(2), uint8(4), uint8(1), []byte{0, 0, 192, 127, 0, 0, 128, 63})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, scheme, rows8, cols8, ndim, d0, d1 uint8, vals []byte) {
		rows, cols := int(rows8%200)+1, int(cols8%200)+1
		q := &hfconfig.FP8{}
		suffix := ".weight_scale"
		if scheme%2 == 1 {
			q.BlockRows, q.BlockCols, suffix = 128, 128, ".weight_scale_inv"
		}
		shape := []int{int(d0 % 8), int(d1 % 8)}[:ndim%3]
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]byte, 4*n)
		for i := range data {
			if len(vals) > 0 {
				data[i] = vals[i%len(vals)]
			}
		}
		w := &tensor.Tensor{Name: "w.weight", DType: tensor.F8_E4M3, Shape: []int{rows, cols}, Data: make([]byte, rows*cols)}
		s := &tensor.Tensor{Name: "w" + suffix, DType: tensor.F32, Shape: shape, Data: data}
		p := filepath.Join(dir, "model.safetensors")
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := safetensors.Write(out, []*tensor.Tensor{w, s}, nil); err != nil {
			out.Close()
			return // a shape the writer refuses (a zero dimension)
		}
		out.Close()
		m, err := safetensors.OpenDir(dir)
		if err != nil {
			return
		}
		defer m.Close()
		got, err := hfFP8Weight(m, q, "w.weight")
		if err != nil {
			return
		}
		if err := got.Check(); err != nil {
			t.Fatalf("accepted a weight that fails Check: %v", err)
		}
		for r := range rows {
			for c := range cols {
				if v := got.Scales.At(r, c); !(v > 0) || math.IsInf(float64(v), 0) {
					t.Fatalf("accepted scale %g at (%d, %d) from shape %v", v, r, c, shape)
				}
			}
		}
	})
}
