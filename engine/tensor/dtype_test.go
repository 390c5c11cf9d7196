package tensor

import (
	"math"
	"testing"
)

func TestF16RoundTrip(t *testing.T) {
	// Every finite half converts to float32 and back unchanged.
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN payloads
		}
		f := F16ToF32(uint16(h))
		if got := F32ToF16(f); got != uint16(h) {
			t.Fatalf("F32ToF16(F16ToF32(%#04x) = %v) = %#04x", h, f, got)
		}
	}
}

func TestF32ToF16Rounding(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00}, // rounds up to +Inf
		{5.960464477539063e-08, 0x0001},
		{1 + 1.0/2048, 0x3c00}, // tie rounds to even
		{1 + 3.0/2048, 0x3c02},
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, tt := range tests {
		if got := F32ToF16(tt.in); got != tt.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}

func TestBF16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-1.5, 0xbfc0},
		{1.00390625, 0x3f80}, // tie to even
		{1.01171875, 0x3f82},
	}
	for _, tt := range tests {
		if got := F32ToBF16(tt.in); got != tt.want {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", tt.in, got, tt.want)
		}
		if back := BF16ToF32(tt.want); F32ToBF16(back) != tt.want {
			t.Errorf("BF16 round trip of %#04x failed", tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		d       DType
		n, want int
		wantErr bool
	}{
		{F32, 10, 40, false},
		{BF16, 3, 6, false},
		{Q8_0, 64, 68, false},
		{Q8_0, 33, 0, true},
		{Q4_K, 256, 144, false},
	}
	for _, tt := range tests {
		got, err := tt.d.Bytes(tt.n)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%v.Bytes(%d) = %d, %v; want %d, err=%v", tt.d, tt.n, got, err, tt.want, tt.wantErr)
		}
	}
}
