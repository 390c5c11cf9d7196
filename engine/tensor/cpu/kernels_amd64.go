package cpu

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Assembly kernels (kernels_amd64.s). hasAVX2 also implies F16C, which every
// AVX2 CPU has; hasVNNI selects VPDPBUSD for the int8 dot products.
var (
	hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasVNNI = hasAVX2 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL
	// hasAVX512 selects kernels that use AVX-512VL's 32 vector registers.
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
)

//go:noescape
func dotQ8Q8AVX2(w *byte, qx *int8, dx *float32, nb int, tbl *float32) float32

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

// axpy: y += a*x[:len(y)], each element rounded as AttnMix rounds it (fused
// multiply-add in the assembly, which needs len(y) a multiple of 8), so a
// tree batch's mix continued with axpy equals a chain's AttnMix.
func axpy(y []float32, a float32, x []float32) {
	n := len(y)
	x = x[:n]
	if !hasAVX2 || n%8 != 0 || n == 0 {
		axpyGo(y, a, x)
		return
	}
	axpyAVX2(&y[0], a, &x[0], n)
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

func f16s(w []byte, n int) []uint16 {
	if n == 0 {
		return nil
	}
	_ = w[2*n-1]
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

//go:noescape
func attnScoresAVX2(sc *float32, q *float32, k *float32, n int, stride int, hd int, scale float32)

//go:noescape
func attnMixAVX2(out *float32, p *float32, v *float32, n int, stride int, hd int)

// AttnScores sets sc[j] = scale * q·K[j*stride : j*stride+len(q)] for
// j < len(sc): one head's scores against len(sc) cached keys stride floats
// apart.
func AttnScores(sc, q, K []float32, stride int, scale float32) {
	n, hd := len(sc), len(q)
	if n == 0 {
		return
	}
	_ = K[(n-1)*stride+hd-1]
	if !hasAVX2 || hd%8 != 0 {
		attnScoresGo(sc, q, K, stride, scale)
		return
	}
	attnScoresAVX2(&sc[0], &q[0], &K[0], n, stride*4, hd, scale)
}

// AttnMix sets out = sum_j p[j] * V[j*stride : j*stride+len(out)] over
// j < len(p).
func AttnMix(out, p, V []float32, stride int) {
	n, hd := len(p), len(out)
	if n == 0 {
		clear(out)
		return
	}
	_ = V[(n-1)*stride+hd-1]
	if !hasAVX2 || hd%8 != 0 {
		attnMixGo(out, p, V, stride)
		return
	}
	attnMixAVX2(&out[0], &p[0], &V[0], n, stride*4, hd)
}

//go:noescape
func dotQ8Q8RowsAVX2(w *byte, wstride int, nrows int, qx *int8, dx *float32, nb int, tbl *float32, out *float32, vnni bool)

// dotQ8Q8Rows sets out[r] = dotQ8Q8(w[r*wstride:], qx, dx) for r < len(out).
func dotQ8Q8Rows(out []float32, w []byte, wstride int, qx []int8, dx []float32) {
	nb, n := len(dx), len(out)
	if n == 0 {
		return
	}
	_ = w[(n-1)*wstride+nb*34-1]
	_ = qx[nb*32-1]
	if !hasAVX2 || nb == 0 {
		dotQ8Q8RowsGo(out, w, wstride, qx, dx)
		return
	}
	dotQ8Q8RowsAVX2(&w[0], wstride, n, &qx[0], &dx[0], nb, &f16Table[0], &out[0], hasVNNI)
}

// usePortable switches the assembly kernels off (on) for tests; it returns
// a function that restores the detected setting.
func usePortable(on bool) (restore func()) {
	a, v, z := hasAVX2, hasVNNI, hasAVX512
	if on {
		hasAVX2, hasVNNI, hasAVX512 = false, false, false
	}
	return func() { hasAVX2, hasVNNI, hasAVX512 = a, v, z }
}

//go:noescape
func dotF32x2AVX2(w *float32, x *float32, n int, xstride int, out *float32)

// dotF32x2 sets out[k] = dot(x[k*xstride:k*xstride+len(w)], w) for k < 2,
// bit for bit: one weight row read once for two tokens.
func dotF32x2(out *[2]float32, w, x []float32, xstride int) {
	n := len(w)
	x0, x1 := x[:n], x[xstride:xstride+n]
	if !hasAVX2 || n < 16 {
		out[0], out[1] = dotGo(x0, w), dotGo(x1, w)
		return
	}
	m := n &^ 15
	dotF32x2AVX2(&w[0], &x0[0], m, xstride*4, &out[0])
	if m < n {
		out[0] += dotGo(x0[m:], w[m:])
		out[1] += dotGo(x1[m:], w[m:])
	}
}

//go:noescape
func dotF32x2x2RowsAVX512(w *float32, wstride int, npairs int, x *float32, xstride int, n int, out *float32, ostride int)

//go:noescape
func dotF32x2RowsAVX2(w *float32, wstride int, nrows int, x *float32, xstride int, n int, out *float32, ostride int)

// dotF32x2Rows sets out[k*ostride+r] = dot(x[k*xstride:k*xstride+n],
// w[r*n:(r+1)*n]) for r < nrows and k < 2, n = len(w)/nrows: a block of
// dequantized rows against two tokens in one call, bit for bit.
func dotF32x2Rows(out []float32, ostride, nrows int, w, x []float32, xstride int) {
	if nrows == 0 {
		return
	}
	n := len(w) / nrows
	if !hasAVX2 || n < 16 || n%16 != 0 {
		var o [2]float32
		for r := range nrows {
			dotF32x2(&o, w[r*n:(r+1)*n], x, xstride)
			out[r], out[ostride+r] = o[0], o[1]
		}
		return
	}
	_ = out[ostride+nrows-1]
	_ = w[nrows*n-1]
	_ = x[xstride+n-1]
	if hasAVX512 && nrows >= 2 {
		p := nrows / 2
		dotF32x2x2RowsAVX512(&w[0], n*4, p, &x[0], xstride*4, n, &out[0], ostride*4)
		if 2*p == nrows {
			return
		}
		out, w, nrows = out[2*p:], w[2*p*n:], 1
	}
	dotF32x2RowsAVX2(&w[0], n*4, nrows, &x[0], xstride*4, n, &out[0], ostride*4)
}

//go:noescape
func dotQ8Q8x4RowsAVX2(w *byte, wstride int, nrows int, qx *int8, xstride int, dx *float32, nb int, tbl *float32, out *float32, ostride int, vnni bool)

// dotQ8Q8x4Rows sets out[k*ostride+r] = dotQ8Q8(w[r*wstride:], qx[k*xstride:],
// dx[k*nb:]) for r < nrows and k < 4 (nb = len(dx)/4): a prefill tile of
// rows against four tokens in one call, bit-identical to dotQ8Q8 per element.
func dotQ8Q8x4Rows(out []float32, ostride, nrows int, w []byte, wstride int, qx []int8, xstride int, dx []float32) {
	nb := len(dx) / 4
	if nrows == 0 {
		return
	}
	_ = out[3*ostride+nrows-1]
	_ = w[(nrows-1)*wstride+nb*34-1]
	_ = qx[3*xstride+nb*32-1]
	if !hasAVX2 || nb == 0 {
		var o [4]float32
		for r := range nrows {
			dotQ8Q8x4Go(&o, w[r*wstride:], qx, xstride, dx)
			out[r], out[ostride+r], out[2*ostride+r], out[3*ostride+r] = o[0], o[1], o[2], o[3]
		}
		return
	}
	dotQ8Q8x4RowsAVX2(&w[0], wstride, nrows, &qx[0], xstride, &dx[0], nb, &f16Table[0], &out[0], ostride*4, hasVNNI)
}

// useNoAVX512 switches the AVX-512 kernels off for tests (the AVX2 ones
// run); it returns a function that restores the detected setting.
func useNoAVX512() (restore func()) {
	z := hasAVX512
	hasAVX512 = false
	return func() { hasAVX512 = z }
}

// useNoVNNI switches the VNNI kernels off for tests (the AVX2 ones run); it
// returns a function that restores the detected setting.
func useNoVNNI() (restore func()) {
	v := hasVNNI
	hasVNNI = false
	return func() { hasVNNI = v }
}

//go:noescape
func softmaxExpAVX2(x *float32, n int, m float32, lanes *float32)

//go:noescape
func swigluAVX2(out, gate, up *float32, n int)

// softmaxExp sets x[i] = exp32(x[i]-m) for i < len(x) (a multiple of 8) and
// adds each into lanes[i%8], in order.
func softmaxExp(x []float32, m float32, lanes *[8]float32) {
	if !hasAVX2 || len(x) == 0 {
		softmaxExpGo(x, m, lanes)
		return
	}
	softmaxExpAVX2(&x[0], len(x)&^7, m, &lanes[0])
}

// swiglu sets out = g / (1 + exp32(-g)) * up for g in gate.
func swiglu(out, gate, up []float32) {
	n := len(gate)
	out, up = out[:n], up[:n]
	m := 0
	if hasAVX2 && n >= 8 {
		m = n &^ 7
		swigluAVX2(&out[0], &gate[0], &up[0], m)
	}
	if m < n {
		swigluGo(out[m:], gate[m:], up[m:])
	}
}

//go:noescape
func dotQ8Q8x4RowsVNNIG(w *byte, wstride int, nrows int, xq *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, ostride int)

//go:noescape
func dotQ8Q8x4RowsVNNIZ(w *byte, wstride int, npairs int, xq *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, ostride int)

//go:noescape
func dotQ8Q8x4RowsAVX2G(w *byte, wstride int, nrows int, xq *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, ostride int)

// dotQ8Q8x4RowsG is dotQ8Q8x4Rows on one four-token group laid out by
// q8Groups (xq (nb, 4, 32), xc (nb, 4, 8), dx (nb, 4)): out[k*ostride+r]
// for r < nrows and k < 4, bit-identical. Only with hasAVX2.
func dotQ8Q8x4RowsG(out []float32, ostride, nrows int, w []byte, wstride int, xq []int8, xc []int32, dx []float32) {
	nb := len(dx) / 4
	if nrows == 0 || nb == 0 {
		return
	}
	_ = out[3*ostride+nrows-1]
	_ = w[(nrows-1)*wstride+nb*34-1]
	_ = xq[nb*128-1]
	if !hasVNNI {
		dotQ8Q8x4RowsAVX2G(&w[0], wstride, nrows, &xq[0], nil, &dx[0], nb, &f16Table[0], &out[0], ostride*4)
		return
	}
	_ = xc[nb*32-1]
	if hasAVX512 && nrows >= 2 {
		p := nrows / 2
		dotQ8Q8x4RowsVNNIZ(&w[0], wstride, p, &xq[0], &xc[0], &dx[0], nb, &f16Table[0], &out[0], ostride*4)
		if 2*p == nrows {
			return
		}
		out, w, nrows = out[2*p:], w[2*p*wstride:], 1
	}
	dotQ8Q8x4RowsVNNIG(&w[0], wstride, nrows, &xq[0], &xc[0], &dx[0], nb, &f16Table[0], &out[0], ostride*4)
}

//go:noescape
func dotQ8Q8Rows4AVX2(w *byte, wstride int, nrows int, qx *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, spacing int)

//go:noescape
func dotQ8Q8Rows4VNNI(w *byte, wstride int, nrows int, qx *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, spacing int)

// dotQ8Q8RowsC is dotQ8Q8Rows given also qx's lane corrections xc (nb, 8)
// (laneCorrections; used with VNNI only): the rows split in four streams
// that run side by side; bit-identical.
func dotQ8Q8RowsC(out []float32, w []byte, wstride int, qx []int8, xc []int32, dx []float32) {
	nb, n := len(dx), len(out)
	q := n / 4
	if !hasAVX2 || nb == 0 || q == 0 {
		dotQ8Q8Rows(out, w, wstride, qx, dx)
		return
	}
	_ = w[(4*q-1)*wstride+nb*34-1]
	_ = qx[nb*32-1]
	if hasVNNI {
		_ = xc[nb*8-1]
		dotQ8Q8Rows4VNNI(&w[0], wstride, q, &qx[0], &xc[0], &dx[0], nb, &f16Table[0], &out[0], q*wstride)
	} else {
		dotQ8Q8Rows4AVX2(&w[0], wstride, q, &qx[0], nil, &dx[0], nb, &f16Table[0], &out[0], q*wstride)
	}
	if 4*q < n {
		dotQ8Q8Rows(out[4*q:], w[4*q*wstride:], wstride, qx, dx)
	}
}

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func scaleAVX2(x *float32, n int, a float32)

// maxOf is the largest element of x (-Inf when empty; no NaNs).
func maxOf(x []float32) float32 {
	m := float32(math.Inf(-1))
	n8 := 0
	if hasAVX2 && len(x) >= 8 {
		n8 = len(x) &^ 7
		m = maxAVX2(&x[0], n8)
	}
	for _, v := range x[n8:] {
		m = max(m, v)
	}
	return m
}

// scale sets x[i] *= a.
func scale(x []float32, a float32) {
	n8 := 0
	if hasAVX2 && len(x) >= 8 {
		n8 = len(x) &^ 7
		scaleAVX2(&x[0], n8, a)
	}
	for i := n8; i < len(x); i++ {
		x[i] *= a
	}
}

//go:noescape
func quantizeRowQ8AVX2(q *int8, d *float32, x *float32, nb int)

// quantizeRowQ8 is quantizeRowQ8Go (the specification), bit for bit.
func quantizeRowQ8(q []int8, d []float32, x []float32) {
	nb := len(x) / 32
	if !hasAVX2 || nb == 0 {
		quantizeRowQ8Go(q, d, x)
		return
	}
	_, _ = q[nb*32-1], d[nb-1]
	quantizeRowQ8AVX2(&q[0], &d[0], &x[0], nb)
}

// spinPause executes one PAUSE (pause_amd64.s).
func spinPause()
