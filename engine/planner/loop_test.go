package planner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
)

// TestLoopTime: the loop's own time per step (stepstats.Step.Other) of
// earlier runs joins each step of a prediction, filed by where the run's
// target ran and by drafter and k; a drafter never logged takes a plain
// step's, and nothing logged on this kind of device counts nothing (and
// says so).
func TestLoopTime(t *testing.T) {
	record := func(drafter string, k int, gpus []int, other time.Duration, drafted int) metrics.RunRecord {
		cfg, _ := json.Marshal(map[string]any{"drafter": map[string]any{"kind": drafter, "k": k}})
		st, _ := json.Marshal(map[string]any{"rank_gpu": gpus})
		var steps []stepstats.Step
		for range 10 {
			steps = append(steps, stepstats.Step{Other: other, Drafted: drafted, Depth: drafted, Accepted: drafted, Tokens: drafted + 1, Verify: time.Millisecond})
		}
		return metrics.RunRecord{Complete: true, Config: cfg, Stats: st, Steps: steps}
	}
	var b Book
	AddRecord(&b, record("none", 0, []int{0}, 20*time.Microsecond, 0), "")  // a plain GPU run
	AddRecord(&b, record("none", 0, nil, 300*time.Microsecond, 0), "")      // a plain CPU run
	AddRecord(&b, record("ngram", 2, []int{0}, 50*time.Microsecond, 2), "") // ngram k=2 on the GPU
	in := cpuInputs()
	in.Accept = &b
	for i := range in.Compute.Points {
		in.Compute.Points[i].Device = "cuda"
	}
	in.Draft.Points = append(in.Draft.Points, DraftPoint{Drafter: "ngram", Device: "cuda", K: 2, Us: Exact(10)}, DraftPoint{Drafter: "ngram", Device: "cuda", K: 4, Us: Exact(10)})
	fwd1 := 1000 + 200.0 // cpuInputs' TP 1 forward of 1 token
	fwd3 := 1000 + 200.0*3
	for _, tc := range []struct {
		cfg    Config
		loopUs float64
		stepUs float64
		words  string
	}{
		{Config{Device: "cuda", TP: 1, Drafter: "none"}, 20, fwd1 + 20, "loop's own 20.0 us a step from 10 logged step(s)"},
		{Config{Device: "cpu", TP: 1, Drafter: "none"}, 300, fwd1 + 300, "loop's own 300.0 us"},
		{Config{Device: "cuda", TP: 1, Drafter: "ngram", K: 2}, 50, 10 + fwd3 + 50, "loop's own 50.0 us"},
		{Config{Device: "cuda", TP: 1, Drafter: "ngram", K: 4}, 20, 0, "loop's own 20.0 us"}, // k=4 never logged: the plain step's
		{Config{Device: "cpu", TP: 1, Drafter: "ngram", K: 2}, 300, 0, "loop's own 300.0 us"},
	} {
		for i := range in.Compute.Points {
			in.Compute.Points[i].Device = tc.cfg.Device
		}
		for i := range in.Draft.Points {
			in.Draft.Points[i].Device = tc.cfg.Device
		}
		p := Predict(in, tc.cfg)
		if !p.OK() {
			t.Fatalf("%s: missing %v", tc.cfg, p.Missing)
		}
		if !near(p.LoopMs.V*1e3, tc.loopUs, 1e-9) || tc.stepUs > 0 && !near(p.StepMs.V*1e3, tc.stepUs, 1e-9) || !strings.Contains(p.Basis, tc.words) {
			t.Errorf("%s: loop %.1f us, step %.1f us, basis %q; want %.0f us, %.0f us, %q", tc.cfg, p.LoopMs.V*1e3, p.StepMs.V*1e3, p.Basis, tc.loopUs, tc.stepUs, tc.words)
		}
		if tc.cfg.Speculative() && !near(p.BaselineTokS.V, 1e6/(fwd1+map[bool]float64{true: 20, false: 300}[tc.cfg.Device == "cuda"]), 1e-6) {
			t.Errorf("%s: baseline %.1f tok/s, want the plain step with its loop time", tc.cfg, p.BaselineTokS.V)
		}
	}
	var empty Book
	in.Accept = &empty
	if p := Predict(in, Config{Device: "cpu", TP: 1, Drafter: "none"}); !strings.Contains(p.Basis, "not counted") || p.LoopMs.V != 0 {
		t.Errorf("no logged run: loop %v, basis %q", p.LoopMs, p.Basis)
	}
}
