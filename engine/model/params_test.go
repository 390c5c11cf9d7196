package model

import "testing"

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
