package ui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/tp"
	"rigscope/ui/widgets"
)

func TestRunTimeAxisLabelsAreDistinctAndNeverNegative(t *testing.T) {
	for _, xs := range [][]float64{{0}, {0.4}, {0, 0.5}, {0, 0.5, 1, 1.2}, {0, 1}, {0, 2.5}, {0, 30, 95}} {
		c := widgets.NewLineChart("t", widgets.Axis{Format: fmtRunSeconds, Zero: true}, widgets.Axis{Format: fmtTokS, Zero: true})
		var pts []widgets.Point
		for _, x := range xs {
			pts = append(pts, widgets.Point{X: x, Y: 0})
		}
		c.Set([]widgets.Line{{Name: "tokens/s", Points: pts}}, nil)
		xl, yl := c.TickLabels()
		seen := map[string]bool{}
		for _, l := range xl {
			if seen[l] || strings.HasPrefix(l, "-") {
				t.Errorf("points at %v: x labels %q repeat or go below zero", xs, xl)
				break
			}
			seen[l] = true
		}
		if len(xl) < 2 {
			t.Errorf("points at %v: x labels %q, want at least two", xs, xl)
		}
		if strings.HasPrefix(yl[0], "-") {
			t.Errorf("points at %v: all-zero y axis labelled %q", xs, yl)
		}
	}
}

func TestLatencyVsSizeHasSeveralTicksOnANarrowRange(t *testing.T) {
	c := widgets.NewLineChart("size", widgets.Axis{Format: fmtBytes, Log: true, LogBase: 4}, widgets.Axis{Format: fmtSeconds, Log: true})
	c.Set([]widgets.Line{{Name: "ring", Points: []widgets.Point{{X: 4096, Y: 1e-5}, {X: 16384, Y: 2e-5}}}}, nil)
	xl, _ := c.TickLabels()
	if len(xl) < 3 {
		t.Errorf("4 KiB..16 KiB has x ticks %q, want at least three", xl)
	}
}

func TestLegendStaysInsideTheChart(t *testing.T) {
	test.NewTempApp(t)
	c := widgets.NewLineChart("Latency vs message size", widgets.Axis{Format: fmtBytes, Log: true}, widgets.Axis{Format: fmtSeconds, Log: true})
	var lines []widgets.Line
	for i, n := range []string{"oneshot", "ring (in use)", "tree", "twoshot"} {
		lines = append(lines, widgets.Line{Name: n, Color: widgets.SeriesColor(i), Points: []widgets.Point{{X: 1024, Y: 1e-5}, {X: 1 << 20, Y: 1e-3}}})
	}
	c.Set(lines, nil)
	w := test.NewTempWindow(t, c)
	w.Resize(fyne.NewSize(300, 220))
	width := c.Size().Width
	for _, o := range test.WidgetRenderer(c).Objects() {
		if tx, ok := o.(*canvas.Text); ok && tx.Text != "" {
			if x := tx.Position().X; x < -0.5 || x+tx.Size().Width > width+0.5 {
				t.Errorf("text %q spans %.0f..%.0f, outside the chart's 0..%.0f", tx.Text, x, x+tx.Size().Width, width)
			}
		}
	}
}

func TestDashboardEndsOnTheStatsRowFigure(t *testing.T) {
	test.NewTempApp(t)
	src := &fixedSource{snap: metrics.Snapshot{Taken: t0, RunID: "r1", Running: true, TokensPerS: 750, Generated: 3}}
	d := NewDashboard(src)
	d.Refresh()
	src.snap.Running, src.snap.Taken = false, t0.Add(100*time.Millisecond)
	d.Refresh()
	rec := &RunRecord{Stats: engine.Stats{RunID: "r1", DecodeTokensPerS: 1952.5, GeneratedTokens: 40, StopReason: "max_tokens"},
		Steps: []engine.StepStats{{Step: 1, Tokens: 40, At: 90 * time.Millisecond}}}
	d.RunFinished(rec)
	f := d.collect(t0.Add(200 * time.Millisecond))
	last := f.tokLine[len(f.tokLine)-1]
	if last.Y != 1952.5 {
		t.Errorf("the tokens/s line ends at %v, want the stats row's 1952.5 (points %v)", last.Y, f.tokLine)
	}
	if !strings.Contains(f.stepSummary, "1952.5 tokens/s") || strings.Contains(f.stepSummary, "750") {
		t.Errorf("footer = %q, want the finished run's 1952.5 and not the live 750", f.stepSummary)
	}
	// The next run's footer is its own, not the finished one's.
	src.snap = metrics.Snapshot{Taken: t0.Add(time.Second), RunID: "r2", Running: true, TokensPerS: 266.9}
	f = d.collect(t0.Add(time.Second))
	if !strings.Contains(f.stepSummary, "266.9") {
		t.Errorf("footer during the next run = %q, want its 266.9", f.stepSummary)
	}
}

func TestCalibrationCacheGivesEveryBackendsCurve(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "allreduce.json")
	tab := &tp.AutoTable{Ranks: 2, Rules: []tp.AutoRule{{MaxBytes: 1 << 20, Backend: "oneshot"}}, Points: []tp.CalibPoint{
		{Bytes: 1024, Backend: "ring", TimeUs: 20}, {Bytes: 1024, Backend: "oneshot", TimeUs: 8},
		{Bytes: 16384, Backend: "ring", TimeUs: 30}, {Bytes: 16384, Backend: "oneshot", TimeUs: 25},
	}}
	b, err := json.Marshal(calibrationFile{Machine: tp.MachineKey(), Build: tp.BuildKey(), Tables: map[int]*tp.AutoTable{2: tab}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &calibrationReader{path: path}
	curves := r.curves(2)
	if len(curves) != 2 || curves[0].Backend != "oneshot" || curves[1].Backend != "ring" || len(curves[1].Points) != 2 {
		t.Fatalf("curves = %+v, want oneshot and ring with two sizes each", curves)
	}
	if curves[1].Points[1].Latency != 30*time.Microsecond {
		t.Errorf("ring at 16 KiB = %v, want 30µs", curves[1].Points[1].Latency)
	}
	other := &calibrationReader{path: path}
	b2, _ := json.Marshal(calibrationFile{Machine: "another machine", Build: tp.BuildKey(), Tables: map[int]*tp.AutoTable{2: tab}})
	if err := os.WriteFile(path, b2, 0o644); err != nil {
		t.Fatal(err)
	}
	if c := other.curves(2); c != nil {
		t.Errorf("another machine's calibration gave curves %+v", c)
	}

	// The chart draws every backend and marks the one in use.
	src := &fixedSource{snap: metrics.Snapshot{Taken: t0, RunID: "r", Backend: "ring", TP: 2}, curves: curves}
	test.NewTempApp(t)
	d := NewDashboard(src)
	f := d.collect(t0)
	if len(f.curves) != 2 || !f.curves[1].Bold || !strings.Contains(f.curves[1].Name, "in use") || f.curves[0].Bold {
		t.Errorf("latency vs size lines = %+v, want both backends with ring marked", f.curves)
	}
	if strings.Contains(f.curveNote, "no calibration") {
		t.Errorf("note %q with a calibration loaded", f.curveNote)
	}
}

// TestDashboardFrameAfterTheRunEndsIsReplaced: a frame collected before
// RunFinished and applied after it must not be the last one shown.
func TestDashboardFrameAfterTheRunEndsIsReplaced(t *testing.T) {
	test.NewTempApp(t)
	src := &fixedSource{snap: metrics.Snapshot{Taken: t0, RunID: "r1", Running: false, TokensPerS: 750}}
	d := NewDashboard(src)
	stale := d.collect(t0)
	d.RunFinished(&RunRecord{Stats: engine.Stats{RunID: "r1", DecodeTokensPerS: 1952.5, GeneratedTokens: 40}})
	d.views.apply(stale) // the refresher's frame, posted before, runs after
	fresh := d.collect(t0.Add(time.Second))
	if fresh.key == stale.key {
		t.Fatal("the frame after RunFinished has the stale frame's key: the refresher would skip it and leave the stale footer")
	}
	d.views.apply(fresh)
	if got := d.views.stepSummary.Text; !strings.Contains(got, "1952.5") {
		t.Errorf("footer = %q", got)
	}
}
