package tensor

import (
	"encoding/binary"
	"math"
)

// The k-quant encoders: ggml's reference quantizers (quantize_row_q4_K_ref,
// quantize_row_q6_K_ref in ggml-quants.c) in Go, so a file written here holds
// the blocks llama-quantize would choose for the same values (up to float32
// rounding where a C compiler fuses multiply-adds).

// nearestInt rounds to the nearest integer, ties to even, as ggml's
// nearest_int does: adding 1.5*2^23 in float32 leaves the rounded value in
// the low mantissa bits (|f| <= 2^22; beyond, math.RoundToEven).
func nearestInt(f float32) int {
	if !(abs32f(f) <= 4194303) {
		return int(math.RoundToEven(float64(f)))
	}
	v := f + 12582912
	return int(math.Float32bits(v)&0x7fffff) - 0x400000
}

// encodeQ4K writes src (a whole number of 256-blocks) as block_q4_K: per
// sub-block of 32 a scale and a min fitted by weighted least squares over
// a small grid of steps (make_qkx2_quants), both then quantized to 6 bits
// against the block's largest (f16 d and dmin).
func encodeQ4K(dst []byte, src []float32) {
	var (
		L       [256]uint8
		laux    [32]uint8
		weights [32]float32
		scales  [8]float32
		mins    [8]float32
	)
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*144 : b*144+144]
		clear(blk)
		var maxScale, maxMin float32
		for j := 0; j < 8; j++ {
			xs := x[32*j : 32*j+32]
			var sumX2 float32
			for _, v := range xs {
				sumX2 += v * v
			}
			avX := float32(math.Sqrt(float64(sumX2 / 32)))
			for l, v := range xs {
				weights[l] = avX + abs32f(v)
			}
			scales[j], mins[j] = makeQKX2(15, xs, weights[:], L[32*j:32*j+32], laux[:], -1, 0.1, 20)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		var invScale, invMin float32
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		sc := blk[4:16]
		for j := 0; j < 8; j++ {
			ls := uint8(min(63, nearestInt(invScale*scales[j])))
			lm := uint8(min(63, nearestInt(invMin*mins[j])))
			if j < 4 {
				sc[j], sc[j+4] = ls, lm
			} else {
				sc[j+4] = ls&0xf | (lm&0xf)<<4
				sc[j-4] |= ls >> 4 << 6
				sc[j] |= lm >> 4 << 6
			}
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(maxScale/63))
		binary.LittleEndian.PutUint16(blk[2:], F32ToF16(maxMin/63))
		d := F16ToF32(binary.LittleEndian.Uint16(blk))
		dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		for j := 0; j < 8; j++ {
			s, m := scaleMin6(j, sc)
			dj := d * float32(s)
			if dj == 0 {
				continue
			}
			dm := dmin * float32(m)
			for i, v := range x[32*j : 32*j+32] {
				L[32*j+i] = uint8(max(0, min(15, nearestInt((v+dm)/dj))))
			}
		}
		q := blk[16:]
		for j := 0; j < 256; j += 64 {
			for l := 0; l < 32; l++ {
				q[l] = L[j+l] | L[j+l+32]<<4
			}
			q = q[32:]
		}
	}
}

// scaleMin6 is ggml's get_scale_min_k4: the 6-bit scale and min of
// sub-block j of the 12 packed bytes q.
func scaleMin6(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | q[j-4]>>6<<4, q[j+4]>>4 | q[j]>>6<<4
}

// makeQKX2 fits x ≈ scale*L - min with L in [0, nmax] (ggml's
// make_qkx2_quants with use_mad false): the start is the min-max fit, then
// nstep+1 other scales rmin+rdelta*is steps around it, each refitted by
// weighted least squares, keeping the lowest weighted squared error. It
// returns the scale and the min (positive: the offset subtracted).
func makeQKX2(nmax int, x, w []float32, L, laux []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	n := len(x)
	mn, mx := x[0], x[0]
	sumW := w[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		mn = min(mn, x[i])
		mx = max(mx, x[i])
		sumW += w[i]
		sumX += w[i] * x[i]
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		clear(L[:n])
		return 0, -mn
	}
	iscale := float32(nmax) / (mx - mn)
	scale = 1 / iscale
	var bestErr float32
	for i := range n {
		l := max(0, min(nmax, nearestInt(iscale*(x[i]-mn))))
		L[i] = uint8(l)
		diff := scale*float32(l) + mn - x[i]
		bestErr += w[i] * (diff * diff)
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + rdelta*float32(is) + float32(nmax)) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := max(0, min(nmax, nearestInt(iscale*(x[i]-mn))))
			laux[i] = uint8(l)
			fl := float32(l)
			sumL += w[i] * fl
			sumL2 += w[i] * fl * fl
			sumXL += w[i] * fl * x[i]
		}
		D := sumW*sumL2 - sumL*sumL
		if !(D > 0) {
			continue
		}
		thisScale := (sumW*sumXL - sumX*sumL) / D
		thisMin := (sumL2*sumX - sumL*sumXL) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curErr float32
		for i := range n {
			diff := thisScale*float32(laux[i]) + thisMin - x[i]
			curErr += w[i] * (diff * diff)
		}
		if curErr < bestErr {
			copy(L[:n], laux[:n])
			bestErr, scale, mn = curErr, thisScale, thisMin
		}
	}
	return scale, -mn
}

// encodeQ6K writes src as block_q6_K: per 16 weights a signed scale fitted
// by make_qx_quants (rmse_type 1: weights x², a grid of 19 scales), the
// scales quantized to int8 against the largest (f16 d), then 6-bit quants
// q+32 split into 4 low bits (ql) and 2 high bits (qh).
func encodeQ6K(dst []byte, src []float32) {
	var (
		L      [256]int8
		scales [16]float32
	)
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*210 : b*210+210]
		clear(blk)
		var maxScale, maxAbs float32
		for ib := 0; ib < 16; ib++ {
			s := makeQX(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			scales[ib] = s
			if a := abs32f(s); a > maxAbs {
				maxAbs, maxScale = a, s
			}
		}
		if maxAbs < groupMaxEps {
			continue // all zero: d = 0, zero quants
		}
		iscale := -128 / maxScale
		binary.LittleEndian.PutUint16(blk[208:], F32ToF16(1/iscale))
		d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
		for ib := 0; ib < 16; ib++ {
			blk[192+ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		for j := 0; j < 16; j++ {
			dj := d * float32(int8(blk[192+j]))
			if dj == 0 {
				continue
			}
			for i, v := range x[16*j : 16*j+16] {
				L[16*j+i] = int8(max(-32, min(31, nearestInt(v/dj))) + 32)
			}
		}
		ql, qh := blk[0:128], blk[128:192]
		for j := 0; j < 256; j += 128 {
			for l := 0; l < 32; l++ {
				q1, q2 := uint8(L[j+l]), uint8(L[j+l+32])
				q3, q4 := uint8(L[j+l+64]), uint8(L[j+l+96])
				ql[l] = q1&0xf | (q3&0xf)<<4
				ql[l+32] = q2&0xf | (q4&0xf)<<4
				qh[l] = q1>>4 | q2>>4<<2 | q3>>4<<4 | q4>>4<<6
			}
			ql, qh = ql[64:], qh[32:]
		}
	}
}

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it is all zero.
const groupMaxEps = 1e-15

// makeQX fits x ≈ scale*(L-nmax) with L-nmax in [-nmax, nmax-1] (ggml's
// make_qx_quants with rmse_type 1 and no importance weights): the start
// scale maps the largest magnitude to -nmax, then 18 nearby scales, each
// refitted by least squares weighted by x², keeping the best.
func makeQX(nmax int, x []float32, L []int8) float32 {
	var mx, amax float32
	for _, v := range x {
		if a := abs32f(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	fit := func(iscale float32, store bool) (sumLX, sumL2 float32) {
		for i, v := range x {
			l := max(-nmax, min(nmax-1, nearestInt(iscale*v)))
			if store {
				L[i] = int8(l + nmax)
			}
			w := v * v
			sumLX += w * v * float32(l)
			sumL2 += w * float32(l) * float32(l)
		}
		return sumLX, sumL2
	}
	iscale := -float32(nmax) / mx
	sumLX, sumL2 := fit(iscale, true)
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + 0.1*float32(is)) / mx
		sumLX, sumL2 = fit(iscale, false)
		if sumL2 > 0 && sumLX*sumLX > best*sumL2 {
			fit(iscale, true)
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}

func abs32f(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
