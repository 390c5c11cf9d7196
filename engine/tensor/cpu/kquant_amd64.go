package cpu

//go:noescape
func dotQ4KRowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s32 *int16, nb int, out *float32)

//go:noescape
func dotQ5KRowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s32 *int16, nb int, out *float32)

//go:noescape
func dotQ6KRowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s16 *int16, nb int, out *float32)

// dotKQuantRows sets out[r] = the product of row r of w (rows wstride bytes
// apart, k-quant kind) with the Q8_K row a: the AVX2 kernels of
// kernels_kquant_amd64.s, or the portable ones without AVX2.
func dotKQuantRows(out []float32, w []byte, wstride int, kind kquantKind, a *q8K) {
	nb, n := len(a.d), len(out)
	if n == 0 || nb == 0 {
		dotKQuantRowsGo(out, w, wstride, kind, a)
		return
	}
	_ = w[(n-1)*wstride+nb*kquantBlockBytes[kind]-1]
	_ = a.qs[nb*256-1]
	_, _ = a.s16[nb*16-1], a.s32[nb*8-1]
	switch {
	case hasAVX2 && kind == kindQ4K:
		dotQ4KRowsAVX2(&w[0], wstride, n, &a.qs[0], &a.d[0], &a.s32[0], nb, &out[0])
	case hasAVX2 && kind == kindQ5K:
		dotQ5KRowsAVX2(&w[0], wstride, n, &a.qs[0], &a.d[0], &a.s32[0], nb, &out[0])
	case hasAVX2 && kind == kindQ6K:
		dotQ6KRowsAVX2(&w[0], wstride, n, &a.qs[0], &a.d[0], &a.s16[0], nb, &out[0])
	default:
		dotKQuantRowsGo(out, w, wstride, kind, a)
	}
}

//go:noescape
func quantizeRowQ8KAVX2(q *int8, d *float32, x *float32, nb int)

// quantizeRowQ8K is quantizeRowQ8KGo (the specification), bit for bit.
func quantizeRowQ8K(a *q8K, x []float32) {
	nb := len(x) / 256
	if !hasAVX2 || nb == 0 {
		quantizeRowQ8KGo(a, x)
		return
	}
	_, _ = a.qs[nb*256-1], a.d[nb-1]
	quantizeRowQ8KAVX2(&a.qs[0], &a.d[0], &x[0], nb)
	q8KSums(a, nb)
}

//go:noescape
func dotQ4Kx4RowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s32 *int16, nb int, out *float32, ostride int)

//go:noescape
func dotQ6Kx4RowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s16 *int16, nb int, out *float32, ostride int)

// dotKQuantRowsX4 sets out[k*ostride+r] = the product of row r of w with
// the Q8_K row of token k, for r < nrows and k < 4, where a holds the
// four tokens' rows one after another (cols each); bit-identical to
// dotKQuantRows per token. It reports false, computing nothing, where no
// four-token kernel exists (Q4_K and Q6_K with AVX2 have one).
func dotKQuantRowsX4(out []float32, ostride, nrows int, w []byte, wstride int, kind kquantKind, a *q8K, cols int) bool {
	if !hasAVX2 || kind == kindQ5K || nrows == 0 {
		return false
	}
	nb := cols / 256
	_ = out[3*ostride+nrows-1]
	_ = w[(nrows-1)*wstride+nb*kquantBlockBytes[kind]-1]
	_, _, _, _ = a.qs[4*nb*256-1], a.d[4*nb-1], a.s32[4*nb*8-1], a.s16[4*nb*16-1]
	if kind == kindQ4K {
		dotQ4Kx4RowsAVX2(&w[0], wstride, nrows, &a.qs[0], &a.d[0], &a.s32[0], nb, &out[0], ostride*4)
	} else {
		dotQ6Kx4RowsAVX2(&w[0], wstride, nrows, &a.qs[0], &a.d[0], &a.s16[0], nb, &out[0], ostride*4)
	}
	return true
}
