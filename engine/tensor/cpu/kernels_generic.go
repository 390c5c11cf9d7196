package cpu

import (
	"encoding/binary"
	"math"
)

// The portable kernels: the specification of the assembly ones, and the path
// on every other architecture.

// dotGo is the float32 inner product; four accumulators let the compiler
// pipeline the adds (float32 reassociation only).
func dotGo(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGo(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

func dotF16Go(h []uint16, x []float32) float32 {
	h = h[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += f16Table[h[i]] * x[i]
		s1 += f16Table[h[i+1]] * x[i+1]
		s2 += f16Table[h[i+2]] * x[i+2]
		s3 += f16Table[h[i+3]] * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += f16Table[h[i]] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// quantizeRowQ8Go quantizes x (a whole number of 32-blocks) as ggml's
// quantize_row_q8_0 does, but keeps the scale in float32: d = max|x|/127,
// q = round-half-even(x/d). q (len(x)), d (len(x)/32).
func quantizeRowQ8Go(q []int8, d []float32, x []float32) {
	nb := len(x) / 32
	q, d = q[:nb*32], d[:nb]
	for b := 0; b < nb; b++ {
		xs := x[b*32 : b*32+32]
		var amax float32
		for _, v := range xs {
			amax = max(amax, abs32(v))
		}
		s := amax / 127
		d[b] = s
		var id float32
		if s != 0 {
			id = 1 / s
		}
		qs := q[b*32 : b*32+32]
		for i, v := range xs {
			// Adding and subtracting 1.5*2^23 rounds |v*id| <= 127 to the
			// nearest integer, ties to even, as math.RoundToEven would.
			qs[i] = int8(int32(float32(v*id)+roundMagic) - int32(roundMagic))
		}
	}
}

const roundMagic = 12582912 // 1.5 * 2^23

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// dotQ8Q8Go is sum_b f16(w.d_b) * dx[b] * sum_i w.q_i * qx_i over the
// len(dx) blocks of the Q8_0 row w.
func dotQ8Q8Go(w []byte, qx []int8, dx []float32) float32 {
	var s float32
	for b := range dx {
		blk := w[b*34 : b*34+34]
		qs := qx[b*32 : b*32+32]
		var acc int32
		for i := 0; i < 32; i++ {
			acc += int32(int8(blk[2+i])) * int32(qs[i])
		}
		s += f16Table[binary.LittleEndian.Uint16(blk)] * dx[b] * float32(acc)
	}
	return s
}

func dotQ8Q8x4Go(out *[4]float32, w []byte, qx []int8, xstride int, dx []float32) {
	nb := len(dx) / 4
	for k := 0; k < 4; k++ {
		out[k] = dotQ8Q8Go(w, qx[k*xstride:k*xstride+nb*32], dx[k*nb:(k+1)*nb])
	}
}

func attnScoresGo(sc, q, K []float32, stride int, scale float32) {
	hd := len(q)
	for j := range sc {
		sc[j] = dotGo(q, K[j*stride:j*stride+hd]) * scale
	}
}

func attnMixGo(out, p, V []float32, stride int) {
	hd := len(out)
	clear(out)
	for j, pj := range p {
		axpyGo(out, pj, V[j*stride:j*stride+hd])
	}
}

func dotQ8Q8RowsGo(out []float32, w []byte, wstride int, qx []int8, dx []float32) {
	for r := range out {
		out[r] = dotQ8Q8Go(w[r*wstride:], qx, dx)
	}
}
