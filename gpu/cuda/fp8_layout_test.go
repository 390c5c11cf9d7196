package cuda

import (
	"math"
	"strings"
	"testing"

	"rigscope/engine/tensor"
)

// fp8Matrix is an F8_E4M3 rows x cols tensor quantized with blocks br x bc.
func fp8Matrix(t *testing.T, name string, rows, cols, br, bc int, seed float64) *tensor.Tensor {
	t.Helper()
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(math.Sin(seed+float64(i)*0.37) * (1 + float64(i%977)))
	}
	w, err := tensor.QuantizeFP8(name, rows, cols, v, br, bc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The grid the kernels index gives every element of every stacked tensor
// (and of TP shards) its own scale.
func TestFP8ScaleGrid(t *testing.T) {
	const K = 512
	slice := func(w *tensor.Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
		v, err := w.SliceRows(r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		if v, err = v.SliceCols(c0, c1); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name string
		ts   []*tensor.Tensor
		want string // "" ok, else the error
	}{
		{"per-tensor stack", []*tensor.Tensor{fp8Matrix(t, "q", 256, K, 256, K, 1), fp8Matrix(t, "k", 64, K, 64, K, 2), fp8Matrix(t, "v", 64, K, 64, K, 3)}, ""},
		{"per-channel", []*tensor.Tensor{fp8Matrix(t, "w", 100, K, 1, K, 4)}, ""},
		{"blocks, partial last", []*tensor.Tensor{fp8Matrix(t, "q", 256, K+64, 128, 128, 5), fp8Matrix(t, "k", 200, K+64, 128, 128, 6)}, ""},
		{"block shard", []*tensor.Tensor{slice(fp8Matrix(t, "w", 512, 1024, 128, 128, 7), 128, 384, 256, 768)}, ""},
		{"per-channel column shard", []*tensor.Tensor{slice(fp8Matrix(t, "w", 64, 1024, 1, 1024, 8), 0, 64, 512, 1024)}, ""},
		{"blocks after a partial block", []*tensor.Tensor{fp8Matrix(t, "q", 200, K, 128, 128, 9), fp8Matrix(t, "k", 128, K, 128, 128, 10)}, "block 128x128 scales"},
		{"64 blocks", []*tensor.Tensor{fp8Matrix(t, "w", 128, K, 64, 64, 11)}, "block 64x64 scales (at row 0, column 0"},
		{"unaligned shard", []*tensor.Tensor{slice(fp8Matrix(t, "w", 256, 1024, 128, 128, 12), 0, 256, 64, 576)}, "at row 0, column 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			grid, err := fp8ScaleGrid(c.ts)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			row0 := 0
			for _, w := range c.ts {
				for r := range w.Rows() {
					for k := 0; k < w.Cols(); k += 16 { // the kernel reads one scale per 16-element chunk
						for i := k; i < k+16; i++ {
							if got, want := fp8ScaleAt(grid, row0+r, k), w.Scales.At(r, i); got != want {
								t.Fatalf("%s (%d, %d): grid scale %g, tensor's %g", w.Name, r, i, got, want)
							}
						}
					}
				}
				row0 += w.Rows()
			}
		})
	}
}
