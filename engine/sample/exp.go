package sample

import "math"

// Exp is e**x computed the same way on every machine: the FreeBSD
// algorithm of Go's pure-Go math.exp (argument reduction by ln 2 in two
// parts, a degree-5 minimax polynomial, ldexp), every product and sum
// rounded on its own (the float64 conversions stop fused multiply-adds),
// so its bits do not depend on the CPU. math.Exp does not promise that:
// on amd64 it runs an assembly routine that uses FMA when the CPU has it,
// and arm64 fuses. kernels/sample.cu (smp_exp) computes the same
// operations in the same order, so the device's softmax is the host's to
// the bit. Within 1 ulp of e**x.
func Exp(x float64) float64 {
	const (
		ln2Hi     = 6.93147180369123816490e-01
		ln2Lo     = 1.90821492927058770002e-10
		log2e     = 1.44269504088896338700e+00
		overflow  = 7.09782712893383973096e+02
		underflow = -7.45133219101941108420e+02
		nearZero  = 1.0 / (1 << 28) // 2**-28

		p1 = 1.66666666666666657415e-01
		p2 = -2.77777777770155933842e-03
		p3 = 6.61375632143793436117e-05
		p4 = -1.65339022054652515390e-06
		p5 = 4.13813679705723846039e-08
	)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case math.IsInf(x, -1):
		return 0
	case x > overflow:
		return math.Inf(1)
	case x < underflow:
		return 0
	case -nearZero < x && x < nearZero:
		return 1 + x
	}
	var k int
	switch {
	case x < 0:
		k = int(float64(log2e*x) - 0.5)
	case x > 0:
		k = int(float64(log2e*x) + 0.5)
	}
	hi := x - float64(float64(k)*ln2Hi)
	lo := float64(float64(k) * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	poly := p1 + float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))
	c := r - float64(t*poly)
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	if -1022 <= k && k <= 1023 { // 2**k is a normal float64: the product rounds as Ldexp does (exact unless the result is subnormal)
		return y * math.Float64frombits(uint64(k+1023)<<52)
	}
	return math.Ldexp(y, k)
}
