package tp

import (
	"context"
	"math"
)

// The compressed backends: twoshot with a lower-precision wire format. What a
// rank sends (its input chunks, and its reduced chunk) is quantized; its own
// contribution to its own chunk stays float32. All ranks dequantize the same
// reduced chunk, so they get the same bits.

// qBlock is the int8 block: one float32 scale per qBlock values.
const qBlock = 32

// roundMagic is 1.5*2^23: float32 x + roundMagic - roundMagic rounds x to
// an integer for |x| < 2^22. A var, so the compiler does not fold it away.
var roundMagic float32 = 1 << 23 * 1.5

// int8WireBytes is the wire size of m values: m int8 plus the scales.
func int8WireBytes(m int) int { return m + 4*((m+qBlock-1)/qBlock) }

// quantizeInt8 writes x as int8 q with per-block scales s (len(s) =
// ceil(len(x)/qBlock)); x[i] ≈ q[i]*s[i/qBlock], |error| <= s/2 = absmax/254.
func quantizeInt8(q []int8, s []float32, x []float32) {
	for b := 0; b*qBlock < len(x); b++ {
		blk := x[b*qBlock : min((b+1)*qBlock, len(x))]
		var hi, lo float32
		for _, v := range blk {
			if v > hi {
				hi = v
			}
			if v < lo {
				lo = v
			}
		}
		amax := max(hi, -lo)
		scale := amax / 127
		s[b] = scale
		qb := q[b*qBlock : b*qBlock+len(blk)]
		if scale == 0 {
			clear(qb)
			continue
		}
		inv := 1 / scale
		for i, v := range blk {
			// |v*inv| <= 127 up to rounding; adding and removing 1.5*2^23
			// rounds it to the nearest integer (ties to even), branch-free.
			r := v*inv + roundMagic
			qb[i] = int8(int32(r - roundMagic))
		}
	}
}

// dequantInt8 does dst[i] (op)= q[i]*s[i/qBlock]; q and dst start on a block
// boundary.
func dequantInt8(dst []float32, q []int8, s []float32, accumulate bool) {
	for b := 0; b*qBlock < len(dst); b++ {
		scale := s[b]
		lo, hi := b*qBlock, min((b+1)*qBlock, len(dst))
		d, qb := dst[lo:hi], q[lo:hi]
		if accumulate {
			for i := range d {
				d[i] += float32(qb[i]) * scale
			}
		} else {
			for i := range d {
				d[i] = float32(qb[i]) * scale
			}
		}
	}
}

// toBF16 rounds to nearest even (NaN stays NaN).
func toBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func fromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// compressedInt8AllReduce: twoshot over an int8 wire (see quantizeInt8).
func compressedInt8AllReduce(c *rankComm, ctx context.Context, x []float32) error {
	g, r, n, L := c.g, c.rank, c.g.n, len(x)
	p := c.calls & 1
	w := &g.wire[r]
	nb := (L + qBlock - 1) / qBlock
	w.q[p], w.qs[p] = grow(w.q[p], L), grow(w.qs[p], nb)
	w.q2[p], w.q2s[p] = grow(w.q2[p], L), grow(w.q2s[p], nb)
	w.scratch[p] = grow(w.scratch[p], L) // accumulator for the own chunk; not read by peers
	quantizeInt8(w.q[p], w.qs[p], x)
	w.n[p] = L
	if err := c.publishWait(ctx); err != nil {
		return err
	}
	lo, hi := chunk(L, n, r, qBlock)
	acc := w.scratch[p][lo:hi]
	copy(acc, x[lo:hi])
	for j := range n {
		if j != r {
			pw := &g.wire[j]
			dequantInt8(acc, pw.q[p][lo:hi], pw.qs[p][lo/qBlock:], true)
		}
	}
	quantizeInt8(w.q2[p][lo:hi], w.q2s[p][lo/qBlock:], acc)
	if err := g.bar.wait(ctx); err != nil {
		return err
	}
	var sent, recv int
	for j := range n {
		jlo, jhi := chunk(L, n, j, qBlock)
		pw := &g.wire[j]
		dequantInt8(x[jlo:jhi], pw.q2[p][jlo:jhi], pw.q2s[p][jlo/qBlock:], false)
		if j != r {
			sent += int8WireBytes(jhi - jlo) // rank j read my input chunk j
			recv += int8WireBytes(jhi - jlo) // I read rank j's reduced chunk
			recv += int8WireBytes(hi - lo)   // I read rank j's input chunk r
			sent += int8WireBytes(hi - lo)   // rank j read my reduced chunk
		}
	}
	g.bytes.Add(r, int64(sent), int64(recv))
	return nil
}

// compressedBF16AllReduce: twoshot over a bf16 wire.
func compressedBF16AllReduce(c *rankComm, ctx context.Context, x []float32) error {
	g, r, n, L := c.g, c.rank, c.g.n, len(x)
	p := c.calls & 1
	w := &g.wire[r]
	w.h[p], w.h2[p] = grow(w.h[p], L), grow(w.h2[p], L)
	w.scratch[p] = grow(w.scratch[p], L)
	for i, v := range x {
		w.h[p][i] = toBF16(v)
	}
	w.n[p] = L
	if err := c.publishWait(ctx); err != nil {
		return err
	}
	lo, hi := chunk(L, n, r, cacheAlign)
	acc := w.scratch[p][lo:hi]
	copy(acc, x[lo:hi])
	for j := range n {
		if j != r {
			src := g.wire[j].h[p][lo:hi]
			for i := range acc {
				acc[i] += fromBF16(src[i])
			}
		}
	}
	for i, v := range acc {
		w.h2[p][lo+i] = toBF16(v)
	}
	if err := g.bar.wait(ctx); err != nil {
		return err
	}
	var sent, recv int
	for j := range n {
		jlo, jhi := chunk(L, n, j, cacheAlign)
		src := g.wire[j].h2[p][jlo:jhi]
		dst := x[jlo:jhi]
		for i := range dst {
			dst[i] = fromBF16(src[i])
		}
		if j != r {
			sent += 2 * ((jhi - jlo) + (hi - lo))
			recv += 2 * ((jhi - jlo) + (hi - lo))
		}
	}
	g.bytes.Add(r, int64(sent), int64(recv))
	return nil
}
