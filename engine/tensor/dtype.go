package tensor

import (
	"fmt"
	"math"
)

// DType is the storage type of a tensor's elements as they lie in a model
// file. Activations are always float32; weights keep their file dtype and are
// dequantized inside the matmul.
type DType uint8

const (
	F32     DType = iota
	F16           // IEEE half
	BF16          // bfloat16
	Q8_0          // ggml: blocks of 32 int8 with one f16 scale (34 bytes)
	Q4_0          // ggml: blocks of 32 4-bit with one f16 scale (18 bytes)
	Q4_K          // ggml k-quant: super-blocks of 256 (144 bytes)
	Q6_K          // ggml k-quant: super-blocks of 256 (210 bytes)
	Q5_K          // ggml k-quant: super-blocks of 256 (176 bytes)
	F8_E4M3       // OCP float8 e4m3fn (1 byte); the tensor's Scales give the dequantization factors (fp8.go)
)

var dtypeNames = [...]string{F32: "F32", F16: "F16", BF16: "BF16", Q8_0: "Q8_0", Q4_0: "Q4_0", Q4_K: "Q4_K", Q6_K: "Q6_K", Q5_K: "Q5_K", F8_E4M3: "F8_E4M3"}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// BlockSize is the number of elements that share one block (1 for plain types).
func (d DType) BlockSize() int {
	switch d {
	case Q8_0, Q4_0:
		return 32
	case Q4_K, Q5_K, Q6_K:
		return 256
	}
	return 1
}

// BlockBytes is the size in bytes of one block.
func (d DType) BlockBytes() int {
	switch d {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case F8_E4M3:
		return 1
	case Q8_0:
		return 34
	case Q4_0:
		return 18
	case Q4_K:
		return 144
	case Q5_K:
		return 176
	case Q6_K:
		return 210
	}
	return 0
}

// Bytes is the storage size of n elements, or an error when n does not fill
// whole blocks.
func (d DType) Bytes(n int) (int, error) {
	bs := d.BlockSize()
	if d.BlockBytes() == 0 {
		return 0, fmt.Errorf("dtype %v: unknown storage size", d)
	}
	if n < 0 || n%bs != 0 {
		return 0, fmt.Errorf("dtype %v: %d elements is not a whole number of %d-element blocks", d, n, bs)
	}
	return n / bs * d.BlockBytes(), nil
}

// F16ToF32 converts an IEEE half to float32.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: normalize
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// F32ToF16 converts float32 to IEEE half, rounding to nearest even.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	if b&0x7fffffff > 0x7f800000 { // NaN
		return sign | 0x7e00
	}
	if exp >= 0x1f {
		return sign | 0x7c00
	}
	if exp <= 0 {
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++
	}
	return sign | uint16(half)
}

// BF16ToF32 converts a bfloat16 to float32 exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 converts float32 to bfloat16, rounding to nearest even.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
