package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
)

// Every output element of a matrix product is computed the same way
// whatever the batch size and the row split over threads: row t of
// MatMul(x, T=16) equals MatMul(x[t], T=1) and row t of MatMul(x, T=5) bit
// for bit, for every dtype. Speculative verification (a batch of k+1) must
// reproduce plain decoding (batches of 1) exactly, or greedy outputs
// diverge on near-ties.
func TestMatMulBatchInvariant(t *testing.T) {
	for _, mode := range []string{"detected", "no-avx512", "no-vnni", "portable"} {
		t.Run(mode, func(t *testing.T) {
			switch mode {
			case "no-avx512":
				defer useNoAVX512()()
			case "no-vnni":
				defer useNoVNNI()()
			case "portable":
				defer usePortable(true)()
			}
			testMatMulBatchInvariant(t)
		})
	}
}

func testMatMulBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const rows = 53 // not a multiple of any tile or chunk size
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0} {
		colsList := []int{64, 96, 160}
		if dt == tensor.F32 || dt == tensor.F16 || dt == tensor.BF16 {
			colsList = append(colsList, 40, 8) // float tails: not a multiple of 16
		}
		for _, cols := range colsList {
			vals := randVec(rng, rows*cols)
			if dt == tensor.Q8_0 {
				vals[0], vals[1] = 127.0/40, -128.0/40 // extreme int8 weights
			}
			w := encodeRows(t, dt, rows, cols, vals)
			const T = 16
			x := randVec(rng, T*cols)
			for i := range cols { // a token row with a large dynamic range
				x[3*cols+i] *= float32(math.Pow(10, float64(i%7-3)))
			}
			ref := make([]float32, T*rows) // T=1 on one thread, token by token
			for tt := 0; tt < T; tt++ {
				NewPool(1).MatMul(ref[tt*rows:(tt+1)*rows], rows, x[tt*cols:(tt+1)*cols], 1, w)
			}
			for _, th := range []int{1, 2, 3} {
				p := NewPool(th)
				for _, batch := range []int{1, 2, 3, 4, 5, 16} {
					out := make([]float32, T*(rows+3))
					for t0 := 0; t0 < T; t0 += batch {
						n := min(batch, T-t0)
						p.MatMul(out[t0*(rows+3):], rows+3, x[t0*cols:(t0+n)*cols], n, w)
					}
					for tt := 0; tt < T; tt++ {
						for r := 0; r < rows; r++ {
							got, want := out[tt*(rows+3)+r], ref[tt*rows+r]
							if math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%v cols=%d threads=%d: MatMul in batches of %d: out[%d][%d] = %v (%#x), T=1 gives %v (%#x)",
									dt, cols, th, batch, tt, r, got, math.Float32bits(got), want, math.Float32bits(want))
							}
						}
					}
				}
			}
		}
	}
}

// A key's attention score does not depend on how many keys are scored in
// the same call (the kernel takes four at a time), so a tree batch, which
// scores its own keys one by one, matches a chain.
func TestAttnScoresKeyInvariant(t *testing.T) {
	for _, portable := range []bool{false, true} {
		restore := usePortable(portable)
		rng := rand.New(rand.NewPCG(31, 32))
		for _, hd := range []int{8, 64, 72, 6} {
			stride := 2*hd + 8
			K := randVec(rng, 11*stride)
			q := randVec(rng, hd)
			for n := 1; n <= 11; n++ {
				sc := make([]float32, n)
				AttnScores(sc, q, K, stride, 0.125)
				for j := range n {
					var one [1]float32
					AttnScores(one[:], q, K[j*stride:], stride, 0.125)
					if math.Float32bits(one[0]) != math.Float32bits(sc[j]) {
						t.Fatalf("portable=%v hd=%d: AttnScores over %d keys: key %d = %v, alone = %v", portable, hd, n, j, sc[j], one[0])
					}
				}
			}
		}
		restore()
	}
}
