package tp

// Building an auto table from cells measured elsewhere (the GPU backends
// of allreduce-bench --device cuda calibrate in the run; the CPU's Calibrate
// sweeps on its own), and describing one.

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Measured is one (backend, size) cell of a calibration with the accuracy
// of its sum: MaxRelErr is max|got-ref| / max|ref| against the float64 sum
// (NaN when the output was NaN).
type Measured struct {
	Backend   string
	Bytes     int64
	TimeUs    float64
	MaxRelErr float64
}

// Exact says the cell summed within tol and has a finite, positive time.
func (m Measured) Exact(tol float64) bool {
	return !math.IsNaN(m.MaxRelErr) && m.MaxRelErr <= tol && m.TimeUs > 0 && !math.IsInf(m.TimeUs, 0)
}

// FastestExact is the fastest of candidates among cells at this size that
// summed within tol ("" when none was measured or none was exact). Ties go
// to the earlier candidate.
func FastestExact(candidates []string, tol float64, cells []Measured, bytes int64) string {
	best, bestT := "", math.Inf(1)
	for _, c := range candidates {
		for _, m := range cells {
			if m.Bytes == bytes && m.Backend == c && m.Exact(tol) && m.TimeUs < bestT {
				best, bestT = c, m.TimeUs
			}
		}
	}
	return best
}

// BuildAutoTable turns a calibration into auto's table for ranks: for
// every measured size, the fastest exact candidate there (no hysteresis:
// auto is meant never to be slower than the best backend it measured),
// with runs of the same winner merged into one rule. Sizes between
// calibrated ones use the next larger size's winner; larger ones the last.
// Every cell but auto's own goes into the table's Points.
func BuildAutoTable(ranks int, candidates []string, tol float64, cells []Measured) (*AutoTable, error) {
	var sizes []int64
	seen := map[int64]bool{}
	for _, m := range cells {
		if !seen[m.Bytes] {
			seen[m.Bytes] = true
			sizes = append(sizes, m.Bytes)
		}
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	t := &AutoTable{Ranks: ranks, Source: "measured", Note: "calibrated in this run"}
	for _, s := range sizes {
		b := FastestExact(candidates, tol, cells, s)
		if b == "" {
			continue
		}
		for _, m := range cells {
			if m.Bytes == s && m.Backend != "auto" {
				t.Points = append(t.Points, CalibPoint{Bytes: s, Backend: m.Backend, TimeUs: m.TimeUs})
			}
		}
		if n := len(t.Rules); n > 0 && t.Rules[n-1].Backend == b {
			t.Rules[n-1].MaxBytes = s
		} else {
			t.Rules = append(t.Rules, AutoRule{MaxBytes: s, Backend: b})
		}
	}
	if len(t.Rules) == 0 {
		return nil, fmt.Errorf("auto, %d ranks: no backend was both available and exact at any size", ranks)
	}
	return t, nil
}

// Describe says which backend auto uses up to which size, and where it
// switches: "oneshot up to 16K, nccl above; switches: oneshot->nccl after 16K".
func (t *AutoTable) Describe() string {
	var parts []string
	for i, r := range t.Rules {
		if i == len(t.Rules)-1 {
			if i == 0 {
				parts = append(parts, r.Backend+" at every size")
			} else {
				parts = append(parts, r.Backend+" above")
			}
		} else {
			parts = append(parts, fmt.Sprintf("%s up to %s", r.Backend, FormatBytes(r.MaxBytes)))
		}
	}
	s := strings.Join(parts, ", ")
	var xs []string
	for _, c := range t.Crossovers() {
		xs = append(xs, fmt.Sprintf("%s->%s after %s", c.From, c.To, FormatBytes(c.AfterBytes)))
	}
	if len(xs) > 0 {
		s += "; switches: " + strings.Join(xs, ", ")
	}
	return s
}
