package cuda

import (
	"math"
	"strings"
	"testing"

	"rigscope/engine/tensor"
)

// fp8Matrix is an F8_E4M3 rows x cols tensor quantized with blocks br x bc.
func fp8Matrix(t *testing.T, name string, rows, cols, br, bc int, seed float64) *tensor.Tensor {
	t.Helper()
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(math.Sin(seed+float64(i)*0.37) * (1 + float64(i%977)))
	}
	w, err := tensor.QuantizeFP8(name, rows, cols, v, br, bc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The grid the kernels index gives every element of every stacked tensor
// (and of TP shards) its own scale.
func TestFP8ScaleGrid(t *testing.T) {
	const K = 512
	slice := func(w *tensor.Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
		v, err := w.SliceRows(r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		if v, err = v.SliceCols(c0, c1); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name string
		ts   []*tensor.Tensor
		want string // "" ok, else the error
	}{
		{"per-tensor stack", []*tensor.Tensor{fp8Matrix(t, "q", 256, K, 256, K, 1), fp8Matrix(t, "k", 64, K, 64, K, 2), fp8Matrix(t, "v", 64, K, 64, K, 3)}, ""},
		{"per-channel", []*tensor.Tensor{fp8Matrix(t, "w", 100, K, 1, K, 4)}, ""},
		{"blocks, partial last", []*tensor.Tensor{fp8Matrix(t, "q", 256, K+64, 128, 128, 5), fp8Matrix(t, "k", 200, K+64, 128, 128, 6)}, ""},
		{"block shard", []*tensor.Tensor{slice(fp8Matrix(t, "w", 512, 1024, 128, 128, 7), 128, 384, 256, 768)}, ""},
		{"per-channel column shard", []*tensor.Tensor{slice(fp8Matrix(t, "w", 64, 1024, 1, 1024, 8), 0, 64, 512, 1024)}, ""},
		{"blocks after a partial block", []*tensor.Tensor{fp8Matrix(t, "q", 200, K, 128, 128, 9), fp8Matrix(t, "k", 128, K, 128, 128, 10)}, "block 128x128 scales"},
		{"64 blocks", []*tensor.Tensor{fp8Matrix(t, "w", 128, K, 64, 64, 11)}, "block 64x64 scales (at row 0, column 0"},
		{"unaligned shard", []*tensor.Tensor{slice(fp8Matrix(t, "w", 256, 1024, 128, 128, 12), 0, 256, 64, 576)}, "at row 0, column 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			grid, err := fp8ScaleGrid(c.ts)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			row0 := 0
			for _, w := range c.ts {
				for r := range w.Rows() {
					for k := 0; k < w.Cols(); k += 16 { // the kernel reads one scale per 16-element chunk
						for i := k; i < k+16; i++ {
							if got, want := fp8ScaleAt(grid, row0+r, k), w.Scales.At(r, i); got != want {
								t.Fatalf("%s (%d, %d): grid scale %g, tensor's %g", w.Name, r, i, got, want)
							}
						}
					}
				}
				row0 += w.Rows()
			}
		})
	}
}

// tileFP8 must put each e4m3 element where tileBF16 puts the bf16 element
// of the same (row, k): the low bytes of the bf16 tiling of the widened
// matrix (TestTileBF16FragmentOrder checks that order against the PTX ISA).
func TestTileFP8Order(t *testing.T) {
	const rows, cols = 48, 64
	src, wide := make([]byte, rows*cols), make([]byte, 2*rows*cols)
	for i := range src {
		src[i] = byte(i*7 + i/256)
		wide[2*i] = src[i]
	}
	got, want := tileFP8(src, rows, cols), tileBF16(wide, rows, cols)
	for i := range got {
		if got[i] != want[2*i] {
			t.Fatalf("byte %d: %#x, want %#x", i, got[i], want[2*i])
		}
	}
}

// f16Bits is the IEEE half of f (exact, a normal or zero: every e4m3 value
// is one), as cvt.rn.f16x2.e4m3x2 gives it.
func f16Bits(t *testing.T, f float32) uint32 {
	var s uint32
	if math.Signbit(float64(f)) {
		s = 0x8000
	}
	if f == 0 {
		return s
	}
	fr, e := math.Frexp(math.Abs(float64(f))) // |f| = fr * 2^e, fr in [0.5, 1)
	m := (fr*2 - 1) * 1024
	if e-1+15 < 1 || m != math.Trunc(m) {
		t.Fatalf("%g is not an f16 normal", f)
	}
	return s | uint32(e-1+15)<<10 | uint32(m)
}

// TestFP8BF16Bits emulates fp8.cu's f8x2_bf16x2 on every pair of e4m3
// bytes (the NaN codes aside): the f16 halves' signs kept, the rest shifted
// right by 3, times 2^112 (exact in bf16 arithmetic as in float32: the
// product is a bf16 value), must be the e4m3 values exactly.
func TestFP8BF16Bits(t *testing.T) {
	for lo := range 256 {
		for hi := range 256 {
			if lo&0x7f == 0x7f || hi&0x7f == 0x7f {
				continue
			}
			u := f16Bits(t, tensor.E4M3ToF32(uint8(lo))) | f16Bits(t, tensor.E4M3ToF32(uint8(hi)))<<16
			b := u&0x80008000 | (u>>3)&0x0fff0fff
			for i, want := range []uint8{uint8(lo), uint8(hi)} {
				h := b >> (16 * i) & 0xffff
				if h&0x7f80 == 0 && h&0x7fff != 0 {
					t.Fatalf("bytes %#x %#x: half %d is a bf16 subnormal (%#x)", lo, hi, i, h)
				}
				bf := math.Float32frombits(h << 16)
				if got := bf * 0x1p112; got != tensor.E4M3ToF32(want) || math.Signbit(float64(got)) != math.Signbit(float64(tensor.E4M3ToF32(want))) {
					t.Fatalf("bytes %#x %#x: half %d is %g, want %g", lo, hi, i, got, tensor.E4M3ToF32(want))
				}
			}
		}
	}
}
