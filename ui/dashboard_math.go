package ui

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/dustin/go-humanize"

	"rigscope/engine/metrics"
)

// Curve is allreduce latency against message size for one backend, from
// the last calibration or allreduce-bench.
type Curve struct {
	Backend string       `json:"backend"`
	Points  []CurvePoint `json:"points"` // Bytes ascending
}

// CurvePoint is one measured message size.
type CurvePoint struct {
	Bytes   int64         `json:"bytes"`
	Latency time.Duration `json:"latency_ns"`
}

// Crossover is a message size where the fastest backend changes: what
// `auto` switches at.
type Crossover struct {
	Bytes    float64
	From, To string // fastest below, fastest above
}

// logLatencyAt interpolates a curve's log10 latency at size x in log-log
// space; false outside the measured sizes.
func logLatencyAt(c Curve, x float64) (float64, bool) {
	p := c.Points
	for i := range p {
		if float64(p[i].Bytes) == x {
			return math.Log10(float64(p[i].Latency)), p[i].Latency > 0
		}
		if i > 0 && float64(p[i-1].Bytes) < x && x < float64(p[i].Bytes) {
			x0, x1 := math.Log(float64(p[i-1].Bytes)), math.Log(float64(p[i].Bytes))
			y0, y1 := math.Log10(float64(p[i-1].Latency)), math.Log10(float64(p[i].Latency))
			f := (math.Log(x) - x0) / (x1 - x0)
			return y0 + f*(y1-y0), p[i-1].Latency > 0 && p[i].Latency > 0
		}
	}
	return 0, false
}

// Crossovers returns the sizes, ascending, where the fastest backend
// changes. Between two measured sizes with different winners, the crossing
// is where the two curves meet under log-log interpolation.
func Crossovers(curves []Curve) []Crossover {
	var sizes []float64
	seen := map[int64]bool{}
	for _, c := range curves {
		for _, p := range c.Points {
			if p.Bytes > 0 && !seen[p.Bytes] {
				seen[p.Bytes] = true
				sizes = append(sizes, float64(p.Bytes))
			}
		}
	}
	sort.Float64s(sizes)
	winner := func(x float64) (int, float64) {
		best, bestY := -1, math.Inf(1)
		for i, c := range curves {
			if y, ok := logLatencyAt(c, x); ok && y < bestY {
				best, bestY = i, y
			}
		}
		return best, bestY
	}
	var out []Crossover
	prev, prevX := -1, 0.0
	for _, x := range sizes {
		w, _ := winner(x)
		if w < 0 {
			continue
		}
		if prev >= 0 && w != prev {
			a1, okA1 := logLatencyAt(curves[prev], prevX)
			b1, okB1 := logLatencyAt(curves[w], prevX)
			a2, okA2 := logLatencyAt(curves[prev], x)
			b2, okB2 := logLatencyAt(curves[w], x)
			at := math.Sqrt(prevX * x) // geometric midpoint when a curve is missing
			if okA1 && okB1 && okA2 && okB2 {
				f1, f2 := a1-b1, a2-b2
				if f1 != f2 {
					t := f1 / (f1 - f2)
					at = math.Exp(math.Log(prevX) + t*(math.Log(x)-math.Log(prevX)))
				}
			}
			out = append(out, Crossover{Bytes: at, From: curves[prev].Backend, To: curves[w].Backend})
		}
		prev, prevX = w, x
	}
	return out
}

// CurvesFromSnapshot builds one curve per backend from the engine's live
// (backend, size bucket) p50s, for when no calibration curve is loaded.
func CurvesFromSnapshot(s metrics.Snapshot) []Curve {
	idx := map[string]int{}
	var out []Curve
	for _, l := range s.AllReduce {
		if l.Count == 0 || l.P50 <= 0 {
			continue
		}
		i, ok := idx[l.Backend]
		if !ok {
			i = len(out)
			idx[l.Backend] = i
			out = append(out, Curve{Backend: l.Backend})
		}
		out[i].Points = append(out[i].Points, CurvePoint{Bytes: l.Bytes, Latency: l.P50})
	}
	for i := range out {
		sort.Slice(out[i].Points, func(a, b int) bool { return out[i].Points[a].Bytes < out[i].Points[b].Bytes })
	}
	return out
}

// Fractions divides each count by the total; nil when the total is zero.
func Fractions(counts []int) []float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return nil
	}
	out := make([]float64, len(counts))
	for i, c := range counts {
		out[i] = float64(c) / float64(total)
	}
	return out
}

// Quantile is the q-quantile (0..1) of vals by linear interpolation between
// order statistics (Hyndman-Fan type 7, as numpy's default); NaN when
// empty. vals is not modified.
func Quantile(vals []float64, q float64) float64 {
	if len(vals) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	q = min(max(q, 0), 1)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// Human formatters for axes and values.

func fmtRate(v float64) string { return humanize.Bytes(uint64(max(v, 0))) + "/s" }
func fmtBytes(v float64) string {
	return humanize.IBytes(uint64(max(v, 0)))
}
func fmtPercent(v float64) string  { return fmt.Sprintf("%.0f%%", v) }
func fmtFraction(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
func fmtTokS(v float64) string     { return fmt.Sprintf("%.0f", v) }

// fmtRunSeconds labels a run-time axis: 0s, 250ms, 1.5s, 12s, 2m30s.
func fmtRunSeconds(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0s"
	case a < 1:
		return fmtSeconds(v)
	case a < 60:
		return trim(v) + "s"
	}
	return time.Duration(v * float64(time.Second)).Round(time.Second).String()
}

// fmtSeconds renders a duration given in seconds: 850µs, 1.2ms, 3s.
func fmtSeconds(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a < 1e-6:
		return fmt.Sprintf("%.0fns", v*1e9)
	case a < 1e-3:
		return trim(v*1e6) + "µs"
	case a < 1:
		return trim(v*1e3) + "ms"
	}
	return trim(v) + "s"
}

func trim(v float64) string {
	if math.Abs(v) >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	if math.Abs(v) >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}
