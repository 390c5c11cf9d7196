//go:build cuda

package cuda

import (
	"encoding/binary"
	"math"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// syntheticFP8 is a (rows, cols) F8_E4M3 matrix filled on the device with
// e4m3 values uniform in [-448, 448) (fill_f8) and 128x128 block scales
// a/448, a the bf16 synthetic weights' range: the bytes of a block-scaled
// FP8 file, for timing; tiled when m tiles FP8 (the values are random, so
// the order of the elements does not matter).
func (m *dmodel) syntheticFP8(fill cu.Function, s cu.Stream, sms int, kind string, rows, cols int, seed *uint32) (dweight, error) {
	w := dweight{dt: tensor.F8_E4M3, rows: rows, cols: cols, tiled: m.fp8Tileable(kind, rows, cols)}
	p, err := m.alloc(int64(rows) * int64(cols))
	if err != nil {
		return w, err
	}
	w.w = p
	*seed++
	if err := launch(fill, [3]int{4 * sms, 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(p), i64(rows*cols), uint64(*seed)); err != nil {
		return w, err
	}
	gr, gc := (rows+fp8Block-1)/fp8Block, (cols+fp8Block-1)/fp8Block
	grid := make([]byte, 16+4*gr*gc)
	for i, h := range []uint32{7, 7, uint32(gc), 0} {
		binary.LittleEndian.PutUint32(grid[4*i:], h)
	}
	scale := math.Float32bits(float32(1.7 / sqrtf(float64(cols)) / tensor.E4M3Max))
	for i := range gr * gc {
		binary.LittleEndian.PutUint32(grid[16+4*i:], scale)
	}
	if w.s, err = m.upload(grid); err != nil {
		return w, err
	}
	w.sbytes = int64(len(grid))
	return w, nil
}
