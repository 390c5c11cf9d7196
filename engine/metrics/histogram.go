package metrics

import (
	"math"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Histogram buckets: log-spaced with 8 buckets per doubling (each bucket's
// upper edge is 2^(1/8) ≈ 1.09 times its lower edge), from histMin to about
// 10 s. Bucket 0 holds everything below histMin; the last bucket everything
// from its lower edge up (overflow). A quantile is therefore exact to within
// one bucket: about 9 %.
const (
	histMin       = 100 * time.Nanosecond
	histPerOctave = 8
	histRegular   = 213 // 100 ns * 2^(213/8) ≈ 10.1 s
	histBuckets   = histRegular + 2
)

// Histogram records durations with atomic counters, so many goroutines can
// Record at once without a lock. Readers (Quantile, Mean) see a near-consistent
// view while records are in flight; Reset and Merge are not atomic as a whole.
// The zero value is ready to use.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	count  atomic.Uint64
	sum    atomic.Int64 // nanoseconds
	min    atomic.Int64 // nanoseconds + 1; 0 = no sample yet
	max    atomic.Int64 // nanoseconds
}

// bucketOf returns the bucket index of d.
func bucketOf(d time.Duration) int {
	if d < histMin {
		return 0
	}
	i := int(math.Floor(histPerOctave*math.Log2(float64(d)/float64(histMin)))) + 1
	if i > histBuckets-1 {
		i = histBuckets - 1
	}
	return i
}

// bucketUpper is the (exclusive) upper edge of bucket i; for the overflow
// bucket it is +Inf (callers clamp to the recorded maximum).
func bucketUpper(i int) time.Duration {
	if i >= histBuckets-1 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(float64(histMin) * math.Exp2(float64(i)/histPerOctave)))
}

// Record adds one sample. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(d)].Add(1)
	h.count.Add(1)
	h.sum.Add(int64(d))
	v := int64(d)
	for {
		m := h.min.Load()
		if m != 0 && m-1 <= v {
			break
		}
		if h.min.CompareAndSwap(m, v+1) {
			break
		}
	}
	for {
		m := h.max.Load()
		if m >= v || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// Count is the number of samples.
func (h *Histogram) Count() int64 { return int64(h.count.Load()) }

// Sum is the total of all samples.
func (h *Histogram) Sum() time.Duration { return time.Duration(h.sum.Load()) }

// Mean is the exact mean of the samples (0 with none).
func (h *Histogram) Mean() time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / int64(n))
}

// Min and Max are the exact extremes (0 with no samples).
func (h *Histogram) Min() time.Duration {
	m := h.min.Load()
	if m == 0 {
		return 0
	}
	return time.Duration(m - 1)
}
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Quantile returns the q-quantile (0 <= q <= 1) as the upper edge of the
// bucket holding the ceil(q*count)-th smallest sample, clamped to the
// recorded [Min, Max]. So Quantile(0) is Min, Quantile(1) is Max, and a
// quantile never understates the true one by more than one bucket.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	if q <= 0 {
		return h.Min()
	}
	if q >= 1 {
		return h.Max()
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		if cum >= rank {
			v := bucketUpper(i)
			if v > h.Max() {
				v = h.Max()
			}
			if v < h.Min() {
				v = h.Min()
			}
			return v
		}
	}
	return h.Max()
}

// Merge adds o's samples into h.
func (h *Histogram) Merge(o *Histogram) {
	if o.count.Load() == 0 {
		return
	}
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.count.Add(o.count.Load())
	h.sum.Add(o.sum.Load())
	if om := o.min.Load(); om != 0 {
		for {
			m := h.min.Load()
			if m != 0 && m <= om {
				break
			}
			if h.min.CompareAndSwap(m, om) {
				break
			}
		}
	}
	om := o.max.Load()
	for {
		m := h.max.Load()
		if m >= om || h.max.CompareAndSwap(m, om) {
			break
		}
	}
}

// Reset drops all samples.
func (h *Histogram) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.count.Store(0)
	h.sum.Store(0)
	h.min.Store(0)
	h.max.Store(0)
}

// SizeBucket is the message-size bucket of a message of n bytes: the next
// power of two (n itself when n is one); 0 for n <= 0.
func SizeBucket(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n&(n-1) == 0 {
		return n
	}
	return 1 << bits.Len64(uint64(n))
}

// latencyKey names one histogram of a LatencySet.
type latencyKey struct {
	backend string
	bytes   int64 // size bucket
}

// LatencySet is a set of histograms keyed by (backend, message-size bucket).
// Record takes a read lock for the lookup (a write lock only the first time a
// key is seen) and then only atomic adds.
type LatencySet struct {
	mu sync.RWMutex
	m  map[latencyKey]*Histogram
}

// NewLatencySet returns an empty set.
func NewLatencySet() *LatencySet { return &LatencySet{m: map[latencyKey]*Histogram{}} }

// Histogram returns the histogram for (backend, SizeBucket(bytes)), creating it.
func (s *LatencySet) Histogram(backend string, bytes int64) *Histogram {
	k := latencyKey{backend, SizeBucket(bytes)}
	s.mu.RLock()
	h := s.m[k]
	s.mu.RUnlock()
	if h != nil {
		return h
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h = s.m[k]; h == nil {
		h = new(Histogram)
		s.m[k] = h
	}
	return h
}

// Record adds one call of a message of the given size.
func (s *LatencySet) Record(backend string, bytes int64, d time.Duration) {
	s.Histogram(backend, bytes).Record(d)
}

// Merge adds every histogram of o into s.
func (s *LatencySet) Merge(o *LatencySet) {
	o.mu.RLock()
	keys := make([]latencyKey, 0, len(o.m))
	hs := make([]*Histogram, 0, len(o.m))
	for k, h := range o.m {
		keys = append(keys, k)
		hs = append(hs, h)
	}
	o.mu.RUnlock()
	for i, k := range keys {
		s.Histogram(k.backend, k.bytes).Merge(hs[i])
	}
}

// Reset drops every histogram.
func (s *LatencySet) Reset() {
	s.mu.Lock()
	s.m = map[latencyKey]*Histogram{}
	s.mu.Unlock()
}

// Summaries returns one summary per non-empty histogram, sorted by backend
// then size.
func (s *LatencySet) Summaries() []LatencySummary {
	s.mu.RLock()
	out := make([]LatencySummary, 0, len(s.m))
	for k, h := range s.m {
		if h.Count() == 0 {
			continue
		}
		out = append(out, LatencySummary{
			Backend: k.backend, Bytes: k.bytes, Count: h.Count(),
			P50: h.Quantile(0.5), P99: h.Quantile(0.99), Mean: h.Mean(),
		})
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

// RankBytes counts the interconnect bytes each rank sent and received.
type RankBytes struct {
	sent, recv []atomic.Int64
}

// NewRankBytes returns zeroed counters for n ranks.
func NewRankBytes(n int) *RankBytes {
	return &RankBytes{sent: make([]atomic.Int64, n), recv: make([]atomic.Int64, n)}
}

// Ranks is the number of ranks counted.
func (b *RankBytes) Ranks() int { return len(b.sent) }

// Add counts bytes one rank sent and received.
func (b *RankBytes) Add(rank int, sent, recv int64) {
	b.sent[rank].Add(sent)
	b.recv[rank].Add(recv)
}

// Sent and Recv return a copy of the per-rank totals.
func (b *RankBytes) Sent() []int64 { return loadAll(b.sent) }
func (b *RankBytes) Recv() []int64 { return loadAll(b.recv) }

// Reset zeroes the counters.
func (b *RankBytes) Reset() {
	for i := range b.sent {
		b.sent[i].Store(0)
		b.recv[i].Store(0)
	}
}

func loadAll(a []atomic.Int64) []int64 {
	out := make([]int64, len(a))
	for i := range a {
		out[i] = a[i].Load()
	}
	return out
}
