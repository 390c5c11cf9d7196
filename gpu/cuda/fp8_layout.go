package cuda

import (
	"encoding/binary"
	"fmt"
	"math"

	"rigscope/engine/tensor"
)

// FP8 weights on the GPU (kernels/fp8.cu): the e4m3 bytes row-major as
// the file stores them, and beside them one scale grid in one of two
// layouts the kernels index with shifts: a scale per row (per-tensor and
// per-channel files; a per-tensor scale repeated over its rows, so that
// Wq, Wk and Wv of different scales stack into one qkv matrix), or one per
// 128x128 block (DeepSeek-V3 and Qwen3 FP8: weight_block_size).

// fp8Cols: an FP8 row is whole 16-byte chunks (WF8::E), each in one
// column block.
const fp8Cols = 16

// fp8Block is the block edge the block layout implements.
const fp8Block = 128

// fp8ScaleGrid is the device scale grid of F8_E4M3 tensors stacked by
// rows (fp8.cu's ws): header {rs, cs, gc, 0} then the float32 scales.
// The block layout needs every tensor's scales in 128x128 blocks from a
// block-aligned offset (a TP shard's), and every tensor but the last
// stacked a whole number of blocks; the per-row layout needs scales that
// do not change along a row.
func fp8ScaleGrid(ts []*tensor.Tensor) ([]byte, error) {
	block, perRow := true, true
	for i, t := range ts {
		s := t.Scales
		if t.DType != tensor.F8_E4M3 || s == nil {
			return nil, fmt.Errorf("cuda: tensor %q: %v without FP8 scales", t.Name, t.DType)
		}
		if err := t.Check(); err != nil {
			return nil, fmt.Errorf("cuda: %w", err)
		}
		block = block && s.BlockRows == fp8Block && s.BlockCols == fp8Block && s.Row0%fp8Block == 0 && s.Col0%fp8Block == 0 &&
			(i == len(ts)-1 || t.Rows()%fp8Block == 0)
		perRow = perRow && s.Col0/s.BlockCols == (s.Col0+t.Cols()-1)/s.BlockCols
	}
	var hdr [4]int32
	var vals []float32
	switch {
	case perRow:
		hdr = [4]int32{0, 31, 1, 0}
		for _, t := range ts {
			for r := range t.Rows() {
				vals = append(vals, t.Scales.At(r, 0))
			}
		}
	case block:
		cols := ts[0].Cols()
		gc := (cols + fp8Block - 1) / fp8Block
		hdr = [4]int32{7, 7, int32(gc), 0}
		for _, t := range ts {
			for rb := 0; rb < t.Rows(); rb += fp8Block {
				for cb := range gc {
					vals = append(vals, t.Scales.At(rb, cb*fp8Block))
				}
			}
		}
	default:
		t := ts[0]
		return nil, fmt.Errorf("cuda: FP8 tensor %q: %s scales (at row %d, column %d of the checkpoint's matrix) are not implemented on the GPU (per-tensor, per-channel, or 128x128 blocks from a block-aligned shard)",
			t.Name, t.Scales.Scheme(), t.Scales.Row0, t.Scales.Col0)
	}
	b := make([]byte, 16+4*len(vals))
	for i, h := range hdr {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(h))
	}
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[16+4*i:], math.Float32bits(v))
	}
	return b, nil
}

// fp8ScaleAt is what fp8.cu's WF8 reads from grid for element (row, k):
// the host's twin of the kernel's index, for tests.
func fp8ScaleAt(grid []byte, row, k int) float32 {
	rs, cs, gc := binary.LittleEndian.Uint32(grid), binary.LittleEndian.Uint32(grid[4:]), int(binary.LittleEndian.Uint32(grid[8:]))
	i := int(uint64(row)>>rs)*gc + int(uint64(k)>>cs)
	return math.Float32frombits(binary.LittleEndian.Uint32(grid[16+4*i:]))
}
