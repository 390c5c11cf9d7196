package cpu

// Four-token groups for the VNNI prefill kernel (dotQ8Q8x4RowsG): the
// quantized activations of tokens 4g..4g+3 are interleaved block by block
// so one pointer walks all four, with each 4-byte lane's offset correction
// precomputed.
//
//	xq (T/4, nb, 4, 32) int8    the tokens' blocks side by side
//	xc (T/4, nb, 4, 8)  int32   -128 * the sum of each 4-byte lane
//	dx (T/4, nb, 4)     float32 their scales
type q8Groups struct {
	xq []int8
	xc []int32
	dx []float32
}

// size readies g for T tokens of nb blocks (only whole groups are laid out).
func (g *q8Groups) size(T, nb int) {
	n := T / 4 * nb * 4
	if cap(g.dx) < n {
		g.xq = make([]int8, n*32)
		g.xc = make([]int32, n*8)
		g.dx = make([]float32, n)
	}
	g.xq, g.xc, g.dx = g.xq[:n*32], g.xc[:n*8], g.dx[:n]
}

// put lays out token t (q (nb*32), d (nb)) if it belongs to a whole group.
func (g *q8Groups) put(t int, q []int8, d []float32) {
	nb := len(d)
	grp, k := t/4, t%4
	if (grp+1)*nb*4 > len(g.dx) {
		return
	}
	for b := 0; b < nb; b++ {
		i := (grp*nb+b)*4 + k
		copy(g.xq[i*32:i*32+32], q[b*32:b*32+32])
		laneCorrections(g.xc[i*8:i*8+8], q[b*32:b*32+32])
		g.dx[i] = d[b]
	}
}

// group returns the slices of group grp.
func (g *q8Groups) group(grp, nb int) ([]int8, []int32, []float32) {
	i := grp * nb * 4
	return g.xq[i*32 : (i+nb*4)*32], g.xc[i*8 : (i+nb*4)*8], g.dx[i : i+nb*4]
}

// laneCorrections sets xc (len(q)/4) to -128 * the sum of each 4-byte lane
// of q, the offset correction of the VNNI kernels.
func laneCorrections(xc []int32, q []int8) {
	xc = xc[:len(q)/4]
	for l := range xc {
		xc[l] = -128 * (int32(q[4*l]) + int32(q[4*l+1]) + int32(q[4*l+2]) + int32(q[4*l+3]))
	}
}
