package model

import (
	"os"
	"slices"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// kquantTarget is the dtype ggml k-quant matrices (Q4_K, Q5_K, Q6_K) are
// re-encoded to where a reader cannot take them as stored (tensor-parallel
// shards on the CPU; the GPU, whose kernels do not read k-quants yet): Q8_0,
// or F16 with RIGSCOPE_KQUANT=f16 (closer to the file's values, twice the
// memory). On gocoder-14m both agree with llama.cpp's greedy tokens equally
// (bench/peer-kquants.sh).
func kquantTarget() tensor.DType {
	if os.Getenv("RIGSCOPE_KQUANT") == "f16" {
		return tensor.F16
	}
	return tensor.Q8_0
}

// widenKQuant returns t re-encoded as kquantTarget when it holds k-quants,
// else t itself. Each row is decoded as ggml decodes it (float32), then
// encoded: Q8_0 rounds each weight to within
// 1/254 of its 32-weight block's largest magnitude (Q4_K's own step is
// 1/15 of its sub-block's range); F16 to 11 bits.
func widenKQuant(t *tensor.Tensor) *tensor.Tensor {
	if t.DType != tensor.Q4_K && t.DType != tensor.Q5_K && t.DType != tensor.Q6_K {
		return t
	}
	to := kquantTarget()
	rb, _ := to.Bytes(t.Cols()) // cols is a multiple of 256
	w := &tensor.Tensor{Name: t.Name, DType: to, Shape: slices.Clone(t.Shape), Data: make([]byte, t.Rows()*rb)}
	tensor.FillRows(w, func(r int, row []float32) { cpu.DequantRow(row, t, r) })
	return w
}

// WidenKQuants re-encodes every k-quant matrix of w in place as
// kquantTarget (widenKQuant), for a reader whose kernels take Q8_0 and F16
// but not k-quants (the GPU). The norm vectors are float32 already.
func (w *Weights) WidenKQuants() {
	w.TokEmbd = widenKQuant(w.TokEmbd)
	w.Output = widenKQuant(w.Output)
	for i := range w.Layers {
		L := &w.Layers[i]
		for _, t := range []**tensor.Tensor{&L.Wq, &L.Wk, &L.Wv, &L.Wo, &L.Gate, &L.Up, &L.Down} {
			*t = widenKQuant(*t)
		}
	}
}
