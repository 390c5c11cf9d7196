package model

import (
	"os"
	"runtime"
	"slices"
	"sync"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// kquantTarget is the dtype ggml k-quant matrices (Q4_K, Q6_K: the bulk of
// a Q4_K_M file) are re-encoded to at load: Q8_0, whose integer kernels
// decode faster than llama.cpp's k-quant kernels on the same file, or F16
// with RIGSCOPE_KQUANT=f16 (closer to the file's values, twice the memory,
// 0.4x the decode speed). On gocoder-14m both agree with llama.cpp's greedy
// tokens equally (bench/peer-kquants.sh).
func kquantTarget() tensor.DType {
	if os.Getenv("RIGSCOPE_KQUANT") == "f16" {
		return tensor.F16
	}
	return tensor.Q8_0
}

// widenKQuant returns t re-encoded as kquantTarget when it holds k-quants,
// else t itself. The CPU and GPU kernels read Q8_0 and F16 with vector
// loads but k-quant blocks only through a per-row dequantization, which
// made decode 13x slower than llama.cpp's. Each row is decoded as ggml
// decodes it (float32), then encoded: Q8_0 rounds each weight to within
// 1/254 of its 32-weight block's largest magnitude (Q4_K's own step is
// 1/15 of its sub-block's range); F16 to 11 bits.
func widenKQuant(t *tensor.Tensor) *tensor.Tensor {
	if t.DType != tensor.Q4_K && t.DType != tensor.Q6_K {
		return t
	}
	to := kquantTarget()
	rows, cols := t.Rows(), t.Cols()
	rb, _ := to.Bytes(cols) // cols is a multiple of 256
	data := make([]byte, rows*rb)
	workers := min(runtime.GOMAXPROCS(0), max(1, rows/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := make([]float32, cols)
			for r := rows * w / workers; r < rows*(w+1)/workers; r++ {
				cpu.DequantRow(row, t, r)
				tensor.Encode(data[r*rb:(r+1)*rb], to, row)
			}
		}()
	}
	wg.Wait()
	return &tensor.Tensor{Name: t.Name, DType: to, Shape: slices.Clone(t.Shape), Data: data}
}
