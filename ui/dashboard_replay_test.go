package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/tp"
)

// A replayed run (made elsewhere, on a GPU machine say) is drawn from its
// own measurements: the latency-vs-size curves are the run's per-size p50s
// even when this machine has a calibration, the over-time charts say the
// log keeps no course over time with the run's figures, and the step
// summary names the run log.
func TestDashboardReplayedRun(t *testing.T) {
	test.NewTempApp(t)
	snap := metrics.Snapshot{Taken: t0, RunID: "20261202-201500-003", Backend: "oneshot", TP: 2, TokensPerS: 1234.5,
		Replayed: "runs/20261202-201500-003.jsonl", ReplayedModel: "gocoder-14m-hf", AllReduceShare: 0.21,
		AllReduce: []metrics.LatencySummary{
			{Backend: "oneshot", Bytes: 2048, Count: 1008, P50: 1234 * time.Nanosecond, P99: 1345 * time.Nanosecond, Mean: 1168 * time.Nanosecond},
			{Backend: "oneshot", Bytes: 16384, Count: 16, P50: 1345 * time.Nanosecond, P99: 1472 * time.Nanosecond},
		},
		RankBytesSent: []int64{1114112, 1114112}, RankBytesRecv: []int64{1114112, 1114112}}
	here := []Curve{{Backend: "ring", Points: []CurvePoint{{Bytes: 1024, Latency: 20 * time.Microsecond}}}} // this machine's calibration
	d := NewDashboard(&fixedSource{snap: snap, curves: here})
	f := d.collect(t0)
	if len(f.curves) != 1 || f.curves[0].Name != "oneshot (in use)" || len(f.curves[0].Points) != 2 || f.curves[0].Points[0].Y != 1234e-9 {
		t.Errorf("replayed run's latency-vs-size lines = %+v, want the run's oneshot p50s", f.curves)
	}
	if !strings.Contains(f.curveNote, "replayed run's own p50") {
		t.Errorf("curve note %q", f.curveNote)
	}
	if want := "replayed run, 2.0 KiB messages: p50 1.2µs, p99 1.3µs (1008 calls)"; !strings.HasPrefix(f.arEmpty, want) {
		t.Errorf("over-time chart says %q, want it to start %q", f.arEmpty, want)
	}
	if !strings.Contains(f.stepSummary, "replayed: run 20261202-201500-003 of gocoder-14m-hf (TP 2, oneshot) from runs/20261202-201500-003.jsonl") {
		t.Errorf("step summary %q does not name the replayed run", f.stepSummary)
	}
	d.views.apply(f)
	if !strings.Contains(d.views.tokS.Empty, "1234.5 tokens/s") || !strings.HasPrefix(d.views.arTime.Empty, "replayed run") {
		t.Errorf("tokens/s chart says %q, allreduce chart %q", d.views.tokS.Empty, d.views.arTime.Empty)
	}

	// A run of this process keeps this machine's calibration and the
	// default texts.
	snap.Replayed = ""
	d = NewDashboard(&fixedSource{snap: snap, curves: here})
	f = d.collect(t0)
	d.views.apply(f)
	if len(f.curves) != 1 || f.curves[0].Name != "ring" || f.arEmpty != "" || d.views.arTime.Empty != arTimeEmpty || d.views.tokS.Empty != "no run yet" {
		t.Errorf("a run of this process: curves %+v, over-time %q / %q, tokens/s %q", f.curves, f.arEmpty, d.views.arTime.Empty, d.views.tokS.Empty)
	}
}

// The runs table names an nccl run's settings in its backend column.
func TestRunsBackendTextNCCL(t *testing.T) {
	for _, tc := range []struct {
		cfg  engine.RunConfig
		want string
	}{
		{engine.RunConfig{TP: 2, AllReduce: "nccl", NCCL: tp.NCCLSettings{Proto: "LL128", Algo: "Tree", MaxChannels: 8}}, "nccl(Tree,LL128,channels <=8)"},
		{engine.RunConfig{TP: 2, AllReduce: "nccl"}, "nccl"},
		{engine.RunConfig{TP: 1, AllReduce: "nccl", NCCL: tp.NCCLSettings{Proto: "LL"}}, na + " (1 rank)"},
	} {
		if got := backendText(&RunRecord{Config: tc.cfg}); got != tc.want {
			t.Errorf("backendText(%s, %+v) = %q, want %q", tc.cfg.AllReduce, tc.cfg.NCCL, got, tc.want)
		}
	}
}
