package cuda

import (
	"encoding/binary"
	"testing"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
)

// The synthetic GPU shards must have the shapes model.LoadWeights gives
// the same rank of a real model.
func TestSyntheticDimsMatchLoadWeights(t *testing.T) {
	for _, preset := range []string{"tiny", "small", "tiny-moe"} {
		src, err := synthetic.Open("synthetic:" + preset + "?dtype=bf16&layers=1")
		if err != nil {
			t.Fatal(err)
		}
		cfg := src.Config()
		for _, tp := range model.ValidTP(cfg, 8) {
			for r := 0; r < tp; r++ {
				sh := model.Shard{Rank: r, Size: tp}
				w, err := model.LoadWeights(src, sh)
				if err != nil {
					t.Fatalf("%s tp %d rank %d: %v", preset, tp, r, err)
				}
				if got, want := syntheticDims(cfg, sh), weightDims(w); got != want {
					t.Errorf("%s tp %d rank %d: syntheticDims = %+v, LoadWeights gives %+v", preset, tp, r, got, want)
				}
			}
		}
		src.Close()
	}
}

// tileBF16 must put W[row][k] where lane L = 4g+c of the tile holds its
// mma.m16n8k16 A fragment: a0,a1 = W[g][2c+e], a2,a3 = W[g+8][2c+e],
// a4,a5 = W[g][2c+8+e], a6,a7 = W[g+8][2c+8+e] (PTX ISA, e = 0, 1).
func TestTileBF16FragmentOrder(t *testing.T) {
	const rows, cols = 48, 64
	src := make([]byte, 2*rows*cols)
	for i := 0; i < rows*cols; i++ {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i)) // element id
	}
	dst := tileBF16(src, rows, cols)
	kt := cols / 16
	for nt := 0; nt < rows/16; nt++ {
		for k := 0; k < kt; k++ {
			for lane := 0; lane < 32; lane++ {
				g, c := lane/4, lane%4
				want := [8][2]int{
					{g, 2 * c}, {g, 2*c + 1}, {g + 8, 2 * c}, {g + 8, 2*c + 1},
					{g, 2*c + 8}, {g, 2*c + 9}, {g + 8, 2*c + 8}, {g + 8, 2*c + 9},
				}
				for i, rc := range want {
					off := ((nt*kt+k)*32+lane)*8 + i
					got := int(binary.LittleEndian.Uint16(dst[2*off:]))
					if id := (nt*16+rc[0])*cols + k*16 + rc[1]; got != id {
						t.Fatalf("tile (%d, %d) lane %d element %d: holds W[%d][%d], want W[%d][%d]",
							nt, k, lane, i, got/cols, got%cols, id/cols, id%cols)
					}
				}
			}
		}
	}
}
