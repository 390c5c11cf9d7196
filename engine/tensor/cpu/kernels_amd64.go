package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Assembly kernels (kernels_amd64.s). hasAVX2 also implies F16C, which every
// AVX2 CPU has; hasVNNI selects VPDPBUSD for the int8 dot products.
var (
	hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasVNNI = hasAVX2 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL
)

//go:noescape
func dotQ8Q8AVX2(w *byte, qx *int8, dx *float32, nb int, tbl *float32) float32

//go:noescape
func dotQ8Q8x4AVX2(w *byte, qx *int8, dx *float32, nb int, tbl *float32, xstride int, out *float32)

//go:noescape
func dotQ8Q8x4VNNI(w *byte, qx *int8, dx *float32, nb int, tbl *float32, xstride int, out *float32)

//go:noescape
func dotF16AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

//go:noescape
func axpyAVX2(y *float32, a float32, x *float32, n int)

//go:noescape
func f16ToF32AVX2(dst *float32, src *uint16, n int)

// dot is the float32 inner product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	if !hasAVX2 || n < 16 {
		return dotGo(a, b)
	}
	m := n &^ 15
	s := dotF32AVX2(&a[0], &b[0], m)
	if m < n {
		s += dotGo(a[m:], b[m:])
	}
	return s
}

// axpy: y += a*x[:len(y)].
func axpy(y []float32, a float32, x []float32) {
	n := len(y)
	x = x[:n]
	if !hasAVX2 || n < 8 {
		axpyGo(y, a, x)
		return
	}
	m := n &^ 7
	axpyAVX2(&y[0], a, &x[0], m)
	if m < n {
		axpyGo(y[m:], a, x[m:])
	}
}

// dotF16 is the inner product of the F16 row w (2*len(x) bytes) with x.
func dotF16(w []byte, x []float32) float32 {
	n := len(x)
	h := f16s(w, n)
	if !hasAVX2 || n < 16 {
		return dotF16Go(h, x)
	}
	m := n &^ 15
	s := dotF16AVX2(&h[0], &x[0], m)
	if m < n {
		s += dotF16Go(h[m:], x[m:])
	}
	return s
}

// f16Row converts the F16 row w to float32 in dst.
func f16Row(dst []float32, w []byte) {
	n := len(dst)
	h := f16s(w, n)
	m := 0
	if hasAVX2 && n >= 8 {
		m = n &^ 7
		f16ToF32AVX2(&dst[0], &h[0], m)
	}
	for i := m; i < n; i++ {
		dst[i] = f16Table[h[i]]
	}
}

// dotQ8Q8 is the inner product of the Q8_0 row w with the quantized
// activation row (qx, dx).
func dotQ8Q8(w []byte, qx []int8, dx []float32) float32 {
	nb := len(dx)
	if !hasAVX2 || nb == 0 {
		return dotQ8Q8Go(w, qx, dx)
	}
	_ = w[nb*34-1]
	_ = qx[nb*32-1]
	return dotQ8Q8AVX2(&w[0], &qx[0], &dx[0], nb, &f16Table[0])
}

// dotQ8Q8x4 computes out[k] = dotQ8Q8(w, qx[k*xstride:], dx[k*nb:]) for
// k < 4: four activation rows against one weight row, read once.
func dotQ8Q8x4(out *[4]float32, w []byte, qx []int8, xstride int, dx []float32) {
	nb := len(dx) / 4
	if !hasAVX2 || nb == 0 {
		dotQ8Q8x4Go(out, w, qx, xstride, dx)
		return
	}
	_ = w[nb*34-1]
	_ = qx[3*xstride+nb*32-1]
	if hasVNNI {
		dotQ8Q8x4VNNI(&w[0], &qx[0], &dx[0], nb, &f16Table[0], xstride, &out[0])
		return
	}
	dotQ8Q8x4AVX2(&w[0], &qx[0], &dx[0], nb, &f16Table[0], xstride, &out[0])
}

func f16s(w []byte, n int) []uint16 {
	if n == 0 {
		return nil
	}
	_ = w[2*n-1]
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(w))), n)
}
