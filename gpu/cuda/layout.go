package cuda

// Shapes and layouts the CUDA target computes on the host: they need no
// GPU (and no cuda build tag), so the tests run everywhere.

import (
	"rigscope/engine/model"
)

// MaxTokens is the most tokens one forward pass takes (decode is 1,
// verifying k drafted tokens is k+1).
const MaxTokens = 16

// bucket is the smallest compiled token count (1, 2, 4, 8, 16) >= T.
func bucket(T int) int {
	for _, b := range []int{1, 2, 4, 8, 16} {
		if T <= b {
			return b
		}
	}
	return MaxTokens
}

// shardDims are a rank's local sizes.
type shardDims struct {
	hq, hk, ffn int // query heads, kv heads, FFN columns (a model of MoE layers only: its experts', so the dense MLP's buffers are not empty)
	vocabLo     int // first logits column of its output rows
	vocab       int // its output rows
	moeFFN      int // its columns of each expert in the MoE layers (0: none)
	moeShared   int // its columns of the shared expert in the MoE layers (0: none)
}

func weightDims(w *model.Weights) shardDims {
	d := shardDims{hq: w.HeadsLocal, hk: w.KVHeadsLocal, ffn: w.FFNHi - w.FFNLo, vocabLo: w.VocabLo, vocab: w.VocabHi - w.VocabLo}
	for i := range w.Layers {
		if L := w.Layers[i].MoE; L != nil {
			d.moeFFN = L.FFNHi - L.FFNLo
			d.moeShared = L.SharedHi - L.SharedLo
			break
		}
	}
	if d.ffn == 0 {
		d.ffn = d.moeFFN
	}
	return d
}

// syntheticDims splits cfg as model.LoadWeights does (bf16: no blocks).
func syntheticDims(cfg model.Config, sh model.Shard) shardDims {
	tp, r := sh.Size, sh.Rank
	hl := cfg.Heads / tp
	lo := r * hl
	group := cfg.Heads / cfg.KVHeads
	kvLo := lo / group
	return shardDims{
		hq: hl, hk: (lo+hl-1)/group - kvLo + 1,
		ffn:     cfg.FFN*(r+1)/tp - cfg.FFN*r/tp,
		vocabLo: cfg.Vocab * r / tp, vocab: cfg.Vocab*(r+1)/tp - cfg.Vocab*r/tp,
		moeFFN:    cfg.MoE.FFN*(r+1)/tp - cfg.MoE.FFN*r/tp,
		moeShared: cfg.MoE.SharedFFN*(r+1)/tp - cfg.MoE.SharedFFN*r/tp,
	}
}

// tileBF16 reorders a row-major bf16 matrix (rows, cols) into 16x16 tiles,
// tile (nt, kt) at ((nt*cols/16)+kt)*256 elements; inside a tile lane
// L = 4g+c holds 8 elements, its mma.m16n8k16 A fragment: W[g][2c+e],
// W[g+8][2c+e], W[g][2c+8+e], W[g+8][2c+8+e] for e = 0, 1.
func tileBF16(src []byte, rows, cols int) []byte { return tileElems(src, rows, cols, 2) }

// tileFP8 is tileBF16's order for a row-major e4m3 matrix, one byte an
// element: a lane's 8 bytes are its fragment's elements (fp8.cu's TcF8).
func tileFP8(src []byte, rows, cols int) []byte { return tileElems(src, rows, cols, 1) }

// tileElems is the tiling of elements of es bytes.
func tileElems(src []byte, rows, cols, es int) []byte {
	dst := make([]byte, len(src))
	kt := cols / 16
	for r := 0; r < rows; r++ {
		nt, rr := r/16, r%16
		g, hr := rr%8, rr/8
		for k := 0; k < cols; k++ {
			kk := k % 16
			lane := g*4 + (kk%8)/2
			idx := (kk/8)*4 + hr*2 + kk%2
			off := ((nt*kt+k/16)*32+lane)*8 + idx
			copy(dst[es*off:es*off+es], src[es*(r*cols+k):])
		}
	}
	return dst
}
