package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
)

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// encodeRows stores float32 rows (rows, cols) in dtype dt as a ggml file would.
func encodeRows(t testing.TB, dt tensor.DType, rows, cols int, vals []float32) *tensor.Tensor {
	t.Helper()
	rb, err := dt.Bytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		src, dst := vals[r*cols:(r+1)*cols], data[r*rb:(r+1)*rb]
		switch dt {
		case tensor.F32, tensor.F16, tensor.BF16:
			tensor.Encode(dst, dt, src)
		case tensor.Q8_0, tensor.Q4_0: // raw bytes under one scale, not a quantization of src
			bb := dt.BlockBytes()
			for b := 0; b < cols/32; b++ {
				blk := dst[b*bb : (b+1)*bb]
				binary.LittleEndian.PutUint16(blk, tensor.F32ToF16(0.01))
				for i := 2; i < bb; i++ {
					blk[i] = byte(int8(src[b*32+i-2] * 40))
				}
			}
		}
	}
	return &tensor.Tensor{Name: "w", DType: dt, Shape: []int{rows, cols}, Data: data}
}

func TestKernelsMatchPortable(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2: only the portable kernels run here")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{32, 64, 96, 128, 512, 1056} {
		a, b := randVec(rng, n+5), randVec(rng, n+5)
		for _, m := range []int{n, n + 5} {
			if got, want := dot(a[:m], b), dotGo(a[:m], b); !close32(got, want, 1e-4*float32(m)) {
				t.Errorf("dot(n=%d) = %v, portable %v", m, got, want)
			}
			y1, y2 := append([]float32(nil), b[:m]...), append([]float32(nil), b[:m]...)
			axpy(y1, 0.3, a)
			axpyGo(y2, 0.3, a)
			for i := range y1 {
				if !close32(y1[i], y2[i], 1e-5) {
					t.Fatalf("axpy(n=%d)[%d] = %v, portable %v", m, i, y1[i], y2[i])
				}
			}
		}
		w16 := encodeRows(t, tensor.F16, 1, n, a[:n]).Data
		if got, want := dotF16(w16, b[:n]), dotF16Go(f16s(w16, n), b[:n]); !close32(got, want, 1e-4*float32(n)) {
			t.Errorf("dotF16(n=%d) = %v, portable %v", n, got, want)
		}
		row := make([]float32, n)
		f16Row(row, w16)
		for i := range row {
			if row[i] != f16Table[binary.LittleEndian.Uint16(w16[2*i:])] {
				t.Fatalf("f16Row(n=%d)[%d] = %v", n, i, row[i])
			}
		}
		// Q8_0 weights against 4 quantized activation rows.
		w8 := encodeRows(t, tensor.Q8_0, 1, n, a[:n]).Data
		nb := n / 32
		qx, dx := make([]int8, 4*n), make([]float32, 4*nb)
		for k := 0; k < 4; k++ {
			quantizeRowQ8(qx[k*n:(k+1)*n], dx[k*nb:(k+1)*nb], randVec(rng, n))
		}
		for k := 0; k < 4; k++ {
			got, want := dotQ8Q8(w8, qx[k*n:], dx[k*nb:(k+1)*nb]), dotQ8Q8Go(w8, qx[k*n:], dx[k*nb:(k+1)*nb])
			if !close32(got, want, 1e-5*float32(n)) {
				t.Errorf("dotQ8Q8(n=%d, row %d) = %v, portable %v", n, k, got, want)
			}
		}
	}
}

func close32(a, b, tol float32) bool { return abs32(a-b) <= tol }

// TestQuantizeRowQ8 checks the round trip error is at most half a step.
func TestQuantizeRowQ8(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randVec(rng, 96)
	x[40] = 0 // one block stays non-zero; test an all-zero block too
	for i := 64; i < 96; i++ {
		x[i] = 0
	}
	q, d := make([]int8, 96), make([]float32, 3)
	quantizeRowQ8(q, d, x)
	for i, v := range x {
		if got := float32(q[i]) * d[i/32]; abs32(got-v) > d[i/32]/2*1.0001 {
			t.Errorf("x[%d] = %v dequantizes to %v (step %v)", i, v, got, d[i/32])
		}
	}
}

// naiveMatMul is the oracle: dequantize every row, float64 sums; mag holds
// sum |w_i x_i| to scale the tolerance.
func naiveMatMul(x []float32, T int, w *tensor.Tensor) (out, mag []float64) {
	rows, cols := w.Rows(), w.Cols()
	out, mag = make([]float64, T*rows), make([]float64, T*rows)
	row := make([]float32, cols)
	for r := 0; r < rows; r++ {
		DequantRow(row, w, r)
		for t := 0; t < T; t++ {
			var s, m float64
			for i, v := range row {
				p := float64(v) * float64(x[t*cols+i])
				s += p
				m += math.Abs(p)
			}
			out[t*rows+r], mag[t*rows+r] = s, m
		}
	}
	return out, mag
}

func TestMatMulFused(t *testing.T) {
	for _, portable := range []bool{false, true} {
		t.Run(fmt.Sprintf("portable=%v", portable), func(t *testing.T) {
			defer usePortable(portable)()
			testMatMulFused(t)
		})
	}
}

func testMatMulFused(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const cols = 96
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0} {
		for _, T := range []int{1, 3, 4, 9, 40} {
			for _, th := range []int{1, 2, 3} {
				name := fmt.Sprintf("%v/T=%d/threads=%d", dt, T, th)
				x := randVec(rng, T*cols)
				wa := encodeRows(t, dt, 70, cols, randVec(rng, 70*cols))
				wb := encodeRows(t, dt, 33, cols, randVec(rng, 33*cols))
				oa, ob := make([]float32, T*80), make([]float32, T*33)
				p := NewPool(th)
				p.MatMulFused(x, T, MatMulJob{oa, 80, wa}, MatMulJob{ob, 33, wb})
				for _, c := range []struct {
					out    []float32
					stride int
					w      *tensor.Tensor
				}{{oa, 80, wa}, {ob, 33, wb}} {
					want, mag := naiveMatMul(x, T, c.w)
					rows := c.w.Rows()
					for tt := 0; tt < T; tt++ {
						for r := 0; r < rows; r++ {
							got, w := float64(c.out[tt*c.stride+r]), want[tt*rows+r]
							tol := 1e-5 * (1 + mag[tt*rows+r])
							if dt == tensor.Q8_0 {
								tol = 0.01 * mag[tt*rows+r] // activations quantized to int8: ~10 sigma
							}
							if math.Abs(got-w) > tol {
								t.Fatalf("%s: MatMulFused out[%d][%d] = %v, want %v", name, tt, r, got, w)
							}
						}
					}
				}
			}
		}
	}
}

// TestPoolParallel checks every element is visited exactly once, many times
// over (the workers park and wake between rounds).
func TestPoolParallel(t *testing.T) {
	p := NewPool(3)
	for round := 0; round < 200; round++ {
		n := 1 + round%37
		seen := make([]int32, n)
		p.Parallel(n, 1+round%4, func(lo, hi, w int) {
			if w < 0 || w >= 3 {
				t.Errorf("worker %d outside [0, 3)", w)
			}
			for i := lo; i < hi; i++ {
				seen[i]++ // chunks are disjoint: no race
			}
		})
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("round %d: Parallel(%d) visited %d %d times", round, n, i, s)
			}
		}
	}
}

func TestAttnKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, hd := range []int{8, 32, 64, 72, 128, 6} {
		for _, n := range []int{1, 3, 4, 9, 33} {
			stride := 3*hd + 8
			K, q := randVec(rng, n*stride), randVec(rng, hd)
			got, want := make([]float32, n), make([]float32, n)
			AttnScores(got, q, K, stride, 0.125)
			attnScoresGo(want, q, K, stride, 0.125)
			for j := range got {
				if !close32(got[j], want[j], 1e-4*float32(hd)) {
					t.Fatalf("AttnScores(hd=%d, n=%d)[%d] = %v, portable %v", hd, n, j, got[j], want[j])
				}
			}
			o1, o2 := randVec(rng, hd), make([]float32, hd)
			AttnMix(o1, want, K, stride)
			attnMixGo(o2, want, K, stride)
			for c := range o1 {
				if !close32(o1[c], o2[c], 1e-4*float32(n)) {
					t.Fatalf("AttnMix(hd=%d, n=%d)[%d] = %v, portable %v", hd, n, c, o1[c], o2[c])
				}
			}
		}
	}
}

func TestDotQ8Q8Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, cols := range []int{32, 64, 96, 512} {
		rows := 7
		w := encodeRows(t, tensor.Q8_0, rows, cols, randVec(rng, rows*cols))
		nb := cols / 32
		qx, dx := make([]int8, cols), make([]float32, nb)
		quantizeRowQ8(qx, dx, randVec(rng, cols))
		got := make([]float32, rows)
		dotQ8Q8Rows(got, w.Data, w.RowBytes(), qx, dx)
		for r := range got {
			if want := dotQ8Q8Go(w.Row(r), qx, dx); !close32(got[r], want, 1e-5*float32(cols)) {
				t.Errorf("dotQ8Q8Rows(cols=%d)[%d] = %v, portable %v", cols, r, got[r], want)
			}
		}
	}
}

// dotF32x2 must equal dot per token bit for bit (batch-size independence).
func TestDotF32x2(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, portable := range []bool{false, true} {
		restore := usePortable(portable)
		for _, n := range []int{8, 16, 32, 48, 128, 136, 12, 200} {
			w, x := randVec(rng, n), randVec(rng, 2*(n+3))
			var got [2]float32
			dotF32x2(&got, w, x, n+3)
			for k := range got {
				want := dot(x[k*(n+3):k*(n+3)+n], w)
				if math.Float32bits(got[k]) != math.Float32bits(want) {
					t.Errorf("portable=%v: dotF32x2(n=%d)[%d] = %v, dot = %v", portable, n, k, got[k], want)
				}
			}
		}
		restore()
	}
}

// dotF32x2Rows must equal dot per (row, token) bit for bit.
func TestDotF32x2Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, mode := range []string{"avx512", "avx2", "portable"} {
		portable := mode == "portable"
		restorePortable := usePortable(portable)
		restoreAVX512 := func() {}
		if mode == "avx2" {
			restoreAVX512 = useNoAVX512()
		}
		restore := func() { restoreAVX512(); restorePortable() }
		for _, n := range []int{16, 32, 48, 128, 136, 12} {
			for _, nrows := range []int{1, 3, 16} {
				w, x := randVec(rng, nrows*n), randVec(rng, 2*(n+3))
				os := nrows + 5
				got := make([]float32, os+nrows)
				dotF32x2Rows(got, os, nrows, w, x, n+3)
				for k := range 2 {
					for r := range nrows {
						want := dot(x[k*(n+3):k*(n+3)+n], w[r*n:(r+1)*n])
						if g := got[k*os+r]; math.Float32bits(g) != math.Float32bits(want) {
							t.Errorf("%s: dotF32x2Rows(n=%d, nrows=%d)[%d][%d] = %v, dot = %v", mode, n, nrows, k, r, g, want)
						}
					}
				}
			}
		}
		restore()
	}
}
