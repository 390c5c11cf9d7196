package metrics

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestExpositionBounds(t *testing.T) {
	b := ExpositionBounds()
	if len(b) != 48 || b[0] != 800*time.Nanosecond {
		t.Fatalf("ExpositionBounds: %d bounds from %v, want 48 from 800ns", len(b), b[0])
	}
	for i := 1; i < len(b); i++ {
		if r := float64(b[i]) / float64(b[i-1]); r < 1.41 || r > 1.42 {
			t.Fatalf("bound %d/%d ratio %.4f, want about 1.414", i, i-1, r)
		}
	}
	if last := b[len(b)-1]; last < 9*time.Second || last > 10*time.Second {
		t.Errorf("last bound %v, want about 9.5s", last)
	}
}

// TestExpositionCounts checks the cumulative counts against a direct count
// of the samples below each bound.
func TestExpositionCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := map[string][]time.Duration{
		"empty":    nil,
		"tiny":     {0, 50 * time.Nanosecond, 799 * time.Nanosecond},
		"overflow": {20 * time.Second, time.Minute},
	}
	var spread []time.Duration
	for range 5000 {
		spread = append(spread, time.Duration(100*rng.ExpFloat64()*float64(time.Microsecond)))
	}
	cases["spread"] = spread
	bounds := ExpositionBounds()
	for name, samples := range cases {
		var h Histogram
		var sum time.Duration
		for _, d := range samples {
			h.Record(d)
			sum += d
		}
		below, count, gotSum := h.ExpositionCounts()
		if count != uint64(len(samples)) || gotSum != sum || len(below) != len(bounds) {
			t.Fatalf("%s: count %d sum %v (%d bounds), want %d %v (%d)", name, count, gotSum, len(below), len(samples), sum, len(bounds))
		}
		for i, b := range bounds {
			var want uint64
			for _, d := range samples {
				if d < b {
					want++
				}
			}
			if below[i] != want {
				t.Errorf("%s: below %v = %d, want %d", name, b, below[i], want)
			}
		}
	}
}

func TestLatencySetHistograms(t *testing.T) {
	s := NewLatencySet()
	s.Record("tree", 5000, time.Microsecond)
	s.Record("ring", 4096, time.Microsecond)
	s.Record("ring", 100, time.Microsecond)
	s.Record("ring", 4000, 3*time.Microsecond)
	got := s.Histograms()
	want := []struct {
		backend string
		bytes   int64
		n       int64
	}{{"ring", 128, 1}, {"ring", 4096, 2}, {"tree", 8192, 1}}
	if len(got) != len(want) {
		t.Fatalf("Histograms: %d, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Backend != w.backend || got[i].Bytes != w.bytes || got[i].Count() != w.n {
			t.Errorf("Histograms[%d] = %s %d x%d, want %s %d x%d", i, got[i].Backend, got[i].Bytes, got[i].Count(), w.backend, w.bytes, w.n)
		}
	}
}
