package cpu

import (
	"encoding/binary"

	"rigscope/engine/tensor"
)

// Native k-quant products (Q4_K, Q5_K, Q6_K weights read as stored), as
// llama.cpp computes them: the activation row is quantized once per product
// to Q8_K (int8 in blocks of 256 with one float32 scale, and the sum of each
// 16 and each 32 of its int8s), and each weight block is dotted with it in
// integers: for a Q4_K block
//
//	d·dx·Σ_j sc_j·(q_j·x_j) − dmin·dx·Σ_j m_j·Σx_j
//
// over its 8 sub-blocks j of 32 weights. The integer sums are exact, so the
// assembly kernels reproduce these Go kernels bit for bit as long as they
// combine each block's two integers in float32 in the same order.

// q8K is an activation row quantized to Q8_K: qs (cols) int8, d (cols/256)
// float32 scales, s16 (cols/16) and s32 (cols/32) the sums of each 16 and
// 32 consecutive qs.
type q8K struct {
	qs  []int8
	d   []float32
	s16 []int16
	s32 []int16
}

// size readies a for rows of cols (a multiple of 256) values.
func (a *q8K) size(cols int) {
	if cap(a.qs) < cols {
		a.qs = make([]int8, cols)
		a.d = make([]float32, cols/256)
		a.s16 = make([]int16, cols/16)
		a.s32 = make([]int16, cols/32)
	}
	a.qs, a.d, a.s16, a.s32 = a.qs[:cols], a.d[:cols/256], a.s16[:cols/16], a.s32[:cols/32]
}

// quantizeRowQ8KGo quantizes x (a whole number of 256-blocks) into a as
// quantizeRowQ8Go does per 32 but with one scale per 256: d = max|x|/127,
// q = round-half-even(x/d).
func quantizeRowQ8KGo(a *q8K, x []float32) {
	nb := len(x) / 256
	for b := 0; b < nb; b++ {
		xs := x[b*256 : b*256+256]
		var amax float32
		for _, v := range xs {
			amax = max(amax, abs32(v))
		}
		s := amax / 127
		a.d[b] = s
		var id float32
		if s != 0 {
			id = 1 / s
		}
		qs := a.qs[b*256 : b*256+256]
		for i, v := range xs {
			qs[i] = int8(int32(float32(v*id)+roundMagic) - int32(roundMagic))
		}
	}
	q8KSums(a, nb)
}

// q8KSums sets the sums of each 16 and 32 quants of a's first nb blocks.
func q8KSums(a *q8K, nb int) {
	for g := 0; g < nb*16; g++ {
		var sum int16
		for _, q := range a.qs[g*16 : g*16+16] {
			sum += int16(q)
		}
		a.s16[g] = sum
		if g%2 == 1 {
			a.s32[g/2] = a.s16[g-1] + sum
		}
	}
}

// kScales unpacks the 12 bytes of 6-bit sub-block scales and mins of a
// Q4_K or Q5_K block (ggml's get_scale_min_k4 for j = 0..7).
func kScales(q []byte) (sc, m [8]int32) {
	for j := 0; j < 8; j++ {
		s, mn := scaleMinK4(j, q)
		sc[j], m[j] = int32(s), int32(mn)
	}
	return sc, m
}

// dotQ4KGo is the product of the Q4_K row w with the Q8_K row a.
func dotQ4KGo(w []byte, a *q8K) float32 {
	var s float32
	for b := range a.d {
		blk := w[b*144 : b*144+144]
		sc, m := kScales(blk[4:16])
		qs, xq := blk[16:144], a.qs[b*256:b*256+256]
		var isum, msum int32
		for j := 0; j < 8; j++ {
			q := qs[j/2*32 : j/2*32+32]
			x := xq[j*32 : j*32+32]
			var dot int32
			for l := range q {
				dot += int32(q[l]>>(4*(j%2))&0xf) * int32(x[l])
			}
			isum += sc[j] * dot
			msum += m[j] * int32(a.s32[b*8+j])
		}
		d := f16Table[binary.LittleEndian.Uint16(blk)]
		dmin := f16Table[binary.LittleEndian.Uint16(blk[2:])]
		s += a.d[b] * float32(float32(d*float32(isum))-float32(dmin*float32(msum)))
	}
	return s
}

// dotQ5KGo is the product of the Q5_K row w with the Q8_K row a: Q4_K with a
// fifth bit per weight (qh: bit j of byte l is weight l of sub-block j).
func dotQ5KGo(w []byte, a *q8K) float32 {
	var s float32
	for b := range a.d {
		blk := w[b*176 : b*176+176]
		sc, m := kScales(blk[4:16])
		qh, qs, xq := blk[16:48], blk[48:176], a.qs[b*256:b*256+256]
		var isum, msum int32
		for j := 0; j < 8; j++ {
			q := qs[j/2*32 : j/2*32+32]
			x := xq[j*32 : j*32+32]
			var dot int32
			for l := range q {
				v := int32(q[l]>>(4*(j%2))&0xf) | int32(qh[l]>>j&1)<<4
				dot += v * int32(x[l])
			}
			isum += sc[j] * dot
			msum += m[j] * int32(a.s32[b*8+j])
		}
		d := f16Table[binary.LittleEndian.Uint16(blk)]
		dmin := f16Table[binary.LittleEndian.Uint16(blk[2:])]
		s += a.d[b] * float32(float32(d*float32(isum))-float32(dmin*float32(msum)))
	}
	return s
}

// dotQ6KGo is the product of the Q6_K row w with the Q8_K row a: weight =
// d·sc_g·(q−32) with q 6 bits and sc_g an int8 per 16 weights, so a block
// is d·dx·(Σ_g sc_g·(q_g·x_g) − 32·Σ_g sc_g·Σx_g).
func dotQ6KGo(w []byte, a *q8K) float32 {
	var s float32
	for b := range a.d {
		blk := w[b*210 : b*210+210]
		xq := a.qs[b*256 : b*256+256]
		var isum, csum int32
		for n := 0; n < 2; n++ {
			ql, qh := blk[n*64:n*64+64], blk[128+n*32:128+n*32+32]
			for k := 0; k < 4; k++ { // quarter k: 32 weights, two scales
				x := xq[n*128+k*32 : n*128+k*32+32]
				var dot [2]int32
				for l := 0; l < 32; l++ {
					lo := ql[l+(k%2)*32] >> (4 * (k / 2)) & 0xf
					hi := qh[l] >> (2 * k) & 3
					dot[l/16] += int32(lo|hi<<4) * int32(x[l])
				}
				for h := 0; h < 2; h++ {
					g := n*8 + k*2 + h
					sc := int32(int8(blk[192+g]))
					isum += sc * dot[h]
					csum += sc * int32(a.s16[b*16+g])
				}
			}
		}
		d := f16Table[binary.LittleEndian.Uint16(blk[208:])]
		s += a.d[b] * float32(d*float32(isum-32*csum))
	}
	return s
}

// dotKQuantGo is the portable product of the k-quant row w (of kind) with
// a.
func dotKQuantGo(w []byte, kind kquantKind, a *q8K) float32 {
	switch kind {
	case kindQ4K:
		return dotQ4KGo(w, a)
	case kindQ5K:
		return dotQ5KGo(w, a)
	}
	return dotQ6KGo(w, a)
}

// kquantKind names the k-quant dtypes the kernels here read natively.
type kquantKind uint8

const (
	kindQ4K kquantKind = iota
	kindQ5K
	kindQ6K
)

// kquantKindOf is the kernel family of dtype d, if it is a k-quant.
func kquantKindOf(d tensor.DType) (kquantKind, bool) {
	switch d {
	case tensor.Q4_K:
		return kindQ4K, true
	case tensor.Q5_K:
		return kindQ5K, true
	case tensor.Q6_K:
		return kindQ6K, true
	}
	return 0, false
}

// kquantBlockBytes is the bytes of one 256-weight block of kind.
var kquantBlockBytes = [...]int{kindQ4K: 144, kindQ5K: 176, kindQ6K: 210}

// dotKQuantRowsGo sets out[r] = dotKQuantGo(w[r*wstride:], kind, a).
func dotKQuantRowsGo(out []float32, w []byte, wstride int, kind kquantKind, a *q8K) {
	rb := len(a.d) * kquantBlockBytes[kind]
	for r := range out {
		out[r] = dotKQuantGo(w[r*wstride:r*wstride+rb], kind, a)
	}
}

// view is rows [t0, t1) of a, which holds rows of cols values one after
// another.
func (a *q8K) view(t0, t1, cols int) q8K {
	nb := cols / 256
	return q8K{qs: a.qs[t0*cols : t1*cols], d: a.d[t0*nb : t1*nb], s16: a.s16[t0*nb*16 : t1*nb*16], s32: a.s32[t0*nb*8 : t1*nb*8]}
}
