package model

import (
	"os"
	"slices"

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
	rb, _ := to.Bytes(t.Cols()) // cols is a multiple of 256
	w := &tensor.Tensor{Name: t.Name, DType: to, Shape: slices.Clone(t.Shape), Data: make([]byte, t.Rows()*rb)}
	tensor.FillRows(w, func(r int, row []float32) { cpu.DequantRow(row, t, r) })
	return w
}
