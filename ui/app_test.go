//go:build ci

package ui

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"rigscope/engine"
)

// newTestPanel builds a panel whose opener returns eng and counts opens.
func newTestPanel(t *testing.T, eng Engine, opts Options) (*Panel, *uiQueue, *atomic.Int32) {
	t.Helper()
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	q := &uiQueue{}
	opens := &atomic.Int32{}
	if opts.Open == nil {
		opts.Open = func(ctx context.Context, path string, progress func(engine.Progress)) (Engine, error) {
			opens.Add(1)
			progress(engine.Progress{What: "loading weights", Done: 1, Total: 1})
			return eng, nil
		}
	}
	opts.Backends = func() []Choice { return testBackends }
	opts.TPSizes = func() []Choice { return testTPs }
	p := NewPanel(a, w, opts, q.post)
	w.SetContent(p.Content)
	w.Resize(fyne.NewSize(1200, 760))
	p.LoadModel("")
	q.until(t, "the model to load", func() bool { return p.session != nil })
	return p, q, opens
}

func TestPanelControlChangeReachesNextRunOnly(t *testing.T) {
	g := newGateEngine()
	p, q, opens := newTestPanel(t, g, Options{})

	p.Send("first")
	q.until(t, "the first run to start", func() bool { return len(g.runConfigs()) == 1 })
	// Change backend, TP and drafter while the run is in flight.
	p.Controls.backend.radios["tree"].SetSelected("tree")
	p.Controls.tp.radios["2"].SetSelected("2")
	p.Controls.drafter.radios[DrafterNone].SetSelected(DrafterNone)
	inFlight, running := p.session.Running()
	if !running || inFlight.AllReduce != "ring" || inFlight.TP != 1 || inFlight.Drafter.Kind != DrafterNgram {
		t.Errorf("the run in flight now reports %+v (running %v); want ring, TP 1, ngram as started", inFlight, running)
	}
	if !strings.Contains(p.Controls.inFlight.Text, "next run") {
		t.Errorf("the controls say %q during the run, want a note that changes apply to the next run", p.Controls.inFlight.Text)
	}
	g.release <- struct{}{}
	q.until(t, "the first run to end", func() bool { return len(p.Runs.Runs()) == 1 })

	p.Send("second")
	q.until(t, "the second run to start", func() bool { return len(g.runConfigs()) == 2 })
	g.release <- struct{}{}
	q.until(t, "the second run to end", func() bool { return len(p.Runs.Runs()) == 2 })

	cfgs := g.runConfigs()
	if c := cfgs[0]; c.AllReduce != "ring" || c.TP != 1 || c.Drafter.Kind != DrafterNgram {
		t.Errorf("first run config = %+v, want the settings at its start", c)
	}
	if c := cfgs[1]; c.AllReduce != "tree" || c.TP != 2 || c.Drafter.Kind != DrafterNone {
		t.Errorf("second run config = %+v, want tree, TP 2, no drafter", c)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("the model was opened %d times; changing backend or drafter must not reload it", n)
	}
	// The model declares llama3, so chat mode formats the prompt with it,
	// and the second prompt carries the first exchange.
	if c := cfgs[1]; c.Template != "llama3" || !strings.Contains(c.Prompt, "first") || !strings.HasSuffix(c.Prompt, "<|start_header_id|>assistant<|end_header_id|>\n\n") {
		t.Errorf("second prompt = %q (template %q), want a Llama 3 prompt with the history", c.Prompt, c.Template)
	}
	if got := p.Chat.template.Text; !strings.Contains(got, "Llama 3") {
		t.Errorf("template label = %q, want it to name Llama 3", got)
	}
	if got := p.Chat.AnswerText(0); got != "hi there" {
		t.Errorf("first answer = %q, want the streamed tokens", got)
	}
}

func TestPanelRawModeAndStop(t *testing.T) {
	g := newGateEngine()
	p, q, _ := newTestPanel(t, g, Options{})
	p.Controls.mode.SetSelected("Raw completion")
	if got := p.Chat.template.Text; !strings.HasPrefix(got, "Raw completion") {
		t.Errorf("template label in raw mode = %q", got)
	}
	p.Send("once upon")
	q.until(t, "the run to start", func() bool { return len(g.runConfigs()) == 1 })
	if c := g.runConfigs()[0]; c.Prompt != "once upon" || c.Template != "" {
		t.Errorf("raw run config prompt %q template %q, want the bare prompt", c.Prompt, c.Template)
	}
	if p.Chat.stop.Disabled() || !p.Chat.send.Disabled() {
		t.Error("during a run Stop should be enabled and Send disabled")
	}
	test.Tap(p.Chat.stop)
	q.until(t, "the stopped run to end", func() bool { return len(p.Runs.Runs()) == 1 })
	if r := p.Runs.Runs()[0]; r.Stats.StopReason != "cancelled" {
		t.Errorf("stop reason after Stop = %q, want cancelled", r.Stats.StopReason)
	}
	if !p.Chat.stop.Disabled() || p.Chat.send.Disabled() {
		t.Error("after the run Stop should be disabled and Send enabled")
	}
}

func TestPanelAutorun(t *testing.T) {
	p, q, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "fake"}, 0), Options{Autorun: "hello", MaxTokens: 50})
	q.until(t, "the autorun to end", func() bool {
		select {
		case <-p.finished:
			return true
		default:
			return false
		}
	})
	if p.runErr != nil {
		t.Errorf("autorun error: %v", p.runErr)
	}
	if r := p.Runs.Runs(); len(r) != 1 || r[0].Stats.GeneratedTokens != 50 {
		t.Errorf("autorun runs = %d, want one of 50 tokens", len(r))
	}
}

func TestPanelOpenFailureFailsAutorun(t *testing.T) {
	boom := errors.New("bad weights")
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	q := &uiQueue{}
	p := NewPanel(a, w, Options{Autorun: "x", Open: func(context.Context, string, func(engine.Progress)) (Engine, error) { return nil, boom }}, q.post)
	p.LoadModel("synthetic:tiny")
	q.until(t, "the failed open", func() bool {
		select {
		case <-p.finished:
			return true
		default:
			return false
		}
	})
	if !errors.Is(p.runErr, boom) {
		t.Errorf("autorun error after a failed open = %v, want it to wrap %v", p.runErr, boom)
	}
}

func TestLoadingIsCancellable(t *testing.T) {
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	q := &uiQueue{}
	started := make(chan struct{})
	var opened atomic.Bool
	p := NewPanel(a, w, Options{Open: func(ctx context.Context, _ string, progress func(engine.Progress)) (Engine, error) {
		progress(engine.Progress{What: "reading tensors", Done: 3, Total: 10})
		close(started)
		<-ctx.Done()
		opened.Store(true)
		return nil, ctx.Err()
	}}, q.post)
	p.LoadModel("")
	<-started
	q.drain()
	if got := p.loading.Text(); got != "reading tensors: 3 of 10" {
		t.Errorf("progress dialog says %q, want what it is doing and how far", got)
	}
	loading := p.loading
	loading.dlg.Show()
	test.Tap(findButton(t, loading, "Cancel"))
	q.until(t, "the cancelled load to end", func() bool { return opened.Load() && p.loading == nil })
	if p.session != nil {
		t.Error("a cancelled load installed a session")
	}
}

// TestTenThousandTokens streams a 10,000-token fake generation through the
// panel and logs the UI update durations (measured, never asserted).
func TestTenThousandTokens(t *testing.T) {
	p, q, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "fake"}, 200*time.Microsecond), Options{MaxTokens: 10000})
	p.Send("go")
	q.until(t, "the 10k run to end", func() bool { return len(p.Runs.Runs()) == 1 })
	if got := p.Runs.Runs()[0].Stats.GeneratedTokens; got != 10000 {
		t.Errorf("generated %d tokens, want 10000", got)
	}
	if got := len(p.Chat.AnswerText(0)); got != len(p.Runs.Runs()[0].Text) {
		t.Errorf("chat shows %d bytes, the run produced %d", got, len(p.Runs.Runs()[0].Text))
	}
	t.Log(p.session.RefreshReport())
}

func TestPanelRefusesABadModelPathBeforeOpening(t *testing.T) {
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	q := &uiQueue{}
	var opened atomic.Bool
	p := NewPanel(a, w, Options{Autorun: "x", Open: func(context.Context, string, func(engine.Progress)) (Engine, error) {
		opened.Store(true)
		return nil, errors.New("unreachable")
	}}, q.post)
	p.LoadModel(t.TempDir() + "/missing.gguf")
	q.drain()
	if opened.Load() {
		t.Error("the opener ran for a path that does not exist")
	}
	if p.runErr == nil || !strings.Contains(p.runErr.Error(), "missing.gguf") {
		t.Errorf("autorun error = %v, want one naming the missing file", p.runErr)
	}
}

func TestPanelPersistsPromptHistory(t *testing.T) {
	g := newGateEngine()
	p, q, _ := newTestPanel(t, g, Options{})
	test.Type(p.Chat.entry, "remember me")
	p.Chat.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	q.until(t, "the run to start", func() bool { return len(g.runConfigs()) == 1 })
	if got := p.app.Preferences().StringList(prefHistory); len(got) != 1 || got[0] != "remember me" {
		t.Errorf("saved history = %q, want [remember me]", got)
	}
	p.session.Stop()
	q.until(t, "the run to end", func() bool { return len(p.Runs.Runs()) == 1 })
}
