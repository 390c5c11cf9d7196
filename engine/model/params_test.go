package model

import (
	"testing"

	"rigscope/engine/tensor"
)

// Params of the real models' shapes are their published sizes.
func TestParamsOfRealShapes(t *testing.T) {
	mixtral := Config{Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 32000,
		MoE: MoE{Experts: 8, PerToken: 2, FFN: 14336}}
	dsv3 := Config{Dim: 7168, Layers: 61, Heads: 128, KVHeads: 128, HeadDim: 64, FFN: 18432, Vocab: 129280,
		MLA: MLA{QRank: 1536, KVRank: 512, NopeDim: 128, RopeDim: 64, VDim: 128},
		MoE: MoE{Experts: 256, PerToken: 8, FFN: 2048, SharedFFN: 2048, FirstDense: 3}}
	for _, tc := range []struct {
		name               string
		c                  Config
		total, active, tol float64 // billions
	}{
		{"Mixtral-8x7B", mixtral, 46.7, 12.9, 0.1},
		{"DeepSeek-V3 (without the MTP layer)", dsv3, 671, 37, 1},
	} {
		p, a := float64(tc.c.Params())/1e9, float64(tc.c.ActiveParams())/1e9
		if p < tc.total-tc.tol || p > tc.total+tc.tol || a < tc.active-tc.tol || a > tc.active+tc.tol {
			t.Errorf("%s: %.2fB parameters, %.2fB active; want %.1fB, %.1fB", tc.name, p, a, tc.total, tc.active)
		}
	}
}

// A decode token reads the top-k experts of each MoE layer, not all.
func TestActiveBytes(t *testing.T) {
	c := Config{Arch: "x", Dim: 8, Layers: 2, Heads: 2, KVHeads: 2, HeadDim: 4, FFN: 16, Vocab: 6,
		MoE: MoE{Experts: 4, PerToken: 1, FFN: 16}}
	w := &Weights{Cfg: c, Layers: make([]Layer, 2)}
	for i := range w.Layers {
		L := &MoELayer{}
		for range c.MoE.Experts {
			L.Gate = append(L.Gate, f32(16, 8))
			L.Up = append(L.Up, f32(16, 8))
			L.Down = append(L.Down, f32(8, 16))
		}
		w.Layers[i].MoE = L
	}
	w.TokEmbd, w.Output = f32(6, 8), f32(6, 8)
	expert := int64(3 * 16 * 8 * 4)
	if got, want := w.Bytes()-w.ActiveBytes(), 2*3*expert; got != want {
		t.Errorf("Bytes - ActiveBytes = %d, want %d (3 unused experts in 2 layers)", got, want)
	}
}

func f32(rows, cols int) *tensor.Tensor {
	return &tensor.Tensor{DType: tensor.F32, Shape: []int{rows, cols}, Data: make([]byte, 4*rows*cols)}
}
