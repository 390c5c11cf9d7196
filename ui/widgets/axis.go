package widgets

import (
	"math"
	"strconv"
)

// Formatter renders an axis or value label.
type Formatter func(float64) string

// Plain formats with up to 3 significant digits.
func Plain(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// Range is a closed interval [Min, Max].
type Range struct{ Min, Max float64 }

// dataRange is the min and max of the finite values; ok false when none.
func dataRange(vals []float64) (r Range, ok bool) {
	r = Range{math.Inf(1), math.Inf(-1)}
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		r.Min, r.Max, ok = math.Min(r.Min, v), math.Max(r.Max, v), true
	}
	return r, ok
}

// NiceTicks returns about n evenly spaced round values covering r (steps of
// 1, 2 or 5 times a power of ten) and the range widened to them.
func NiceTicks(r Range, n int) ([]float64, Range) {
	if n < 2 {
		n = 2
	}
	if !(r.Max > r.Min) {
		d := math.Max(math.Abs(r.Min)*0.1, 1)
		r = Range{r.Min - d, r.Max + d}
	}
	raw := (r.Max - r.Min) / float64(n-1)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	lo, hi := math.Floor(r.Min/step)*step, math.Ceil(r.Max/step)*step
	var ticks []float64
	for v := lo; v <= hi+step/2; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return ticks, Range{lo, hi}
}

// LogTicks returns the powers of base within r (r.Min > 0), thinned to at
// most n, and the range widened to whole powers.
func LogTicks(r Range, base float64, n int) ([]float64, Range) {
	if r.Min <= 0 || !(r.Max >= r.Min) {
		return nil, r
	}
	lb := math.Log(base)
	lo, hi := math.Floor(math.Log(r.Min)/lb+1e-9), math.Ceil(math.Log(r.Max)/lb-1e-9)
	if hi <= lo {
		hi = lo + 1
	}
	every := math.Max(1, math.Ceil((hi-lo+1)/float64(max(n, 2))))
	var ticks []float64
	for e := lo; e <= hi; e += every {
		ticks = append(ticks, math.Pow(base, e))
	}
	return ticks, Range{math.Pow(base, lo), math.Pow(base, hi)}
}

// scale maps data values to pixels along one axis.
type scale struct {
	r       Range
	log     bool
	p0, p1  float32 // pixel positions of r.Min and r.Max
	invalid bool
}

func (s scale) at(v float64) float32 {
	lo, hi := s.r.Min, s.r.Max
	if s.log {
		if v <= 0 {
			v = lo
		}
		v, lo, hi = math.Log(v), math.Log(lo), math.Log(hi)
	}
	f := 0.0
	if hi > lo {
		f = (v - lo) / (hi - lo)
	}
	return s.p0 + float32(f)*(s.p1-s.p0)
}
