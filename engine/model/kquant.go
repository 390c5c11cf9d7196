package model

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// widenKQuant returns t as F16 when it holds ggml k-quants (Q4_K, Q6_K,
// the bulk of a Q4_K_M file), else t itself. The CPU and GPU kernels read
// F16 with vector loads but k-quant blocks only through a per-row
// dequantization, which made decode 13x slower than llama.cpp's on the same
// file. Each weight is decoded as ggml decodes it (float32) and rounded to
// f16: 2 bytes per weight, about 3.5x the 4.5-6.6 bits of the file.
func widenKQuant(t *tensor.Tensor) *tensor.Tensor {
	if t.DType != tensor.Q4_K && t.DType != tensor.Q6_K {
		return t
	}
	rows, cols := t.Rows(), t.Cols()
	data := make([]byte, 2*rows*cols)
	workers := min(runtime.GOMAXPROCS(0), max(1, rows/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := make([]float32, cols)
			for r := rows * w / workers; r < rows*(w+1)/workers; r++ {
				cpu.DequantRow(row, t, r)
				out := data[2*r*cols : 2*(r+1)*cols]
				for i, v := range row {
					binary.LittleEndian.PutUint16(out[2*i:], tensor.F32ToF16(v))
				}
			}
		}()
	}
	wg.Wait()
	return &tensor.Tensor{Name: t.Name, DType: tensor.F16, Shape: slices.Clone(t.Shape), Data: data}
}
