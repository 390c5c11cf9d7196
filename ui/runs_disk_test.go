//go:build ci

package ui

import (
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
	"rigscope/engine/metrics"
)

// writeRunLog writes a run log as the engine does; finished false leaves
// it cut off mid-run.
func writeRunLog(t *testing.T, dir, id, model string, tokS float64, finished bool) {
	t.Helper()
	l, err := metrics.CreateRunLogIn(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultSettings().RunConfig("hi", "")
	if err := l.StartModel(model, cfg); err != nil {
		t.Fatal(err)
	}
	if err := l.Step(engine.StepStats{Step: 1, Tokens: 2, At: time.Millisecond}, nil); err != nil {
		t.Fatal(err)
	}
	if finished {
		if err := l.Finish(engine.Stats{GeneratedTokens: 2, DecodeTokensPerS: tokS, StopReason: "max_tokens"}, nil); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRunsPersistAcrossLaunchesWithNotes(t *testing.T) {
	dir := t.TempDir()
	writeRunLog(t, dir, "20260101-120000-001", "gocoder-14m", 123.4, true)
	time.Sleep(10 * time.Millisecond) // distinct modification times order the logs
	writeRunLog(t, dir, "20260101-120100-002", "stories260K", 0, false)

	p, q, _ := newTestPanel(t, newGateEngine(), Options{RunLogDir: dir})
	q.until(t, "the earlier runs to load", func() bool { return len(p.Runs.Runs()) == 2 })
	runs := p.Runs.Runs()
	if runs[0].Model != "gocoder-14m" || runs[0].Stats.DecodeTokensPerS != 123.4 || !runs[0].FromLog {
		t.Errorf("first earlier run = %+v", runs[0])
	}
	if runs[1].Stats.StopReason != "cut off" || runs[1].Err == "" {
		t.Errorf("a log without run_end: stop %q err %q, want it marked as cut off", runs[1].Stats.StopReason, runs[1].Err)
	}
	col := func(title string) int {
		for i, c := range runsColumns {
			if c.title == title {
				return i
			}
		}
		t.Fatalf("no %s column", title)
		return -1
	}
	if got := p.Runs.Cell(0, col("model")); got != "gocoder-14m" {
		t.Errorf("model column = %q", got)
	}
	if got := p.Runs.Cell(0, col("time")); got == na || got == "" {
		t.Errorf("time column = %q", got)
	}

	// A note on the first run is saved by its run id and shown after a
	// restart.
	p.Runs.Toggle(0)
	p.editNote(p.Runs.Selected())
	form := p.win.Canvas().Overlays().Top()
	if form == nil {
		t.Fatal("no note dialog")
	}
	var entry *widget.Entry
	var save *widget.Button
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Entry:
			entry = x
		case *widget.Button:
			if x.Text == "Save" {
				save = x
			}
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(x).Objects() {
				walk(c)
			}
		}
	}
	walk(form)
	if entry == nil || save == nil {
		t.Fatal("the note dialog has no entry or Save button")
	}
	entry.SetText("before the BIOS update")
	test.Tap(save)
	if got := p.Runs.Cell(0, col("note")); got != "before the BIOS update" {
		t.Errorf("note column after Save = %q", got)
	}

	a2 := p.app
	w2 := test.NewTempWindow(t, nil)
	q2 := &uiQueue{}
	p2 := NewPanel(a2, w2, Options{RunLogDir: dir, Open: p.opts.Open}, q2.post)
	q2.until(t, "the runs to load again", func() bool { return len(p2.Runs.Runs()) == 2 })
	if got := p2.Runs.Cell(0, col("note")); got != "before the BIOS update" {
		t.Errorf("note after a restart = %q", got)
	}
}
