package metrics

import (
	"testing"
	"time"

	"rigscope/engine/stepstats"
)

func TestBucketEdges(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {99, 0}, {100, 1}, {109, 1}, // 100*2^(1/8) = 109.05
		{110, 2}, {200, 9}, {51199, 72}, {51200, 73}, // 100*2^9 = 51200 starts bucket 73
		{time.Hour, histBuckets - 1},
	}
	for _, tc := range tests {
		if got := bucketOf(tc.d); got != tc.want {
			t.Errorf("bucketOf(%d) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	us := time.Microsecond
	seq := func(n int, step time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = time.Duration(i+1) * step
		}
		return out
	}
	tests := []struct {
		name    string
		samples []time.Duration
		q       float64
		want    time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", []time.Duration{5 * us}, 0.5, 5 * us}, // clamped to max
		{"min", seq(100, us), 0, us},
		{"max", seq(100, us), 1, 100 * us},
		// 50th of 1..100 us is 50 us, in bucket 72 = [100*2^(71/8), 100*2^9) ns:
		// its upper edge is 51.2 us.
		{"p50", seq(100, us), 0.5, 51200},
		// 99th is 99 us: bucket floor(8*log2(990))+1 = 80, upper edge
		// 100*2^(80/8) = 102400 ns, clamped to the max 100 us.
		{"p99", seq(100, us), 0.99, 100 * us},
		// 1st of 1..100 us is 1 us: bucket 27, upper 100*2^(27/8) = 1037 ns.
		{"p01", seq(100, us), 0.01, 1037},
		{"under 100ns", []time.Duration{10, 20, 30}, 0.5, 30}, // bucket 0's upper edge 100ns, clamped to max
	}
	for _, tc := range tests {
		var h Histogram
		for _, d := range tc.samples {
			h.Record(d)
		}
		if got := h.Quantile(tc.q); got != tc.want {
			t.Errorf("%s: Quantile(%v) over %d samples = %v, want %v", tc.name, tc.q, len(tc.samples), got, tc.want)
		}
	}
}

func TestMergeResetMean(t *testing.T) {
	var a, b Histogram
	a.Record(1 * time.Microsecond)
	a.Record(3 * time.Microsecond)
	b.Record(8 * time.Microsecond)
	a.Merge(&b)
	if a.Count() != 3 || a.Mean() != 4*time.Microsecond || a.Min() != time.Microsecond || a.Max() != 8*time.Microsecond {
		t.Errorf("after Merge: count %d mean %v min %v max %v, want 3, 4us, 1us, 8us", a.Count(), a.Mean(), a.Min(), a.Max())
	}
	a.Reset()
	if a.Count() != 0 || a.Quantile(0.5) != 0 || a.Min() != 0 {
		t.Errorf("after Reset: count %d p50 %v", a.Count(), a.Quantile(0.5))
	}
}

func TestSizeBucket(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{{0, 0}, {1, 1}, {3, 4}, {4, 4}, {5, 8}, {4097, 8192}, {1 << 20, 1 << 20}} {
		if got := SizeBucket(tc.n); got != tc.want {
			t.Errorf("SizeBucket(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestLatencySetAndRecorder(t *testing.T) {
	lat := NewLatencySet()
	lat.Record("ring", 3000, 10*time.Microsecond)
	lat.Record("ring", 4096, 20*time.Microsecond)
	lat.Record("oneshot", 100, time.Microsecond)
	s := lat.Summaries()
	if len(s) != 2 || s[0].Backend != "oneshot" || s[1].Bytes != 4096 || s[1].Count != 2 || s[1].Mean != 15*time.Microsecond {
		t.Fatalf("Summaries() = %+v", s)
	}
	bytes := NewRankBytes(2)
	bytes.Add(1, 10, 20)
	r := NewRecorder(2)
	// A session baseline of 10 plain steps of 10 ms (100 tok/s).
	seed := stepstats.NewCounts(3)
	for range 10 {
		seed.Base.Add(0.010)
	}
	seed.Source = stepstats.BaselineSession
	r.StartRun(RunInfo{RunID: "a", Backend: "ring", TP: 2, K: 3, Counts: seed}, lat, bytes)
	steps := []struct{ accepted, drafted int }{{3, 3}, {0, 3}, {1, 3}}
	for _, st := range steps {
		r.RecordStep(stepstats.Step{Draft: time.Millisecond, Verify: 9 * time.Millisecond, AllReduce: 2 * time.Millisecond,
			Tokens: st.accepted + 1, Drafted: st.drafted, Depth: st.drafted, Accepted: st.accepted})
	}
	snap := r.Snapshot()
	wantHist := []int{1, 1, 0, 1}
	for i, w := range wantHist {
		if snap.AcceptHist[i] != w {
			t.Errorf("AcceptHist = %v, want %v", snap.AcceptHist, wantHist)
			break
		}
	}
	if len(snap.Steps) != 2 || snap.Steps[1].Accepted != 1 {
		t.Errorf("Steps (ring of 2) = %+v, want the last two", snap.Steps)
	}
	// 4 accepted over 3 drafts: 1 + 4/3; per position (vLLM: over the
	// drafts that proposed it): 2/3, 1/3, 1/3.
	if d := snap.MeanAcceptLen - (1 + 4.0/3); d > 1e-12 || d < -1e-12 {
		t.Errorf("MeanAcceptLen = %v", snap.MeanAcceptLen)
	}
	if snap.AcceptPerPos[0] != 2.0/3 || snap.AcceptPerPos[2] != 1.0/3 {
		t.Errorf("AcceptPerPos = %v", snap.AcceptPerPos)
	}
	// 100 tok/s baseline * 10 ms per step = 1.0; allreduce 2 of 10 ms.
	if snap.BreakEven < 0.999 || snap.BreakEven > 1.001 || snap.AllReduceShare != 0.2 {
		t.Errorf("BreakEven %v AllReduceShare %v, want 1 and 0.2", snap.BreakEven, snap.AllReduceShare)
	}
	// Three steps of 4, 1 and 2 tokens decide nothing yet.
	if v := snap.Verdict; v.State != stepstats.Measuring || v.BaselineSource != stepstats.BaselineSession || v.BaselineSteps != 10 || v.SpeedupLo > 1 {
		t.Errorf("Verdict = %+v, want measuring (interval holding 1) from the session baseline of 10 steps", v)
	}
	if snap.RankBytesRecv[1] != 20 || len(snap.AllReduce) != 2 {
		t.Errorf("bytes %v allreduce %v", snap.RankBytesRecv, snap.AllReduce)
	}
	r.EndRun()
	r.StartRun(RunInfo{RunID: "b", K: 3}, nil, nil)
	if snap := r.Snapshot(); len(snap.PrevAcceptHist) != 4 || snap.PrevAcceptHist[0] != 1 || snap.Generated != 0 {
		t.Errorf("second run: prev hist %v generated %d", snap.PrevAcceptHist, snap.Generated)
	}
	// No baseline carries over from the previous run: the second run has
	// none until it measures one.
	if snap := r.Snapshot(); snap.BreakEven != 0 || snap.Verdict.BaselineSteps != 0 || snap.Verdict.State != stepstats.Measuring {
		t.Errorf("second run: break-even %v, verdict %+v; want no baseline and measuring", snap.BreakEven, snap.Verdict)
	}
}
