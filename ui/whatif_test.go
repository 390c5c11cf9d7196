//go:build ci

package ui

import (
	"context"
	"strings"
	"sync"
	"testing"

	"rigscope/engine/metrics"
	"rigscope/engine/planner"
	"rigscope/engine/stepstats"
)

// fakePlanner predicts 100/TP tok/s for every configuration once measured;
// before, TP > 1 lacks its allreduce table.
type fakePlanner struct {
	mu       sync.Mutex
	measured bool
	runs     []metrics.RunRecord
}

func (f *fakePlanner) predict(g planner.Grid) []planner.Prediction {
	var out []planner.Prediction
	for _, c := range g.Configs() {
		p := planner.Prediction{Config: c}
		if c.TP > 1 && !f.measured {
			p.Missing = []planner.Missing{{Kind: "allreduce", Device: "cpu", TP: c.TP, Backend: c.Backend, Bytes: 2048}}
		} else {
			p.TokS = planner.Range{V: 100 / float64(c.TP), Lo: 90 / float64(c.TP), Hi: 110 / float64(c.TP)}
			p.Verdict = stepstats.NoSpec
			if c.Speculative() {
				p.Verdict, p.BreakEven = stepstats.Pays, planner.Exact(1.5)
			}
		}
		out = append(out, p)
	}
	return out
}

func (f *fakePlanner) Plan(_ context.Context, g planner.Grid) ([]planner.Prediction, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.predict(g), nil
}

func (f *fakePlanner) Measure(_ context.Context, g planner.Grid, opt planner.Calibration) ([]planner.Prediction, error) {
	if opt.Progress != nil {
		opt.Progress("allreduce: ring on 2 ranks")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.measured = true
	return f.predict(g), nil
}

func (f *fakePlanner) AddRun(r metrics.RunRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, r)
}

func (f *fakePlanner) Notes() (string, string) { return "test tables", "no runs" }

// row finds the row of a configuration key's cells.
func findRow(rows [][]string, tp, backend, drafter, k string) []string {
	for _, r := range rows {
		if r[1] == tp && r[2] == backend && r[3] == drafter && r[4] == k {
			return r
		}
	}
	return nil
}

func TestWhatIfTab(t *testing.T) {
	fp := &fakePlanner{}
	p, q, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "fake"}, 0), Options{Planner: func(Engine) WhatIfPlanner { return fp }})
	if p.WhatIf == nil || p.Tabs.Items[2].Text != "What if" || p.Tabs.Items[1].Text != "Dashboard" {
		t.Fatalf("want a What if tab next to the dashboard; tabs: %v", tabNames(p))
	}
	rows := p.WhatIf.Rows()
	// TP 1 and 2 are available, nccl and TP 8 are not: 1 + 2 backends, each
	// none + ngram at k 2 and 4.
	if len(rows) != 3*3 {
		t.Fatalf("%d rows, want 9: %v", len(rows), rows)
	}
	// The defaults (TP 1, ngram, k 4) are marked.
	if r := findRow(rows, "1", "—", DrafterNgram, "4"); r == nil || !strings.Contains(r[0], "current") || r[5] != "100.0" || r[7] != "pays" {
		t.Errorf("TP 1 ngram k=4 row = %q, want it marked current, 100 tok/s, pays", r)
	}
	if r := findRow(rows, "2", "tree", DrafterNone, "—"); r == nil || r[5] != "not measured" || !strings.Contains(r[6], "allreduce") {
		t.Errorf("TP 2 tree row = %q, want 'not measured' naming the allreduce table", r)
	}
	if p.WhatIf.measure.Disabled() {
		t.Fatal("Measure is disabled while measurements are missing")
	}
	p.WhatIf.Measure()
	q.until(t, "the measurement to finish", func() bool { return !p.WhatIf.busy })
	if r := findRow(p.WhatIf.Rows(), "2", "tree", DrafterNone, "—"); r == nil || r[5] != "50.0" || r[6] != "45.0–55.0" {
		t.Errorf("after measuring, TP 2 tree row = %q, want 50.0 (45.0–55.0)", r)
	}
	if !p.WhatIf.measure.Disabled() {
		t.Error("Measure still enabled with nothing missing")
	}
	// The chart: per TP size, each backend at the controls' drafter and k
	// (ngram k=4), the current configuration as the reference line.
	if c := p.WhatIf.chart; strings.Join(c.Categories, ",") != "1,2" || c.Ref != 100 {
		t.Errorf("chart categories %v, reference %v; want TP 1,2 and the current 100 tok/s", c.Categories, c.Ref)
	}
	// Apply sets the run controls; the mark follows.
	p.WhatIf.OnApply(planner.Config{TP: 2, Backend: "tree", Drafter: DrafterNgram, K: 2})
	if s := p.Controls.Settings(); s.TP != 2 || s.Backend != "tree" || s.Drafter != DrafterNgram || s.K != 2 {
		t.Errorf("after Apply the controls say %+v, want TP 2 tree ngram k=2", s)
	}
	if r := findRow(p.WhatIf.Rows(), "2", "tree", DrafterNgram, "2"); r == nil || !strings.Contains(r[0], "current") {
		t.Errorf("the applied row %q is not marked current", r)
	}
	// A run puts its measured rate beside the prediction and its steps in
	// the planner's acceptance model.
	p.Send("hello")
	q.until(t, "the run to end", func() bool { return len(p.Runs.Runs()) == 1 })
	r := findRow(p.WhatIf.Rows(), "2", "tree", DrafterNgram, "2")
	if r == nil || r[9] == "—" {
		t.Errorf("after a run of TP 2 tree ngram k=2, its row = %q, want the measured tok/s", r)
	}
	fp.mu.Lock()
	n := len(fp.runs)
	fp.mu.Unlock()
	if n != 1 {
		t.Errorf("the planner heard of %d runs, want 1", n)
	}
}

func tabNames(p *Panel) []string {
	var out []string
	for _, it := range p.Tabs.Items {
		out = append(out, it.Text)
	}
	return out
}

func TestWhatIfGrid(t *testing.T) {
	s := DefaultSettings()
	s.Drafter, s.DraftPath, s.K = DrafterModel, "/m/draft.gguf", 6
	g := WhatIfGrid(s, testBackends, testTPs)
	if strings.Join(g.Backends, ",") != "ring,tree" || len(g.TP) != 2 || strings.Join(g.Drafters, ",") != "none,ngram,model" || len(g.K) != 3 || g.DraftPath != "/m/draft.gguf" {
		t.Errorf("WhatIfGrid = %+v", g)
	}
}
