//go:build ci

package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
	"rigscope/internal/fixtures"
)

// realEngine is the engine as the main package adapts it (gui_engine.go):
// the panel reaches Tokenizer, Config and CtxLen through the embedding.
type realEngine struct{ *engine.Engine }

func (r realEngine) Info() ModelInfo {
	i := r.Engine.Info()
	return ModelInfo{Name: i.ServedName(), Format: i.Format, Path: i.Path, Params: i.Params,
		ChatTemplate: i.ChatTemplate, OwnTemplate: i.OwnTemplate, MaxSeq: i.Config.MaxSeq}
}

func openReal(t *testing.T, path string) Engine {
	t.Helper()
	e, err := engine.Open(context.Background(), path, engine.Options{CtxLen: 256, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return realEngine{e}
}

func TestDraftWithAnotherVocabularyIsRefusedAtPickTime(t *testing.T) {
	target := fixtures.Path(t, "gocoder-14m.Q8_0.gguf")
	other := fixtures.Path(t, "stories260K/stories260K.bin")
	good := fixtures.Path(t, "gocoder-draft-1m.F16.gguf")
	head := fixtures.Path(t, "gocoder-14m-eagle3")
	p, _, _ := newTestPanel(t, openReal(t, target), Options{})
	before := p.app.Preferences().String(prefSettings)

	p.ChooseDraft(other)
	s := p.Controls.Settings()
	if s.DraftPath != "" || s.Drafter == DrafterModel {
		t.Errorf("a draft with another vocabulary was chosen: %+v", s)
	}
	if why := p.Controls.DraftProblem(); !strings.Contains(why, "vocabulary") || !strings.Contains(why, "stories260K") {
		t.Errorf("the reason beside the drafter says %q, want the vocabulary mismatch naming the file", why)
	}
	if after := p.app.Preferences().String(prefSettings); after != before && strings.Contains(after, "stories260K") {
		t.Errorf("the refused draft was saved: %s", after)
	}

	p.ChooseDraft(good)
	if s := p.Controls.Settings(); s.DraftPath != good || s.Drafter != DrafterModel || p.Controls.DraftProblem() != "" {
		t.Errorf("a matching draft model: settings %+v, problem %q", s, p.Controls.DraftProblem())
	}
	if !strings.Contains(p.app.Preferences().String(prefSettings), "gocoder-draft-1m") {
		t.Error("an accepted draft was not saved")
	}

	p.ChooseDraft(head)
	if s := p.Controls.Settings(); s.DraftPath != head || s.Drafter != DrafterEagle3 {
		t.Errorf("the matching EAGLE-3 head: settings %+v, problem %q", s, p.Controls.DraftProblem())
	}

	test.Tap(p.Controls.clearDraft)
	if s := p.Controls.Settings(); s.DraftPath != "" || s.Drafter != DrafterNone {
		t.Errorf("after Clear: %+v, want no draft and no drafter", s)
	}
	if !p.Controls.clearDraft.Disabled() {
		t.Error("Clear is still enabled with nothing chosen")
	}
}

func TestMissingDraftFlagIsNotShownAsChosen(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.gguf")
	p, _, _ := newTestPanel(t, newGateEngine(), Options{DraftPath: missing})
	if s := p.Controls.Settings(); s.DraftPath != "" || s.Drafter == DrafterModel {
		t.Errorf("a missing --draft was chosen: %+v", s)
	}
	if why := p.Controls.DraftProblem(); !strings.Contains(why, "nope.gguf") {
		t.Errorf("reason beside the drafter = %q, want it to name the missing file", why)
	}
	if got := p.Controls.draftPath.Text; got != "draft model: none chosen" {
		t.Errorf("draft label = %q", got)
	}
}

// topDialogText returns the texts of the labels in the window's top
// overlay (a dialog), or "" when none is shown.
func topDialogText(w fyne.Window) string {
	top := w.Canvas().Overlays().Top()
	if top == nil {
		return ""
	}
	var out []string
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			out = append(out, x.Text)
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
	walk(top)
	return strings.Join(out, "\n")
}

func TestBadModelUnderAutorunShowsADialog(t *testing.T) {
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	w.Resize(fyne.NewSize(900, 600))
	q := &uiQueue{}
	p := NewPanel(a, w, Options{Autorun: "x", Open: func(context.Context, string, func(engine.Progress)) (Engine, error) {
		return nil, errors.New("gocoder.gguf: tensor blk.0.attn_q.weight is missing")
	}}, q.post)
	w.SetContent(p.Content)
	p.LoadModel("synthetic:tiny")
	q.until(t, "the failed open", func() bool {
		select {
		case <-p.finished:
			return true
		default:
			return false
		}
	})
	got := topDialogText(w)
	if !strings.Contains(got, "gocoder.gguf: tensor") {
		t.Errorf("dialog after a failed open under --autorun says %q, want the reason, file name as written", got)
	}
}

func TestErrorDialogKeepsFileNamesAsWritten(t *testing.T) {
	test.NewTempApp(t)
	w := test.NewTempWindow(t, widget.NewLabel(""))
	w.Resize(fyne.NewSize(800, 600))
	showError(errors.New("stories260K.bin: bad magic"), w)
	if got := topDialogText(w); !strings.Contains(got, "stories260K.bin: bad magic") {
		t.Errorf("error dialog says %q", got)
	}
}

func TestExportAsksBeforeOverwritingAndMarksCancelledRuns(t *testing.T) {
	p, _, _ := newTestPanel(t, newGateEngine(), Options{})
	dir := t.TempDir()
	first := fixedRecord(1, "ring", 100)
	first.Stats.StopReason = "cancelled"
	p.exportTo(dir, []*RunRecord{first}, false)
	csv := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "runs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	c1 := csv()
	if !strings.Contains(c1, "false") || strings.Count(c1, "\n") != 2 {
		t.Errorf("runs.csv of a cancelled run:\n%s\nwant one row with complete=false", c1)
	}
	p.win.Canvas().Overlays().Top().Hide() // the "Exported" note
	p.exportTo(dir, []*RunRecord{first, fixedRecord(2, "tree", 90)}, false)
	if got := topDialogText(p.win); !strings.Contains(got, "Replace") || !strings.Contains(got, "runs.csv") {
		t.Errorf("a second export into the same folder shows %q, want a question naming the files", got)
	}
	if csv() != c1 {
		t.Error("the second export overwrote the first before the user answered")
	}
	p.exportTo(dir, []*RunRecord{first, fixedRecord(2, "tree", 90)}, true) // the user said yes
	if strings.Count(csv(), "\n") != 3 {
		t.Errorf("after confirming, runs.csv:\n%s\nwant both runs", csv())
	}
}

func TestFormatParams(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{1498500000, "1.5B"}, {14200000, "14.2M"}, {7000000000, "7B"}, {260000, "260K"}, {999, "999"}, {123400000, "123M"}} {
		if got := FormatParams(tc.n); got != tc.want {
			t.Errorf("FormatParams(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestFirstScreenSaysWhatTheSyntheticModelIs(t *testing.T) {
	p, _, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "synthetic-default", Format: "synthetic"}, 0), Options{})
	p.app.Preferences().SetStringList(prefRecentModels, []string{"/models/a.gguf"})
	p.Chat.SetWelcome(p.welcomeContent())
	w := p.Chat.Welcome()
	if w == nil {
		t.Fatal("no first screen on an empty chat")
	}
	text := strings.Join(labelsIn(w), "\n")
	if !strings.Contains(text, "random weights") || !strings.Contains(text, "gibberish") {
		t.Errorf("first screen says %q, want it to explain the synthetic model", text)
	}
	var buttons []string
	for _, b := range buttonsIn(w) {
		buttons = append(buttons, b.Text)
	}
	joined := strings.Join(buttons, "|")
	if !strings.Contains(joined, "Open a model file") || !strings.Contains(joined, "a.gguf") {
		t.Errorf("first screen buttons %q, want Open and the recent model", joined)
	}
}

func labelsIn(o fyne.CanvasObject) []string {
	var out []string
	walkObjects(o, func(o fyne.CanvasObject) {
		if l, ok := o.(*widget.Label); ok {
			out = append(out, l.Text)
		}
	})
	return out
}

func buttonsIn(o fyne.CanvasObject) []*widget.Button {
	var out []*widget.Button
	walkObjects(o, func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok {
			out = append(out, b)
		}
	})
	return out
}

func walkObjects(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	f(o)
	if c, ok := o.(*fyne.Container); ok {
		for _, x := range c.Objects {
			walkObjects(x, f)
		}
	}
}

func TestExportDialogSaysExport(t *testing.T) {
	p, _, _ := newTestPanel(t, newGateEngine(), Options{})
	p.export([]*RunRecord{fixedRecord(1, "ring", 1), fixedRecord(2, "ring", 2)})
	got := topDialogText(p.win)
	if !strings.Contains(got, "Export 2 runs to a folder") || strings.Contains(got, "Open Folder") {
		t.Errorf("the export dialog reads %q, want it titled for the export", got)
	}
}
