package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
)

// BenchmarkMatMul times the matrix product per dtype for a decode step
// (T=1: bound by reading the weights, reported as GB/s of weights) and a
// prefill tile (T=64: bound by arithmetic, reported as GFLOP/s), at the
// gocoder-14m FFN shape (1024 x 512).
func BenchmarkMatMul(b *testing.B) {
	const rows, cols = 1024, 512
	rng := rand.New(rand.NewPCG(1, 1))
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.F16, tensor.F32, tensor.BF16, tensor.Q4_0} {
		w := encodeRows(b, dt, rows, cols, randVec(rng, rows*cols))
		for _, T := range []int{1, 64} {
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%v/T=%d/threads=%d", dt, T, th), func(b *testing.B) {
					x, out := randVec(rng, T*cols), make([]float32, T*rows)
					p := NewPool(th)
					b.SetBytes(int64(len(w.Data)))
					for b.Loop() {
						p.MatMul(out, rows, x, T, w)
					}
					s := b.Elapsed().Seconds()
					b.ReportMetric(float64(len(w.Data))*float64(b.N)/s/1e9, "GB/s")
					b.ReportMetric(2*float64(rows*cols*T)*float64(b.N)/s/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkKernel times the single-thread inner loops on one row.
func BenchmarkKernel(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(2, 2))
	x, y := randVec(rng, n), randVec(rng, n)
	w8 := encodeRows(b, tensor.Q8_0, 1, n, x).Data
	w16 := encodeRows(b, tensor.F16, 1, n, x).Data
	qx, dx := make([]int8, 4*n), make([]float32, 4*n/32)
	for k := 0; k < 4; k++ {
		quantizeRowQ8(qx[k*n:(k+1)*n], dx[k*n/32:(k+1)*n/32], y)
	}
	report := func(b *testing.B, bytes, flops float64) {
		s := b.Elapsed().Seconds()
		b.ReportMetric(bytes*float64(b.N)/s/1e9, "GB/s")
		b.ReportMetric(flops*float64(b.N)/s/1e9, "GFLOP/s")
	}
	var sink float32
	b.Run("dotQ8Q8", func(b *testing.B) {
		for b.Loop() {
			sink += dotQ8Q8(w8, qx, dx[:n/32])
		}
		report(b, float64(len(w8)), 2*n)
	})
	b.Run("dotQ8Q8Go", func(b *testing.B) {
		for b.Loop() {
			sink += dotQ8Q8Go(w8, qx, dx[:n/32])
		}
		report(b, float64(len(w8)), 2*n)
	})
	b.Run("dotF16", func(b *testing.B) {
		for b.Loop() {
			sink += dotF16(w16, y)
		}
		report(b, float64(len(w16)), 2*n)
	})
	b.Run("dotF32", func(b *testing.B) {
		for b.Loop() {
			sink += dot(x, y)
		}
		report(b, 4*n, 2*n)
	})
	b.Run("dotF32Go", func(b *testing.B) {
		for b.Loop() {
			sink += dotGo(x, y)
		}
		report(b, 4*n, 2*n)
	})
	b.Run("quantizeRowQ8", func(b *testing.B) {
		for b.Loop() {
			quantizeRowQ8(qx[:n], dx[:n/32], y)
		}
		report(b, 4*n, 0)
	})
	_ = sink
}

// randQ8 is a Q8_0 matrix (rows, cols) of random blocks (scales in [0.5, 1)),
// built directly: the big decode shapes are too large to encode from float32.
func randQ8(rng *rand.Rand, rows, cols int) *tensor.Tensor {
	nb := cols / 32
	data := make([]byte, rows*nb*34)
	for i := 0; i < rows*nb; i++ {
		blk := data[i*34 : (i+1)*34]
		h := tensor.F32ToF16(0.5 + 0.5*rng.Float32())
		blk[0], blk[1] = byte(h), byte(h>>8)
		for j := 2; j < 34; j++ {
			blk[j] = byte(rng.IntN(255) - 127)
		}
	}
	return &tensor.Tensor{Name: "w", DType: tensor.Q8_0, Shape: []int{rows, cols}, Data: data}
}

// BenchmarkMatMulDecodeQ8 times one Q8_0 decode step (T=1) at the llama-1b
// shapes: 2048x2048 (attention; in the last-level cache), 8192x2048 (FFN)
// and 65536x2048 (half the output projection; from DRAM), in GB/s of
// weights read.
func BenchmarkMatMulDecodeQ8(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, rows := range []int{2048, 8192, 65536} {
		const cols = 2048
		w := randQ8(rng, rows, cols)
		x, out := randVec(rng, cols), make([]float32, rows)
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("rows=%d/threads=%d", rows, th), func(b *testing.B) {
				p := NewPool(th)
				b.SetBytes(int64(len(w.Data)))
				for b.Loop() {
					p.MatMul(out, rows, x, 1, w)
				}
				b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
