//go:build ci

package ui

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics"
)

func TestSessionStreamsAllTokensAndLogs(t *testing.T) {
	q := &uiQueue{}
	dir := t.TempDir()
	s := NewSession(NewFakeEngine(ModelInfo{Name: "fake"}, 0), q.post, dir)
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
	if done.AllReduceP50 <= 0 || done.AllReduceP99 < done.AllReduceP50 || done.BytesMoved <= 0 {
		t.Errorf("summary p50 %v p99 %v bytes %d: want positive, p99 >= p50", done.AllReduceP50, done.AllReduceP99, done.BytesMoved)
	}

	evs, err := metrics.ReadRunLog(done.LogPath)
	if err != nil {
		t.Fatalf("metrics.ReadRunLog(%s): %v", done.LogPath, err)
	}
	var logCfg engine.RunConfig
	if evs[0].Type != "run_start" || json.Unmarshal(evs[0].Config, &logCfg) != nil || logCfg.MaxTokens != 500 || evs[0].Model != "fake" {
		t.Errorf("first log line = %+v; want run_start with the model and the full config", evs[0])
	}
	var logStats engine.Stats
	if last := evs[len(evs)-1]; last.Type != "run_end" || json.Unmarshal(last.Stats, &logStats) != nil || logStats.GeneratedTokens != 500 {
		t.Errorf("last log line = %+v; want run_end with the stats", last)
	}
	runs, err := metrics.Runs(evs)
	if err != nil || len(runs) != 1 || len(runs[0].Steps) != len(done.Steps) {
		t.Fatalf("metrics.Runs(log) = %+v, %v; want one run with the record's %d steps", runs, err, len(done.Steps))
	}
	for i, st := range done.Steps {
		if got := runs[0].Steps[i]; got != stepSample(st) {
			t.Errorf("logged step %d = %+v, want %+v", i, got, stepSample(st))
			break
		}
	}
	if len(runs[0].Spans) < len(done.Steps) {
		t.Errorf("log has %d spans for %d steps; want at least a verify span per step", len(runs[0].Spans), len(done.Steps))
	}

	// A crash mid-write leaves half a line: every whole line still reads.
	f, err := os.OpenFile(done.LogPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"step","run_id":"1","st`)
	f.Close()
	torn, err := metrics.ReadRunLog(done.LogPath)
	if err != nil || len(torn) != len(evs) {
		t.Errorf("metrics.ReadRunLog of the log with a torn last line = %d events, %v; want %d", len(torn), err, len(evs))
	}
}

func TestSessionStopCancels(t *testing.T) {
	q := &uiQueue{}
	g := newGateEngine()
	s := NewSession(g, q.post, "")
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
