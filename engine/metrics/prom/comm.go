package prom

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"rigscope/engine/metrics"
)

// commCollector exposes allreduce latency per (TP size, backend, message
// size bucket) and interconnect bytes per (TP size, rank), cumulative over
// the process: the ended runs' totals plus the running runs' live sets. The
// ranks record into their run's own LatencySet and RankBytes (atomic adds,
// no lock of ours on that path); a scrape merges them under mu.
type commCollector struct {
	latency, sent, recv *prometheus.Desc
	bounds              []float64 // seconds

	mu   sync.Mutex
	done map[int]*commTotals // by TP size
	live map[*commRun]struct{}
}

// commTotals are the ended runs' measurements for one TP size.
type commTotals struct {
	lat        *metrics.LatencySet
	sent, recv []int64 // per rank
}

// commRun is one running run's live measurements.
type commRun struct {
	c     *commCollector
	tp    int
	lat   *metrics.LatencySet
	bytes *metrics.RankBytes
}

func newCommCollector() *commCollector {
	c := &commCollector{
		latency: prometheus.NewDesc("rigscope:allreduce_latency_seconds",
			"Allreduce latency per TP size, backend and message-size bucket (bytes: the bucket's upper bound, a power of two); every rank's call is one observation.",
			[]string{"tp", "backend", "bytes"}, nil),
		sent: prometheus.NewDesc("rigscope:interconnect_bytes_sent_total", "Bytes each rank sent, as the engine counts them.", []string{"tp", "rank"}, nil),
		recv: prometheus.NewDesc("rigscope:interconnect_bytes_received_total", "Bytes each rank received, as the engine counts them.", []string{"tp", "rank"}, nil),
		done: map[int]*commTotals{},
		live: map[*commRun]struct{}{},
	}
	for _, b := range metrics.ExpositionBounds() {
		c.bounds = append(c.bounds, b.Seconds())
	}
	return c
}

// start registers a run's live measurements (either may be nil).
func (c *commCollector) start(tp int, lat *metrics.LatencySet, bytes *metrics.RankBytes) *commRun {
	r := &commRun{c: c, tp: tp, lat: lat, bytes: bytes}
	c.mu.Lock()
	c.live[r] = struct{}{}
	c.mu.Unlock()
	return r
}

// end folds the run into the totals; the run's ranks have stopped.
func (r *commRun) end() {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.live, r)
	c.add(c.totals(r.tp), r)
}

// totals returns the totals of TP size tp, making them. Callers hold mu.
func (c *commCollector) totals(tp int) *commTotals {
	t := c.done[tp]
	if t == nil {
		t = &commTotals{lat: metrics.NewLatencySet(), sent: make([]int64, tp), recv: make([]int64, tp)}
		c.done[tp] = t
	}
	return t
}

// add adds r's measurements into t.
func (c *commCollector) add(t *commTotals, r *commRun) {
	if r.lat != nil {
		t.lat.Merge(r.lat)
	}
	if r.bytes != nil {
		for i, b := range r.bytes.Sent() {
			if i < len(t.sent) {
				t.sent[i] += b
			}
		}
		for i, b := range r.bytes.Recv() {
			if i < len(t.recv) {
				t.recv[i] += b
			}
		}
	}
}

func (c *commCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.latency
	ch <- c.sent
	ch <- c.recv
}

// Collect emits the ended runs' totals plus the running runs' so far.
func (c *commCollector) Collect(ch chan<- prometheus.Metric) {
	view := map[int]*commTotals{}
	c.mu.Lock()
	for tp, t := range c.done {
		v := &commTotals{lat: metrics.NewLatencySet(), sent: append([]int64{}, t.sent...), recv: append([]int64{}, t.recv...)}
		v.lat.Merge(t.lat)
		view[tp] = v
	}
	for r := range c.live {
		v := view[r.tp]
		if v == nil {
			v = &commTotals{lat: metrics.NewLatencySet(), sent: make([]int64, r.tp), recv: make([]int64, r.tp)}
			view[r.tp] = v
		}
		c.add(v, r)
	}
	c.mu.Unlock()
	for tp, v := range view {
		if tp < 2 {
			continue // one rank: no allreduce, no interconnect
		}
		tps := strconv.Itoa(tp)
		for _, h := range v.lat.Histograms() {
			below, count, sum := h.ExpositionCounts()
			buckets := make(map[float64]uint64, len(below))
			for i, n := range below {
				buckets[c.bounds[i]] = n
			}
			ch <- prometheus.MustNewConstHistogram(c.latency, count, sum.Seconds(), buckets, tps, h.Backend, strconv.FormatInt(h.Bytes, 10))
		}
		for i := range v.sent {
			rank := strconv.Itoa(i)
			ch <- prometheus.MustNewConstMetric(c.sent, prometheus.CounterValue, float64(v.sent[i]), tps, rank)
			ch <- prometheus.MustNewConstMetric(c.recv, prometheus.CounterValue, float64(v.recv[i]), tps, rank)
		}
	}
}
