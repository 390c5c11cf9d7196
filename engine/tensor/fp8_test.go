package tensor

import (
	"math"
	"strings"
	"testing"
)

// e4m3Reference is the value of an e4m3fn byte by the format's definition,
// in float64: (-1)^s * 2^(e-7) * (1 + m/8), subnormals 2^-6 * m/8, and
// S.1111.111 NaN (no infinities).
func e4m3Reference(b uint8) float64 {
	s, e, m := float64(1), int(b>>3&15), float64(b&7)
	if b&0x80 != 0 {
		s = -1
	}
	if e == 15 && m == 7 {
		return math.NaN()
	}
	if e == 0 {
		return s * math.Pow(2, -6) * m / 8
	}
	return s * math.Pow(2, float64(e-7)) * (1 + m/8)
}

func TestE4M3TableMatchesDefinition(t *testing.T) {
	for i := range 256 {
		b := uint8(i)
		want, got := e4m3Reference(b), float64(E4M3ToF32(b))
		switch {
		case math.IsNaN(want) != math.IsNaN(got):
			t.Fatalf("0x%02x: got %g, want %g", b, got, want)
		case !math.IsNaN(want) && (want != got || math.Signbit(want) != math.Signbit(got)):
			t.Fatalf("0x%02x: got %g, want %g", b, got, want)
		}
	}
	for _, c := range []struct {
		b    uint8
		want float64
	}{{0x7e, 448}, {0xfe, -448}, {0x01, math.Ldexp(1, -9)}, {0x08, math.Ldexp(1, -6)}, {0x38, 1}, {0x00, 0}} {
		if got := float64(E4M3ToF32(c.b)); got != c.want {
			t.Errorf("0x%02x = %g, want %g", c.b, got, c.want)
		}
	}
	for _, nan := range []uint8{0x7f, 0xff} {
		if !math.IsNaN(float64(E4M3ToF32(nan))) {
			t.Errorf("0x%02x is not NaN", nan)
		}
	}
}

func TestF32ToE4M3(t *testing.T) {
	// Every finite code encodes back to itself.
	for i := range 256 {
		b := uint8(i)
		if b&0x7f == 0x7f {
			continue
		}
		if got := F32ToE4M3(E4M3ToF32(b)); got != b {
			t.Fatalf("encode(decode(0x%02x)) = 0x%02x", b, got)
		}
	}
	// Nearest value, ties to even, by brute force over the table.
	nearest := func(v float64) float64 {
		best, bestD := 0.0, math.Inf(1)
		for i := range 128 {
			r := e4m3Reference(uint8(i))
			if math.IsNaN(r) {
				continue
			}
			d := math.Abs(math.Abs(v) - r)
			if d < bestD || (d == bestD && i%2 == 0) {
				best, bestD = r, d
			}
		}
		return math.Copysign(best, v)
	}
	for i := range 20000 {
		v := float32(math.Ldexp(float64(i%997)/997+1, i%24-12)) * float32(1-2*(i%2))
		if i%5 == 0 { // exact midpoints between neighbours
			a, b := e4m3Reference(uint8(i%120)), e4m3Reference(uint8(i%120+1))
			v = float32((a + b) / 2)
		}
		want := nearest(float64(v))
		if math.Abs(float64(v)) > E4M3Max {
			want = math.Copysign(E4M3Max, float64(v))
		}
		if got := float64(E4M3ToF32(F32ToE4M3(v))); got != want {
			t.Fatalf("F32ToE4M3(%g) decodes to %g, want %g", v, got, want)
		}
	}
	if !math.IsNaN(float64(E4M3ToF32(F32ToE4M3(float32(math.NaN()))))) {
		t.Error("NaN does not stay NaN")
	}
	if got := E4M3ToF32(F32ToE4M3(float32(math.Inf(-1)))); got != -E4M3Max {
		t.Errorf("-Inf saturates to %g, want -448", got)
	}
}

func TestNewScalesRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []float32
		want   string
	}{
		{"nan", []float32{1, float32(math.NaN())}, "scale 1 (block row 0, block column 1) is NaN"},
		{"inf", []float32{float32(math.Inf(1)), 1}, "is +Inf"},
		{"zero", []float32{0, 1}, "is 0"},
		{"negative", []float32{1, -2}, "is -2"},
		{"count", []float32{1}, "1 values for 128x128 blocks of 100x200 (want 1x2 = 2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewScales(100, 200, 128, 128, c.values)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// A shard of a block-scaled matrix keeps each element's scale.
func TestScalesViews(t *testing.T) {
	rows, cols := 300, 260
	src := make([]float32, rows*cols)
	for i := range src {
		src[i] = float32(math.Sin(float64(i))) * float32(1+i%300)
	}
	for _, blk := range [][2]int{{rows, cols}, {1, cols}, {128, 128}} {
		w, err := QuantizeFP8("w", rows, cols, src, blk[0], blk[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Check(); err != nil {
			t.Fatal(err)
		}
		rs, err := w.SliceRows(130, 290)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := rs.SliceCols(128, 256)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Check(); err != nil {
			t.Fatal(err)
		}
		for r := range cs.Rows() {
			for c := range cs.Cols() {
				if got, want := cs.Scales.At(r, c), w.Scales.At(r+130, c+128); got != want {
					t.Fatalf("%v: view scale (%d,%d) = %g, parent's %g", blk, r, c, got, want)
				}
				if cs.Row(r)[c] != w.Row(r + 130)[c+128] {
					t.Fatalf("%v: view byte (%d,%d) differs", blk, r, c)
				}
			}
		}
		// Quantization error is at most half a step of the block's grid.
		for i, v := range src {
			r, c := i/cols, i%cols
			got := float64(E4M3ToF32(w.Data[i])) * float64(w.Scales.At(r, c))
			if tol := math.Max(math.Abs(float64(v))/16, float64(w.Scales.At(r, c))*math.Ldexp(1, -10)); math.Abs(got-float64(v)) > tol*1.0001 {
				t.Fatalf("%v: element (%d,%d) %g dequantizes to %g", blk, r, c, v, got)
			}
		}
	}
	bad := &Tensor{Name: "w", DType: F8_E4M3, Shape: []int{2, 4}, Data: make([]byte, 8)}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "without scales") {
		t.Errorf("F8 without scales: %v", err)
	}
	bad.Scales = &Scales{BlockRows: 1, BlockCols: 4, GridCols: 1, Values: []float32{1}}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "do not cover") {
		t.Errorf("short scales: %v", err)
	}
}

// FuzzFP8Scales: any grid NewScales accepts, and any view of it Check
// accepts, gives a scale for every element without reading outside Values.
func FuzzFP8Scales(f *testing.F) {
	f.Add(uint16(300), uint16(260), uint8(128), uint8(128), uint16(130), uint16(128), float32(0.5))
	f.Add(uint16(4), uint16(8), uint8(1), uint8(8), uint16(1), uint16(0), float32(-1))
	f.Fuzz(func(t *testing.T, rows, cols uint16, br, bc uint8, r0, c0 uint16, v float32) {
		R, C := int(rows%512)+1, int(cols%512)+1
		BR, BC := int(br)+1, int(bc)+1
		n := ((R + BR - 1) / BR) * ((C + BC - 1) / BC)
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = v + float32(i)
		}
		s, err := NewScales(R, C, BR, BC, vals)
		if err != nil {
			if v > 0 && !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v)) {
				t.Fatalf("refused positive scales: %v", err)
			}
			return
		}
		w := &Tensor{Name: "w", DType: F8_E4M3, Shape: []int{R, C}, Data: make([]byte, R*C), Scales: s}
		if err := w.Check(); err != nil {
			t.Fatal(err)
		}
		a, b := int(r0)%R, int(c0)%C
		v1, err := w.SliceRows(a, R)
		if err != nil {
			return
		}
		v2, err := v1.SliceCols(b, C)
		if err != nil {
			return
		}
		if err := v2.Check(); err != nil {
			t.Fatal(err)
		}
		for r := range v2.Rows() {
			for c := range v2.Cols() {
				if v2.Scales.At(r, c) != s.At(r+a, c+b) {
					t.Fatalf("view (%d,%d)", r, c)
				}
			}
		}
	})
}
