//go:build ci

package ui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"rigscope/engine"
)

func TestSessionStreamsAllTokens(t *testing.T) {
	q := &uiQueue{}
	s := NewSession(NewFakeEngine(ModelInfo{Name: "fake"}, 0), q.post)
	cfg := DefaultSettings().RunConfig("hello", "")
	cfg.MaxTokens = 500
	var got strings.Builder
	var fromDraft int
	var done *RunRecord
	if _, err := s.Start(cfg, RunHandlers{
		Tokens: func(toks []engine.Token) {
			for _, tk := range toks {
				got.WriteString(tk.Text)
				if tk.FromDraft {
					fromDraft++
				}
			}
		},
		Done: func(rec *RunRecord, err error) {
			if err != nil {
				t.Errorf("run error: %v", err)
			}
			done = rec
		},
	}); err != nil {
		t.Fatalf("Start(%+v): %v", cfg, err)
	}
	q.until(t, "the run to end", func() bool { return done != nil })
	if done.Stats.GeneratedTokens != 500 || done.Stats.StopReason != "max_tokens" {
		t.Errorf("stats = %d tokens, stop %q; want 500, max_tokens", done.Stats.GeneratedTokens, done.Stats.StopReason)
	}
	if got.String() != done.Text {
		t.Errorf("streamed text (%d bytes) differs from the record's (%d bytes)", got.Len(), len(done.Text))
	}
	if fromDraft != done.Stats.AcceptedTokens {
		t.Errorf("%d tokens marked FromDraft, stats say %d accepted", fromDraft, done.Stats.AcceptedTokens)
	}
	if s := done.Stats; s.AllReduceP50Us <= 0 || s.AllReduceP99Us < s.AllReduceP50Us || s.BytesMoved <= 0 {
		t.Errorf("summary p50 %v p99 %v bytes %d: want positive, p99 >= p50", s.AllReduceP50Us, s.AllReduceP99Us, s.BytesMoved)
	}

	if len(done.Steps) == 0 || done.Steps[len(done.Steps)-1].Step != len(done.Steps) {
		t.Errorf("record holds %d steps, last numbered %d; want every step event in order", len(done.Steps), done.Steps[len(done.Steps)-1].Step)
	}
	if done.LogPath != done.Stats.LogPath {
		t.Errorf("record's log %q, the engine wrote %q", done.LogPath, done.Stats.LogPath)
	}
}

func TestSessionStopCancels(t *testing.T) {
	q := &uiQueue{}
	g := newGateEngine()
	s := NewSession(g, q.post)
	var done *RunRecord
	if _, err := s.Start(DefaultSettings().RunConfig("x", ""), RunHandlers{Done: func(r *RunRecord, _ error) { done = r }}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(DefaultSettings().RunConfig("y", ""), RunHandlers{}); !errors.Is(err, ErrRunInFlight) {
		t.Errorf("second Start while running: err = %v, want ErrRunInFlight", err)
	}
	s.Stop()
	q.until(t, "the cancelled run to end", func() bool { return done != nil })
	if done.Stats.StopReason != "cancelled" {
		t.Errorf("stop reason after Stop = %q, want cancelled", done.Stats.StopReason)
	}
	if _, running := s.Running(); running {
		t.Error("Running() = true after the run ended")
	}
}

func TestPercentiles(t *testing.T) {
	for _, tc := range []struct {
		in       []time.Duration
		p50, p99 time.Duration
	}{
		{nil, 0, 0},
		{[]time.Duration{5}, 5, 5},
		{[]time.Duration{4, 1, 3, 2}, 2, 4},
	} {
		if p50, p99 := percentiles(tc.in); p50 != tc.p50 || p99 != tc.p99 {
			t.Errorf("percentiles(%v) = %v, %v; want %v, %v", tc.in, p50, p99, tc.p50, tc.p99)
		}
	}
}
