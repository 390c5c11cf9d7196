package tensor

import (
	"fmt"
	"math"
)

// F8_E4M3 is the OCP "e4m3fn" float8 that FP8 checkpoints store (torch's
// float8_e4m3fn, safetensors' F8_E4M3): 1 sign bit, 4 exponent bits (bias
// 7), 3 mantissa bits, no infinities; 0x7f and 0xff are NaN, ±448 the
// largest finite values, 2^-9 the smallest subnormal.

// E4M3Table maps every e4m3fn byte to its float32 value (exact).
var E4M3Table = func() *[256]float32 {
	var t [256]float32
	for i := range t {
		t[i] = e4m3Decode(uint8(i))
	}
	return &t
}()

func e4m3Decode(b uint8) float32 {
	sign := float32(1)
	if b&0x80 != 0 {
		sign = -1
	}
	exp, mant := int(b>>3)&0xf, int(b&7)
	switch {
	case exp == 0xf && mant == 7:
		return float32(math.NaN())
	case exp == 0:
		return sign * float32(math.Ldexp(float64(mant), -9)) // mant/8 * 2^-6
	}
	return sign * float32(math.Ldexp(float64(8+mant), exp-7-3))
}

// E4M3ToF32 is the value of an e4m3fn byte.
func E4M3ToF32(b uint8) float32 { return E4M3Table[b] }

// E4M3Max is the largest finite e4m3fn value.
const E4M3Max = 448

// F32ToE4M3 rounds f to the nearest e4m3fn value (ties to even), saturating
// at ±448 as torch's quantizers clamp before the cast; NaN stays NaN.
func F32ToE4M3(f float32) uint8 {
	var sign uint8
	if math.Signbit(float64(f)) {
		sign, f = 0x80, -f
	}
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return sign | 0x7f
	case v >= E4M3Max:
		return sign | 0x7e
	case v < math.Ldexp(1, -6): // subnormal: steps of 2^-9; 8 steps is 0x08 = 2^-6
		return sign | uint8(math.RoundToEven(math.Ldexp(v, 9)))
	}
	frac, e := math.Frexp(v)                // v = frac * 2^e, frac in [0.5, 1)
	q := int(math.RoundToEven(frac*16)) - 8 // mantissa steps of 1/8 above 1
	e--
	if q == 8 {
		q, e = 0, e+1
	}
	code := (e+7)<<3 | q
	if code > 0x7e {
		code = 0x7e
	}
	return sign | uint8(code)
}

// Scales are the dequantization factors of an F8_E4M3 weight as the FP8
// checkpoints store them, one float32 per block of BlockRows × BlockCols
// elements: the whole matrix (one scale per tensor), 1 × cols (one per
// output row, "per-channel"), or 128 × 128 blocks (DeepSeek-V3, Qwen3
// FP8: weight_block_size). A view of a shard keeps the parent's grid and
// its own offset in it.
type Scales struct {
	BlockRows, BlockCols int       // elements a scale covers
	GridCols             int       // scales per grid row: ceil(parent cols / BlockCols)
	Values               []float32 // [ceil(parent rows / BlockRows), GridCols]
	Row0, Col0           int       // this view's first row and column in the parent
}

// NewScales checks a scale grid for a rows × cols matrix: the grid must
// cover the matrix exactly (ceil of each dimension by its block), and every
// scale must be finite and positive.
func NewScales(rows, cols, blockRows, blockCols int, values []float32) (*Scales, error) {
	if rows <= 0 || cols <= 0 || blockRows <= 0 || blockCols <= 0 {
		return nil, fmt.Errorf("scales: %dx%d blocks of a %dx%d matrix", blockRows, blockCols, rows, cols)
	}
	gr, gc := (rows+blockRows-1)/blockRows, (cols+blockCols-1)/blockCols
	if len(values) != gr*gc {
		return nil, fmt.Errorf("scales: %d values for %dx%d blocks of %dx%d (want %dx%d = %d)", len(values), blockRows, blockCols, rows, cols, gr, gc, gr*gc)
	}
	for i, v := range values {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v <= 0 {
			return nil, fmt.Errorf("scales: scale %d (block row %d, block column %d) is %g; a scale must be finite and positive", i, i/gc, i%gc, v)
		}
	}
	return &Scales{BlockRows: blockRows, BlockCols: blockCols, GridCols: gc, Values: values}, nil
}

// At is the scale of element (r, c) of the view.
func (s *Scales) At(r, c int) float32 {
	return s.Values[((s.Row0+r)/s.BlockRows)*s.GridCols+(s.Col0+c)/s.BlockCols]
}

// Scheme names the layout: "per-tensor", "per-channel" or "block RxC".
func (s *Scales) Scheme() string {
	switch {
	case len(s.Values) == 1:
		return "per-tensor"
	case s.BlockRows == 1 && s.GridCols == 1:
		return "per-channel"
	}
	return fmt.Sprintf("block %dx%d", s.BlockRows, s.BlockCols)
}

// view is the scales of the view starting at (r0, c0) of this one (nil
// stays nil).
func (s *Scales) view(r0, c0 int) *Scales {
	if s == nil {
		return nil
	}
	v := *s
	v.Row0 += r0
	v.Col0 += c0
	return &v
}

// checkScales: an F8_E4M3 tensor has scales that cover it, and no other
// dtype has any.
func (t *Tensor) checkScales() error {
	s := t.Scales
	switch {
	case t.DType != F8_E4M3 && s == nil:
		return nil
	case t.DType != F8_E4M3:
		return fmt.Errorf("tensor %q: %v with FP8 scales", t.Name, t.DType)
	case s == nil:
		return fmt.Errorf("tensor %q: F8_E4M3 without scales", t.Name)
	case s.BlockRows <= 0 || s.BlockCols <= 0 || s.GridCols <= 0 || s.Row0 < 0 || s.Col0 < 0:
		return fmt.Errorf("tensor %q: bad FP8 scale grid %+v", t.Name, *s)
	}
	lastR, lastC := (s.Row0+t.Rows()-1)/s.BlockRows, (s.Col0+t.Cols()-1)/s.BlockCols
	if lastC >= s.GridCols || (lastR+1)*s.GridCols > len(s.Values) {
		return fmt.Errorf("tensor %q: %d FP8 scales (%s, %d per grid row) do not cover %v at row %d, column %d", t.Name, len(s.Values), s.Scheme(), s.GridCols, t.Shape, s.Row0, s.Col0)
	}
	return nil
}

// encodeFP8Row writes row r of an F8_E4M3 matrix: each value divided by
// its scale, rounded to e4m3fn (saturating).
func encodeFP8Row(dst []byte, src []float32, s *Scales, r int) {
	for c, v := range src {
		dst[c] = F32ToE4M3(v / s.At(r, c))
	}
}

// QuantizeFP8 quantizes a rows × cols float32 matrix (row-major) to
// e4m3fn as the FP8 checkpoints' quantizers do: each blockRows × blockCols
// block gets the scale amax/448 (1 for an all-zero block), and each value
// is rounded from value/scale. Blocks of the whole matrix make one scale
// per tensor; 1 × cols one per output row.
func QuantizeFP8(name string, rows, cols int, src []float32, blockRows, blockCols int) (*Tensor, error) {
	if len(src) != rows*cols {
		return nil, fmt.Errorf("quantize %q: %d values for %dx%d", name, len(src), rows, cols)
	}
	gr, gc := (rows+blockRows-1)/max(blockRows, 1), (cols+blockCols-1)/max(blockCols, 1)
	amax := make([]float32, gr*gc)
	for r := range rows {
		for c, v := range src[r*cols : (r+1)*cols] {
			i := (r/blockRows)*gc + c/blockCols
			amax[i] = max(amax[i], float32(math.Abs(float64(v))))
		}
	}
	for i, a := range amax {
		amax[i] = 1
		if a > 0 {
			amax[i] = a / E4M3Max
		}
	}
	s, err := NewScales(rows, cols, blockRows, blockCols, amax)
	if err != nil {
		return nil, fmt.Errorf("quantize %q: %w", name, err)
	}
	t := &Tensor{Name: name, DType: F8_E4M3, Shape: []int{rows, cols}, Data: make([]byte, rows*cols), Scales: s}
	for r := range rows {
		encodeFP8Row(t.Data[r*cols:(r+1)*cols], src[r*cols:(r+1)*cols], s, r)
	}
	return t, nil
}
