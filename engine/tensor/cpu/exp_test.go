package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp32 checks exp32 against math.Exp (relative error) over the range
// Softmax and SwiGLU feed it, and the clamps at the ends.
func TestExp32(t *testing.T) {
	for x := float32(-87); x <= 88; x += 0.01 {
		got, want := float64(exp32(x)), math.Exp(float64(x))
		if math.Abs(got-want) > 4e-7*want {
			t.Fatalf("exp32(%v) = %v, math.Exp %v", x, got, want)
		}
	}
	for _, tc := range []struct{ x, want float32 }{{0, 1}, {float32(math.Inf(-1)), exp32(expLo)}, {1000, exp32(expHi)}} {
		if got := exp32(tc.x); got != tc.want {
			t.Errorf("exp32(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

// TestExpKernelsMatchPortable requires the AVX2 Softmax and SwiGLU to give
// exp.go's bits exactly, for every length (whole groups of eight and tails).
func TestExpKernelsMatchPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 8, 9, 31, 64, 100, 1027} {
		x := randVec(rng, n)
		for i := range x {
			x[i] *= 12
		}
		up := randVec(rng, n)
		fast, slow := make([]float32, n), make([]float32, n)
		swiglu(fast, x, up)
		restore := usePortable(true)
		swiglu(slow, x, up)
		restore()
		for i := range fast {
			want := float32(float64(x[i]) / (1 + math.Exp(-float64(x[i]))) * float64(up[i]))
			if fast[i] != slow[i] || !close32(fast[i], want, 1e-5*(1+abs32(want))) {
				t.Fatalf("SwiGLU(n=%d)[%d] = %v, portable %v, float64 %v", n, i, fast[i], slow[i], want)
			}
		}
		a, b := append([]float32(nil), x...), append([]float32(nil), x...)
		Softmax(a)
		restore = usePortable(true)
		Softmax(b)
		restore()
		ref := softmax64(x)
		for i := range a {
			if a[i] != b[i] || !close32(a[i], float32(ref[i]), 1e-6) {
				t.Fatalf("Softmax(n=%d)[%d] = %v, portable %v, float64 %v", n, i, a[i], b[i], ref[i])
			}
		}
	}
}

func softmax64(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	out := make([]float64, len(x))
	var s float64
	for i, v := range x {
		out[i] = math.Exp(float64(v) - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func BenchmarkSoftmax(b *testing.B) {
	x := randVec(rand.New(rand.NewPCG(1, 1)), 512)
	y := make([]float32, len(x))
	for b.Loop() {
		copy(y, x)
		Softmax(y)
	}
}

// TestQuantizeRowQ8MatchesPortable requires the AVX2 quantizer to give
// quantizeRowQ8Go's bytes and scales exactly, ties and zero blocks included.
func TestQuantizeRowQ8MatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, nb := range []int{1, 2, 5, 16} {
		x := randVec(rng, nb*32)
		for i := range x {
			switch i % 11 {
			case 3:
				x[i] = float32(int(x[i]*20)) + 0.5 // ties after scaling, often
			case 7:
				x[i] *= 1e-30
			}
		}
		clear(x[:min(32, len(x))][:16])
		if nb > 1 {
			clear(x[32:64]) // an all-zero block
		}
		q1, d1 := make([]int8, len(x)), make([]float32, nb)
		q2, d2 := make([]int8, len(x)), make([]float32, nb)
		quantizeRowQ8(q1, d1, x)
		quantizeRowQ8Go(q2, d2, x)
		for b := range d1 {
			if math.Float32bits(d1[b]) != math.Float32bits(d2[b]) {
				t.Fatalf("quantizeRowQ8(nb=%d): d[%d] = %v, portable %v", nb, b, d1[b], d2[b])
			}
		}
		for i := range q1 {
			if q1[i] != q2[i] {
				t.Fatalf("quantizeRowQ8(nb=%d): q[%d] = %d, portable %d (x = %v)", nb, i, q1[i], q2[i], x[i])
			}
		}
	}
}
