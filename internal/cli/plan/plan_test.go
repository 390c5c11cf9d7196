package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/engine/planner"
)

// tableFile writes an allreduce table file for --allreduce-table.
func tableFile(t *testing.T, data string) string {
	path := filepath.Join(t.TempDir(), "table.json")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--model is required"},
		{[]string{"--model", "synthetic:tiny", "--tp", "0"}, "--tp"},
		{[]string{"--model", "synthetic:tiny", "--tp", "1,x"}, "not an integer"},
		{[]string{"--model", "synthetic:tiny", "--k", "17"}, "--k"},
		{[]string{"--model", "synthetic:tiny", "--allreduce", "teleport"}, "unknown allreduce backend"},
		{[]string{"--model", "synthetic:tiny", "--drafter", "model"}, "needs --draft"},
		{[]string{"--model", "synthetic:tiny", "--drafter", "psychic"}, "give none, ngram"},
		{[]string{"--model", "synthetic:tiny", "--tree", "9"}, "--tree"},
		{[]string{"--model", "synthetic:tiny", "--check", "--rounds", "0"}, "--rounds"},
		{[]string{"--model", "synthetic:tiny", "stray"}, "unexpected argument"},
		{[]string{"--model", "synthetic:tiny", "--device", "nosuchgpu"}, `plan: --device: device "nosuchgpu" is not in this build`},
		{[]string{"--model", "synthetic:tiny", "--allreduce-table", "/nonexistent/t.json"}, "--allreduce-table: allreduce table /nonexistent/t.json: no such file"},
		{[]string{"--model", "synthetic:tiny", "--allreduce-table", tableFile(t, "[]")}, "no usable rows"},
		{[]string{"--model", "synthetic:tiny", "--allreduce-table", tableFile(t, `{"rows": [{"backend": "nccl", "ranks": 2, "bytes": 1024, "time_us": 20}]}`)},
			"the allreduce table is of cuda ranks and the planner is predicting cpu"},
	} {
		var out, errb bytes.Buffer
		err := Run(context.Background(), tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plan %q: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

// TestPlanSynthetic: without measurements every row names what is missing
// and the command offers --calibrate; with it every row is predicted.
func TestPlanSynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("times forwards")
	}
	dir := t.TempDir()
	args := []string{"--model", "synthetic:tiny", "--ctx", "512", "--tp", "1,2", "--allreduce", "ring,compressed",
		"--drafter", "none,ngram", "--k", "2", "--cache-dir", dir, "--runs", dir + "/no-runs", "--reps", "2"}
	var out, errb bytes.Buffer
	if err := Run(context.Background(), args, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "no timed forward") || !strings.Contains(s, "--calibrate") {
		t.Errorf("uncalibrated plan does not say what is missing and how to measure it:\n%s", s)
	}
	out.Reset()
	if err := Run(context.Background(), append(args, "--calibrate", "--json"), &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out.String())
	}
	if len(rep.Predictions) != 2+2*2 {
		t.Fatalf("%d predictions, want 6", len(rep.Predictions))
	}
	for _, p := range rep.Predictions {
		if !p.OK() || p.TokS.V <= 0 {
			t.Errorf("%s: %+v, missing %v", p.Config, p.TokS, p.Missing)
		}
		if p.Config.Speculative() && (p.BreakEven.V <= 0 || p.Acceptance == nil || !p.Acceptance.Default) {
			t.Errorf("%s: break-even %v, acceptance %+v; want a figure from the stated default", p.Config, p.BreakEven.V, p.Acceptance)
		}
	}
	// The table prints every figure once measured.
	out.Reset()
	if err := Run(context.Background(), args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "no timed forward") || !strings.Contains(s, "default (no logged run") {
		t.Errorf("calibrated plan:\n%s", s)
	}
}

func TestSummarize(t *testing.T) {
	cfg := func(b string) planner.Config { return planner.Config{TP: 2, Backend: b, Drafter: "none"} }
	r := CheckReport{Rows: []CheckRow{
		{Config: cfg("ring"), Predicted: planner.Exact(100), Measured: []float64{90, 110, 100}},
		{Config: cfg("tree"), Predicted: planner.Exact(50), Measured: []float64{60, 30, 20}},     // best 60: ring is 1.83x faster, predicted 2x
		{Config: cfg("oneshot"), Predicted: planner.Exact(120), Measured: []float64{50, 50, 50}}, // predicted faster than ring, measured 2.2x slower
		{Config: cfg("twoshot"), Missing: "no allreduce measurement"},
	}}
	r.summarize(0.20)
	if r.Rows[1].Best != 60 || r.Rows[0].Best != 110 || r.Rows[0].Median != 100 {
		t.Errorf("best %v %v (median %v), want 110, 60 (100)", r.Rows[0].Best, r.Rows[1].Best, r.Rows[0].Median)
	}
	// errors: 10/110, 10/60, 70/50 -> median 1/6
	if want := 10.0 / 60; r.MedianError < want-1e-9 || r.MedianError > want+1e-9 {
		t.Errorf("median error %v, want %v", r.MedianError, want)
	}
	// Pairs over 20%: ring>tree (agrees), ring>oneshot (disagrees), tree>oneshot (1.2x: not over).
	if len(r.Pairs) != 2 || r.Agreeing != 1 {
		t.Errorf("pairs %+v, agreeing %d; want 2 pairs, 1 agreeing", r.Pairs, r.Agreeing)
	}
	// One configuration per backend: the per-TP comparison is the same.
	if len(r.ByTP) != 2 || r.ByTPAgreeing != 1 {
		t.Errorf("per-TP pairs %+v, agreeing %d; want 2 pairs, 1 agreeing", r.ByTP, r.ByTPAgreeing)
	}
	var b bytes.Buffer
	r.write(&b, 0.15)
	if s := b.String(); !strings.Contains(s, "median absolute error: 16.7%") || !strings.Contains(s, "NOT met") || !strings.Contains(s, "disagrees: TP 2, plain: ring") ||
		!strings.Contains(s, "of the 2 pairs whose rounds do not overlap (a difference beyond the run-to-run spread), 1") {
		t.Errorf("report:\n%s", s)
	}
}
