//go:build ci

package ui

import (
	"context"
	"sync"
	"testing"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
)

// uiQueue stands in for fyne.Do: background goroutines post to it and the
// test goroutine runs what was posted, so widgets are touched by one
// goroutine only (the race detector stays quiet).
type uiQueue struct {
	mu  sync.Mutex
	fns []func()
}

func (q *uiQueue) post(f func()) {
	q.mu.Lock()
	q.fns = append(q.fns, f)
	q.mu.Unlock()
}

// drain runs everything posted so far (and whatever that posts).
func (q *uiQueue) drain() {
	for {
		q.mu.Lock()
		fns := q.fns
		q.fns = nil
		q.mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, f := range fns {
			f()
		}
	}
}

// until drains the queue until cond holds. The deadline only guards
// against a hang; it is not a timing assertion.
func (q *uiQueue) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		q.drain()
		time.Sleep(time.Millisecond)
	}
}

// gateEngine streams one token, then holds the run until released or
// cancelled, so tests can act while a run is in flight.
type gateEngine struct {
	release chan struct{}
	mu      sync.Mutex
	configs []engine.RunConfig
}

func newGateEngine() *gateEngine { return &gateEngine{release: make(chan struct{}, 16)} }

func (g *gateEngine) Info() ModelInfo {
	return ModelInfo{Name: "gate", Format: "fake", ChatTemplate: "llama3", MaxSeq: 128}
}

func (g *gateEngine) Snapshot() metrics.Snapshot { return metrics.Snapshot{} }

func (g *gateEngine) Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error) {
	g.mu.Lock()
	g.configs = append(g.configs, cfg)
	g.mu.Unlock()
	sink(engine.Event{Kind: engine.EventTokens, Tokens: []engine.Token{{ID: 1, Text: "hi "}, {ID: 2, Text: "there", FromDraft: true}}})
	sink(engine.Event{Kind: engine.EventStep, Step: engine.StepStats{Step: 1, Drafted: 1, Depth: 1, Accepted: 1, Tokens: 2, At: time.Millisecond}})
	st := engine.Stats{GeneratedTokens: 2, StopReason: "max_tokens"}
	select {
	case <-ctx.Done():
		st.StopReason = "cancelled"
	case <-g.release:
	}
	return st, nil
}

func (g *gateEngine) runConfigs() []engine.RunConfig {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]engine.RunConfig(nil), g.configs...)
}

// fixedRecord is a finished run with fixed numbers, for golden files.
func fixedRecord(id int, backend string, tokS float64) *RunRecord {
	s := DefaultSettings()
	s.Backend, s.TP = backend, 2
	return &RunRecord{
		ID: id, Model: "synthetic-default", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Config: s.RunConfig("hello", "chatml"),
		Stats: engine.Stats{
			GeneratedTokens: 64, DecodeTokensPerS: tokS, TimeToFirstTokenMs: 12, StopReason: "max_tokens",
			Drafts: 20, DraftTokens: 80, AcceptedTokens: 44, DraftAcceptRate: 0.55, MeanAcceptLen: 3.2, BytesSent: []int64{8192},
			Verdict: stepstats.Verdict{State: stepstats.Pays, BaselineSource: stepstats.BaselineSession, BaselineSteps: 63,
				Speedup: 1.42, SpeedupLo: 1.31, SpeedupHi: 1.55, BreakEven: 2.2, BreakEvenLo: 2.1, BreakEvenHi: 2.3, TokensPerStep: 3.1},
			AllReduceBySize: []engine.BackendUse{{Bytes: 4096, Backend: "ring", Calls: 40}},
			AllReduceP50Us:  50, AllReduceP99Us: 70, BytesMoved: 8192,
		},
		Steps: []engine.StepStats{
			{Step: 1, Drafted: 4, Depth: 4, Accepted: 2, Tokens: 3, Draft: 100 * time.Microsecond, Verify: 500 * time.Microsecond, AllReduce: 50 * time.Microsecond, At: time.Millisecond},
			{Step: 2, Drafted: 4, Depth: 4, Accepted: 4, Tokens: 5, Draft: 100 * time.Microsecond, Verify: 500 * time.Microsecond, AllReduce: 70 * time.Microsecond, At: 2 * time.Millisecond},
		},
		Text: "hi there",
	}
}
