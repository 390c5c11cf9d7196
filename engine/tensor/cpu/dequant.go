package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"rigscope/engine/tensor"
)

// f16Table maps every IEEE half to its float32 value (256 KiB, built once).
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = tensor.F16ToF32(uint16(i))
	}
	return &t
}()

// Supported reports whether the kernels here can read dtype d.
func Supported(d tensor.DType) error {
	switch d {
	case tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.F8_E4M3:
		return nil
	}
	return fmt.Errorf("cpu: dtype %v is not supported by the CPU kernels (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, F8_E4M3 are)", d)
}

// DequantRow writes row r of w as float32 into dst (len = w.Cols()).
func DequantRow(dst []float32, w *tensor.Tensor, r int) {
	if w.DType == tensor.F8_E4M3 {
		dequantFP8(dst, w, r)
		return
	}
	dequant(dst, w.DType, w.Row(r))
}

// dequantFP8 is row r of an F8_E4M3 weight: each byte's exact value times
// its block's scale (one product per element, as the GPU kernels do it).
func dequantFP8(dst []float32, w *tensor.Tensor, r int) {
	src, s := w.Row(r), w.Scales
	bc := min(s.BlockCols-(s.Col0%s.BlockCols), len(dst)) // the first run may start inside a block
	for c := 0; c < len(dst); {
		end := min(c+bc, len(dst))
		sc := s.At(r, c)
		for i := c; i < end; i++ {
			dst[i] = tensor.E4M3Table[src[i]] * sc
		}
		c, bc = end, s.BlockCols
	}
}

func dequant(dst []float32, dt tensor.DType, src []byte) {
	n := len(dst)
	switch dt {
	case tensor.F32:
		s := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(src))), n)
		copy(dst, s)
	case tensor.F16:
		f16Row(dst, src)
	case tensor.BF16:
		s := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), n)
		for i, h := range s {
			dst[i] = math.Float32frombits(uint32(h) << 16)
		}
	case tensor.Q8_0:
		for b := 0; b < n/32; b++ {
			blk := src[b*34 : b*34+34]
			d := f16Table[binary.LittleEndian.Uint16(blk)]
			out := dst[b*32 : b*32+32]
			for i := range out {
				out[i] = d * float32(int8(blk[2+i]))
			}
		}
	case tensor.Q4_0:
		for b := 0; b < n/32; b++ {
			blk := src[b*18 : b*18+18]
			d := f16Table[binary.LittleEndian.Uint16(blk)]
			out := dst[b*32 : b*32+32]
			for i := 0; i < 16; i++ {
				q := blk[2+i]
				out[i] = d * float32(int(q&0x0f)-8)
				out[i+16] = d * float32(int(q>>4)-8)
			}
		}
	case tensor.Q4_K:
		for b := 0; b < n/256; b++ {
			dequantQ4K(dst[b*256:b*256+256], src[b*144:b*144+144])
		}
	case tensor.Q5_K:
		for b := 0; b < n/256; b++ {
			dequantQ5K(dst[b*256:b*256+256], src[b*176:b*176+176])
		}
	case tensor.Q6_K:
		for b := 0; b < n/256; b++ {
			dequantQ6K(dst[b*256:b*256+256], src[b*210:b*210+210])
		}
	default:
		panic(fmt.Sprintf("cpu: dequant of %v", dt)) // callers check Supported at load time
	}
}

// dequantQ4K decodes one ggml block_q4_K (256 weights in 144 bytes: f16 d
// and dmin, 12 bytes of 6-bit sub-block scales and mins, 128 bytes of 4-bit
// quants) as ggml's dequantize_row_q4_K does: sub-block j of 32 weights is
// d*sc_j*q - dmin*m_j, the low nibbles of 32 bytes first, then their high
// nibbles.
func dequantQ4K(dst []float32, blk []byte) {
	d := f16Table[binary.LittleEndian.Uint16(blk)]
	dmin := f16Table[binary.LittleEndian.Uint16(blk[2:])]
	scales, qs := blk[4:16], blk[16:144]
	for j := 0; j < 8; j += 2 {
		sc1, m1 := scaleMinK4(j, scales)
		sc2, m2 := scaleMinK4(j+1, scales)
		d1, mn1 := d*float32(sc1), dmin*float32(m1)
		d2, mn2 := d*float32(sc2), dmin*float32(m2)
		q := qs[j*16 : j*16+32]
		lo, hi := dst[j*32:j*32+32], dst[j*32+32:j*32+64]
		for l, b := range q {
			lo[l] = float32(d1*float32(b&0xf)) - mn1
			hi[l] = float32(d2*float32(b>>4)) - mn2
		}
	}
}

// dequantQ5K decodes one ggml block_q5_K (256 weights in 176 bytes: f16 d
// and dmin, 12 bytes of 6-bit scales and mins, 32 bytes qh of fifth bits,
// 128 bytes of 4-bit quants) as ggml's dequantize_row_q5_K does: Q4_K's
// layout, with bit j of qh[l] the fifth bit of weight l of sub-block j.
func dequantQ5K(dst []float32, blk []byte) {
	d := f16Table[binary.LittleEndian.Uint16(blk)]
	dmin := f16Table[binary.LittleEndian.Uint16(blk[2:])]
	scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
	for j := 0; j < 8; j += 2 {
		sc1, m1 := scaleMinK4(j, scales)
		sc2, m2 := scaleMinK4(j+1, scales)
		d1, mn1 := d*float32(sc1), dmin*float32(m1)
		d2, mn2 := d*float32(sc2), dmin*float32(m2)
		q := qs[j*16 : j*16+32]
		lo, hi := dst[j*32:j*32+32], dst[j*32+32:j*32+64]
		for l, b := range q {
			lo[l] = float32(d1*float32(b&0xf|qh[l]>>j&1<<4)) - mn1
			hi[l] = float32(d2*float32(b>>4|qh[l]>>(j+1)&1<<4)) - mn2
		}
	}
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (ggml's
// get_scale_min_k4).
func scaleMinK4(j int, q []byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | q[j-4]>>6<<4, q[j+4]>>4 | q[j]>>6<<4
}

// dequantQ6K decodes one ggml block_q6_K (256 weights in 210 bytes: 128
// bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales, f16 d) as ggml's
// dequantize_row_q6_K does: weight = d*scale*(q-32), each scale covering 16
// weights.
func dequantQ6K(dst []float32, blk []byte) {
	d := f16Table[binary.LittleEndian.Uint16(blk[208:])]
	for n := 0; n < 2; n++ {
		ql, qh := blk[n*64:n*64+64], blk[128+n*32:128+n*32+32]
		sc := blk[192+n*8 : 192+n*8+8]
		y := dst[n*128 : n*128+128]
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
			q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
			q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			y[l] = d * float32(int8(sc[is])) * float32(q1)
			y[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			y[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			y[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
	}
}
