//go:build !amd64

package cpu

// dotKQuantRows sets out[r] = the product of row r of w (rows wstride bytes
// apart, k-quant kind) with the Q8_K row a.
func dotKQuantRows(out []float32, w []byte, wstride int, kind kquantKind, a *q8K) {
	dotKQuantRowsGo(out, w, wstride, kind, a)
}

func quantizeRowQ8K(a *q8K, x []float32) { quantizeRowQ8KGo(a, x) }

func dotKQuantRowsX4(out []float32, ostride, nrows int, w []byte, wstride int, kind kquantKind, a *q8K, cols int) bool {
	return false
}
