package tensor

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"
)

// Encode writes the float32 values src into dst in dtype dt (one row; len(src)
// a whole number of blocks). Q8_0 and Q4_0 quantize as ggml does: one f16
// scale per 32 values, d = max|x|/127 (Q8_0) or max-by-magnitude/-8 (Q4_0);
// Q4_K and Q6_K as ggml's reference quantizers do (encode_kquant.go). Q5_K
// has no encoder: dst is left as it is.
func Encode(dst []byte, dt DType, src []float32) {
	switch dt {
	case Q4_K:
		encodeQ4K(dst, src)
	case Q6_K:
		encodeQ6K(dst, src)
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	case Q8_0:
		for b := 0; b < len(src)/32; b++ {
			xs := src[b*32 : b*32+32]
			var amax float32
			for _, v := range xs {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			d := amax / 127
			id := float32(0)
			if d != 0 {
				id = 1 / d
			}
			blk := dst[b*34 : b*34+34]
			binary.LittleEndian.PutUint16(blk, F32ToF16(d))
			for i, v := range xs {
				blk[2+i] = byte(int8(math.Round(float64(v * id))))
			}
		}
	case Q4_0:
		for b := 0; b < len(src)/32; b++ {
			xs := src[b*32 : b*32+32]
			var amax, m float32
			for _, v := range xs {
				if a := float32(math.Abs(float64(v))); a > amax {
					amax, m = a, v
				}
			}
			d := m / -8
			id := float32(0)
			if d != 0 {
				id = 1 / d
			}
			blk := dst[b*18 : b*18+18]
			binary.LittleEndian.PutUint16(blk, F32ToF16(d))
			q := func(v float32) byte { return byte(min(15, int(v*id+8.5))) }
			for i := 0; i < 16; i++ {
				blk[2+i] = q(xs[i]) | q(xs[i+16])<<4
			}
		}
	}
}

// FillRows sets every row r of t to values(r, row) encoded in t's dtype
// (F8_E4M3: divided by t.Scales, which must be set),
// rows split over the available CPUs; values fills row (len t.Cols()),
// a buffer of its worker's, and must be safe to call concurrently.
func FillRows(t *Tensor, values func(r int, row []float32)) {
	rows, cols, rb := t.Rows(), t.Cols(), t.RowBytes()
	workers := min(runtime.GOMAXPROCS(0), max(1, rows/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := make([]float32, cols)
			for r := rows * w / workers; r < rows*(w+1)/workers; r++ {
				values(r, row)
				if t.DType == F8_E4M3 {
					encodeFP8Row(t.Data[r*rb:(r+1)*rb], row, t.Scales, r)
					continue
				}
				Encode(t.Data[r*rb:(r+1)*rb], t.DType, row)
			}
		}()
	}
	wg.Wait()
}
