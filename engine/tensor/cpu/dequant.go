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
	case tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0:
		return nil
	}
	return fmt.Errorf("cpu: dtype %v is not supported by the CPU kernels (F32, F16, BF16, Q8_0, Q4_0 are)", d)
}

// DequantRow writes row r of w as float32 into dst (len = w.Cols()).
func DequantRow(dst []float32, w *tensor.Tensor, r int) {
	dequant(dst, w.DType, w.Row(r))
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
	default:
		panic(fmt.Sprintf("cpu: dequant of %v", dt)) // callers check Supported at load time
	}
}
