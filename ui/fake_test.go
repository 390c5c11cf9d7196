package ui

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
)

// FakeEngine streams made-up tokens with the shape of a real speculative run:
// steps that draft k tokens and accept a random prefix, tokens marked
// FromDraft, allreduce timings, and cancellation through ctx. The panel is
// built and tested against it until the real engine is wired in.
type FakeEngine struct {
	info      ModelInfo
	stepDelay time.Duration // wall time per step; 0 runs flat out

	rec  *metrics.Recorder // the engine's own recorder: the fake computes no figure
	mu   sync.Mutex
	runs int
}

// NewFakeEngine returns a fake target named after path that sleeps stepDelay
// per speculative step.
func NewFakeEngine(info ModelInfo, stepDelay time.Duration) *FakeEngine {
	return &FakeEngine{info: info, stepDelay: stepDelay, rec: metrics.NewRecorder(256)}
}

// FakeOpener opens every path as a FakeEngine after a short, cancellable
// "load" that reports progress.
func FakeOpener(stepDelay time.Duration) Opener {
	return func(ctx context.Context, path string, progress func(engine.Progress)) (Engine, error) {
		const parts = 5
		for i := int64(1); i <= parts; i++ {
			if stepDelay > 0 {
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("open %s: %w", path, ctx.Err())
				case <-time.After(40 * time.Millisecond):
				}
			}
			progress(engine.Progress{What: "loading weights", Done: i, Total: parts})
		}
		name, format := "synthetic-default", "synthetic"
		if path != "" {
			name, format = baseName(path), "fake"
		}
		return NewFakeEngine(ModelInfo{
			Name: name, Format: format, Path: path, Params: 14_000_000, MaxSeq: 4096,
			ChatTemplate: "{% for m in messages %}<|im_start|>{{ m.role }}...",
		}, stepDelay), nil
	}
}

// Info implements Engine.
func (f *FakeEngine) Info() ModelInfo { return f.info }

// Runs reports how many runs have started (tests use it to check that
// changing controls does not reload the model).
func (f *FakeEngine) Runs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}

// Snapshot implements Engine.
func (f *FakeEngine) Snapshot() metrics.Snapshot { return f.rec.Snapshot() }

var fakeWords = strings.Fields("the quick brown fox jumps over a lazy dog while rigscope measures every " +
	"allreduce and the drafter guesses what comes next so the target can verify several tokens in one pass")

// fakePlainStep is the plain step time the fake's session baseline holds.
const fakePlainStep = 500 * time.Microsecond

// Run implements Engine. It is deterministic for a given config: its step
// times are made up, not measured, and its figures come from the same
// recorder and tally the engine uses.
func (f *FakeEngine) Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Sampling.Seed, uint64(cfg.MaxTokens)))
	k := cfg.Drafter.K
	if cfg.Drafter.Kind == DrafterNone || cfg.Drafter.Kind == "" {
		k = 0
	}
	tp := max(cfg.TP, 1)
	counts := stepstats.NewCounts(k)
	counts.Source = stepstats.BaselineThisRun
	if k > 0 { // a session baseline of 8 plain steps around fakePlainStep
		counts.Source = stepstats.BaselineSession
		for i := range 8 {
			counts.Base.Add((fakePlainStep + time.Duration(i%3)*10*time.Microsecond).Seconds())
		}
	}
	f.mu.Lock()
	f.runs++
	runID := fmt.Sprint(f.runs)
	f.mu.Unlock()
	lat, bytes := metrics.NewLatencySet(), metrics.NewRankBytes(tp)
	f.rec.StartRun(metrics.RunInfo{RunID: runID, Backend: cfg.AllReduce, TP: tp, Drafter: cfg.Drafter.Kind, K: k, Counts: counts}, lat, bytes)

	st := engine.Stats{PromptTokens: len(strings.Fields(cfg.Prompt)) + 1, StopReason: "max_tokens", RunID: runID}
	word := 0
	for step := 1; st.GeneratedTokens < cfg.MaxTokens; step++ {
		if err := ctx.Err(); err != nil {
			st.StopReason = "cancelled"
			break
		}
		if f.stepDelay > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(f.stepDelay):
			}
			if ctx.Err() != nil {
				st.StopReason = "cancelled"
				break
			}
		}
		accepted := 0
		if k > 0 {
			for accepted < k && rng.Float64() < 0.7 {
				accepted++
			}
		}
		n := min(accepted+1, cfg.MaxTokens-st.GeneratedTokens)
		accepted = min(accepted, n) // the last step may be cut by max tokens
		toks := make([]engine.Token, n)
		for i := range toks {
			text := fakeWords[word%len(fakeWords)]
			if word%17 == 16 {
				text += ".\n"
			} else {
				text += " "
			}
			word++
			toks[i] = engine.Token{ID: int32(word), Text: text, FromDraft: i < accepted}
		}
		ar := time.Duration(20+rng.IntN(80)) * time.Microsecond
		ss := engine.StepStats{
			Step: step, Drafted: k, Depth: k, Accepted: accepted, Tokens: n,
			Draft: time.Duration(k) * 50 * time.Microsecond, Verify: 400*time.Microsecond + ar, AllReduce: ar,
			At: time.Since(start),
		}
		if st.GeneratedTokens == 0 {
			st.TimeToFirstTokenMs = float64(time.Since(start).Microseconds()) / 1000
		}
		st.GeneratedTokens += n
		lat.Record(cfg.AllReduce, 4096, ar)
		for r := range tp {
			bytes.Add(r, 4096, 4096)
		}
		f.rec.RecordStep(ss)
		sink(engine.Event{Kind: engine.EventTokens, Tokens: toks})
		sink(engine.Event{Kind: engine.EventStep, Step: ss})
	}
	if elapsed := time.Since(start); elapsed > 0 {
		st.DecodeTokensPerS = float64(st.GeneratedTokens) / elapsed.Seconds()
	}
	f.rec.EndRun()
	st.SetCounts(f.rec.Counts())
	snap := f.rec.Snapshot()
	for _, l := range snap.AllReduce {
		st.AllReduceMs += float64(l.Mean.Microseconds()*l.Count) / 1000
	}
	st.BytesSent, st.BytesRecv = snap.RankBytesSent, snap.RankBytesRecv
	st.SetAllReduce(snap.AllReduce, cfg.AllReduce, nil)
	sink(engine.Event{Kind: engine.EventDone, Stats: st})
	return st, nil
}
