package metrics

import (
	"sort"
	"time"
)

// Exposition buckets: every expoStep-th bucket edge of a Histogram from
// edge expoFirst up, so a count below an exposition bound is a sum of whole
// buckets (exact, no interpolation). With 8 buckets per doubling that is
// two bounds per doubling (each about 1.41 times the previous), from
// 800 ns to about 9.5 s.
const (
	expoFirst = 24 // 100 ns * 2^(24/8) = 800 ns
	expoStep  = 4
)

// ExpositionBounds are the upper bounds ExpositionCounts counts below, in
// increasing order.
func ExpositionBounds() []time.Duration {
	var b []time.Duration
	for i := expoFirst; i < histBuckets-1; i += expoStep {
		b = append(b, bucketUpper(i))
	}
	return b
}

// ExpositionCounts returns, for each of ExpositionBounds, how many samples
// lay below it (cumulative), with the total count and the sum. The count is
// the sum of the bucket counts read, so it is never below the last
// cumulative count even while samples are being recorded. A sample that
// equals a bound to the nanosecond counts in the next bound up.
func (h *Histogram) ExpositionCounts() (below []uint64, count uint64, sum time.Duration) {
	below = make([]uint64, 0, (histBuckets-expoFirst)/expoStep+1)
	for i := range h.counts {
		count += h.counts[i].Load()
		if i >= expoFirst && i < histBuckets-1 && (i-expoFirst)%expoStep == 0 {
			below = append(below, count)
		}
	}
	return below, count, h.Sum()
}

// LatencyHistogram is one histogram of a LatencySet with its key.
type LatencyHistogram struct {
	Backend string
	Bytes   int64 // size bucket (a power of two)
	*Histogram
}

// Histograms lists the set's histograms sorted by backend then size. The
// histograms are the set's own (live), not copies.
func (s *LatencySet) Histograms() []LatencyHistogram {
	s.mu.RLock()
	out := make([]LatencyHistogram, 0, len(s.m))
	for k, h := range s.m {
		out = append(out, LatencyHistogram{Backend: k.backend, Bytes: k.bytes, Histogram: h})
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Backend != out[j].Backend {
			return out[i].Backend < out[j].Backend
		}
		return out[i].Bytes < out[j].Bytes
	})
	return out
}
