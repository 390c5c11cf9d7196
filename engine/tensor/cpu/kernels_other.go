//go:build !amd64

package cpu

import (
	"math"
	"unsafe"
)

const hasAVX2, hasVNNI = false, false

func dot(a, b []float32) float32                        { return dotGo(a, b) }
func axpy(y []float32, a float32, x []float32)          { axpyGo(y, a, x) }
func dotF16(w []byte, x []float32) float32              { return dotF16Go(f16s(w, len(x)), x) }
func dotQ8Q8(w []byte, qx []int8, dx []float32) float32 { return dotQ8Q8Go(w, qx, dx) }

func f16Row(dst []float32, w []byte) {
	for i, h := range f16s(w, len(dst)) {
		dst[i] = f16Table[h]
	}
}

func f16s(w []byte, n int) []uint16 {
	if n == 0 {
		return nil
	}
	_ = w[2*n-1]
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// AttnScores sets sc[j] = scale * q·K[j*stride : j*stride+len(q)] for
// j < len(sc).
func AttnScores(sc, q, K []float32, stride int, scale float32) { attnScoresGo(sc, q, K, stride, scale) }

// AttnMix sets out = sum_j p[j] * V[j*stride : j*stride+len(out)].
func AttnMix(out, p, V []float32, stride int) { attnMixGo(out, p, V, stride) }

func dotQ8Q8Rows(out []float32, w []byte, wstride int, qx []int8, dx []float32) {
	dotQ8Q8RowsGo(out, w, wstride, qx, dx)
}

func usePortable(bool) (restore func()) { return func() {} }

// dotF32x2 sets out[k] = dot(x[k*xstride:k*xstride+len(w)], w) for k < 2.
func dotF32x2(out *[2]float32, w, x []float32, xstride int) {
	n := len(w)
	out[0], out[1] = dot(x[:n], w), dot(x[xstride:xstride+n], w)
}

// dotQ8Q8x4Rows sets out[k*ostride+r] = dotQ8Q8(w[r*wstride:], qx[k*xstride:],
// dx[k*nb:]) for r < nrows and k < 4 (nb = len(dx)/4).
func dotQ8Q8x4Rows(out []float32, ostride, nrows int, w []byte, wstride int, qx []int8, xstride int, dx []float32) {
	var o [4]float32
	for r := range nrows {
		dotQ8Q8x4Go(&o, w[r*wstride:], qx, xstride, dx)
		out[r], out[ostride+r], out[2*ostride+r], out[3*ostride+r] = o[0], o[1], o[2], o[3]
	}
}

func useNoVNNI() (restore func()) { return func() {} }

func softmaxExp(x []float32, m float32, lanes *[8]float32) { softmaxExpGo(x, m, lanes) }
func swiglu(out, gate, up []float32)                       { swigluGo(out, gate, up) }

func dotQ8Q8x4RowsG(out []float32, ostride, nrows int, w []byte, wstride int, xq []int8, xc []int32, dx []float32) {
	panic("cpu: dotQ8Q8x4RowsG needs AVX2")
}

func dotQ8Q8RowsC(out []float32, w []byte, wstride int, qx []int8, xc []int32, dx []float32) {
	dotQ8Q8RowsGo(out, w, wstride, qx, dx)
}

func quantizeRowQ8(q []int8, d []float32, x []float32) { quantizeRowQ8Go(q, d, x) }

func maxOf(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

func scale(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}

// dotF32x2Rows sets out[k*ostride+r] = dot(x[k*xstride:k*xstride+n],
// w[r*n:(r+1)*n]) for r < nrows and k < 2, n = len(w)/nrows.
func dotF32x2Rows(out []float32, ostride, nrows int, w, x []float32, xstride int) {
	if nrows == 0 {
		return
	}
	n := len(w) / nrows
	var o [2]float32
	for r := range nrows {
		dotF32x2(&o, w[r*n:(r+1)*n], x, xstride)
		out[r], out[ostride+r] = o[0], o[1]
	}
}

// useNoAVX512 is a no-op without amd64 kernels.
func useNoAVX512() (restore func()) { return func() {} }

// spinPause is a no-op where there is no PAUSE instruction.
func spinPause() {}
