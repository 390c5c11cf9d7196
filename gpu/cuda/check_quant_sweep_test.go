//go:build cuda

package cuda

import (
	"fmt"
	"math"
)

// The comparisons the quantized products' checks (dp4a, mqm, mh, mqk,
// fp8) share: a run against a float64 reference, rows against their T=1
// runs, and the sweep over T that does both.

// errStats: ||got-ref||/||ref|| and max |got-ref|; an error on NaN/Inf
// (an output the kernel did not write stays NaN).
func errStats(got []float32, ref []float64) (rel, maxAbs float64, err error) {
	var num, den float64
	for i := range ref {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return 0, 0, fmt.Errorf("element %d is %v (unwritten or overflow)", i, g)
		}
		num += (g - ref[i]) * (g - ref[i])
		den += ref[i] * ref[i]
		maxAbs = math.Max(maxAbs, math.Abs(g-ref[i]))
	}
	return math.Sqrt(num / math.Max(den, 1e-300)), maxAbs, nil
}

// rowsBitwise is "ok" when rows [0, T) of got (T, N) equal the rows one[t]
// (each row run alone) bit for bit, else where they first differ.
func rowsBitwise(got []float32, one [][]float32, T, N int) string {
	for t := 0; t < T; t++ {
		for n := 0; n < N; n++ {
			if math.Float32bits(got[t*N+n]) != math.Float32bits(one[t][n]) {
				return fmt.Sprintf("FAIL T=%d row %d col %d: %g vs %g", T, t, n, got[t*N+n], one[t][n])
			}
		}
	}
	return "ok"
}

// tSweep is what sweepT found: the worst relative error and absolute
// difference against the reference, "ok" when every T=k row is bitwise
// its T=1 run (else where one first is not).
type tSweep struct {
	worst, worstAbs float64
	bitwise         string
	last            []float32 // the T=TT run's output (nil when it had NaN or Inf)
}

// sweepT runs a product (run: rows [t0, t0+T) of N outputs) at T=1 on
// each of TT rows, then at T=1..TT from row 0, against ref (TT, N) float64;
// bad is the runs with NaN or Inf outputs (unwritten, or overflow). The
// quantized products' checks (dp4a, mqm, mh, mqk) share it.
func sweepT(run func(t0, T int) ([]float32, error), ref []float64, TT, N int) (s tSweep, bad []error, err error) {
	one := make([][]float32, TT)
	for t := range one {
		if one[t], err = run(t, 1); err != nil {
			return s, nil, err
		}
	}
	s.bitwise = "ok"
	for T := 1; T <= TT; T++ {
		got, err := run(0, T)
		if err != nil {
			return s, bad, err
		}
		if s.bitwise == "ok" {
			s.bitwise = rowsBitwise(got, one, T, N)
		}
		rel, abs, e := errStats(got, ref[:T*N])
		if e != nil {
			bad = append(bad, fmt.Errorf("T=%d: %w", T, e))
			continue
		}
		s.worst, s.worstAbs = max(s.worst, rel), max(s.worstAbs, abs)
		if T == TT {
			s.last = got
		}
	}
	return s, bad, nil
}
