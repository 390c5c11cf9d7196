//go:build cuda

package cuda

import (
	"math"
	"testing"
)

// The checks' view of a bf16 cache: bytes as the kernels store them (two
// values a 32-bit word, the first in the low half), read back as the same
// values; bf16NearErr accepts a rounding and refuses more.
func TestKVCacheBytes(t *testing.T) {
	v := []float32{1, -2.5, 3.0078125, float32(math.NaN()), 1e-3, 65504}
	for _, f := range kvFormats {
		b := kvCacheBytesOf(v, f)
		if len(b) != len(v)*f.elemBytes() {
			t.Fatalf("%s: %d bytes for %d values", f, len(b), len(v))
		}
		words := make([]float32, len(b)/4)
		for i := range words {
			words[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		}
		got := kvCacheValues(words, f)
		for i, x := range v {
			if math.IsNaN(float64(x)) != math.IsNaN(float64(got[i])) || !math.IsNaN(float64(x)) && bf16NearErr(got[i], float64(x)) != nil && f == kvBF16 {
				t.Errorf("%s: value %d: %v back as %v", f, i, x, got[i])
			}
			if f == kvF32 && math.Float32bits(got[i]) != math.Float32bits(x) {
				t.Errorf("f32: value %d: %v back as %v", i, x, got[i])
			}
		}
	}
	cases := []struct {
		got  float32
		ref  float64
		fine bool
	}{
		{1, 1, true},
		{1, 1.001, true},           // half a step is 2^-9
		{1.0078125, 1.0039, true},  // the other side of the boundary: within 2^-8
		{1.015625, 1.0, false},     // two steps
		{1.00001, 1.00001, false},  // not a bf16 value
		{0, 3e-6, true},            // cancellation floor
		{0.0078125, 0.0077, false}, // 1.5% off
		{float32(math.NaN()), 0, false},
	}
	for _, c := range cases {
		if err := bf16NearErr(c.got, c.ref); (err == nil) != c.fine {
			t.Errorf("bf16NearErr(%v, %v) = %v, want fine %v", c.got, c.ref, err, c.fine)
		}
	}
}
