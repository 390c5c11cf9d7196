package cpu

import (
	"runtime"
	"sync"
	"unsafe"

	"rigscope/engine/tensor"
)

// Pool runs row-parallel kernels on a fixed number of goroutines.
type Pool struct {
	Threads int
}

// NewPool returns a pool with n threads (n <= 0: one per CPU).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	return &Pool{Threads: n}
}

// parallel splits [0, n) into contiguous chunks, one per thread, and calls
// fn(lo, hi, worker) on each; it returns when all are done.
func (p *Pool) parallel(n int, fn func(lo, hi, worker int)) {
	th := 1
	if p != nil {
		th = p.Threads
	}
	if th > n {
		th = n
	}
	if th <= 1 {
		fn(0, n, 0)
		return
	}
	var wg sync.WaitGroup
	wg.Add(th - 1)
	for w := 1; w < th; w++ {
		lo, hi := n*w/th, n*(w+1)/th
		go func() {
			defer wg.Done()
			fn(lo, hi, w)
		}()
	}
	fn(0, n/th, 0)
	wg.Wait()
}

// MatMul computes out = x · wᵀ for T rows of x.
//
//	x   (T, cols)   float32
//	w   (rows, cols) any supported dtype, read once for all T rows
//	out (T, rows)   float32; row t starts at t*outStride
//
// outStride lets a vocab-parallel shard write its columns of a wider output.
func (p *Pool) MatMul(out []float32, outStride int, x []float32, T int, w *tensor.Tensor) {
	rows, cols := w.Rows(), w.Cols()
	x = x[:T*cols]
	p.parallel(rows, func(lo, hi, _ int) {
		if w.DType == tensor.F32 {
			for r := lo; r < hi; r++ {
				wr := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w.Row(r)))), cols)
				for t := 0; t < T; t++ {
					out[t*outStride+r] = dot(x[t*cols:(t+1)*cols], wr)
				}
			}
			return
		}
		if w.DType == tensor.Q8_0 && T < 4 {
			for r := lo; r < hi; r++ {
				wr := w.Row(r)
				for t := 0; t < T; t++ {
					out[t*outStride+r] = dotQ8(x[t*cols:(t+1)*cols], wr)
				}
			}
			return
		}
		buf := make([]float32, cols) // one row, dequantized; stays in L1/L2
		for r := lo; r < hi; r++ {
			dequant(buf, w.DType, w.Row(r))
			for t := 0; t < T; t++ {
				out[t*outStride+r] = dot(x[t*cols:(t+1)*cols], buf)
			}
		}
	})
}
