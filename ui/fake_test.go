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
)

// FakeEngine streams made-up tokens with the shape of a real speculative run:
// steps that draft k tokens and accept a random prefix, tokens marked
// FromDraft, allreduce timings, and cancellation through ctx. The panel is
// built and tested against it until the real engine is wired in.
type FakeEngine struct {
	info      ModelInfo
	stepDelay time.Duration // wall time per step; 0 runs flat out

	mu   sync.Mutex
	snap metrics.Snapshot
	runs int
}

// NewFakeEngine returns a fake target named after path that sleeps stepDelay
// per speculative step.
func NewFakeEngine(info ModelInfo, stepDelay time.Duration) *FakeEngine {
	return &FakeEngine{info: info, stepDelay: stepDelay}
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
func (f *FakeEngine) Snapshot() metrics.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.snap
	s.Taken = time.Now()
	s.AcceptHist = append([]int(nil), s.AcceptHist...)
	s.AllReduce = append([]metrics.LatencySummary(nil), s.AllReduce...)
	s.RankBytesSent = append([]int64(nil), s.RankBytesSent...)
	s.RankBytesRecv = append([]int64(nil), s.RankBytesRecv...)
	return s
}

var fakeWords = strings.Fields("the quick brown fox jumps over a lazy dog while rigscope measures every " +
	"allreduce and the drafter guesses what comes next so the target can verify several tokens in one pass")

// Run implements Engine. It is deterministic for a given config.
func (f *FakeEngine) Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Sampling.Seed, uint64(cfg.MaxTokens)))
	k := cfg.Drafter.K
	if cfg.Drafter.Kind == DrafterNone || cfg.Drafter.Kind == "" {
		k = 0
	}
	tp := max(cfg.TP, 1)
	f.mu.Lock()
	f.runs++
	f.snap = metrics.Snapshot{
		RunID: fmt.Sprint(f.runs), Running: true, Backend: cfg.AllReduce, TP: tp,
		Drafter: cfg.Drafter.Kind, K: k, AcceptHist: make([]int, k+1),
		RankBytesSent: make([]int64, tp), RankBytesRecv: make([]int64, tp),
	}
	f.mu.Unlock()

	st := engine.Stats{PromptTokens: len(strings.Fields(cfg.Prompt)) + 1, StopReason: "max_tokens", AcceptHist: make([]int, k+1)}
	var arTotal time.Duration
	var arSamples []time.Duration
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
		arSamples = append(arSamples, ar)
		arTotal += ar
		ss := engine.StepStats{
			Step: step, Drafted: k, Accepted: accepted, NewTokens: n,
			Draft: time.Duration(k) * 50 * time.Microsecond, Verify: 400*time.Microsecond + ar, AllReduce: ar,
			ElapsedTime: time.Since(start),
		}
		if st.GeneratedTokens == 0 {
			st.TimeToFirstTokenMs = float64(time.Since(start).Microseconds()) / 1000
		}
		st.GeneratedTokens += n
		if k > 0 {
			st.Drafts++
			st.DraftTokens += k
			st.AcceptedTokens += accepted
			st.AcceptHist[accepted]++
		}
		st.DraftMs += float64(ss.Draft.Microseconds()) / 1000
		st.VerifyMs += float64(ss.Verify.Microseconds()) / 1000
		sink(engine.Event{Kind: engine.EventTokens, Tokens: toks})
		sink(engine.Event{Kind: engine.EventStep, Step: ss})

		f.mu.Lock()
		f.snap.Generated = st.GeneratedTokens
		if k > 0 {
			f.snap.AcceptHist[accepted]++
		}
		for r := range tp {
			f.snap.RankBytesSent[r] += 4096
			f.snap.RankBytesRecv[r] += 4096
		}
		f.snap.Steps = append(f.snap.Steps, metrics.StepSample{At: ss.ElapsedTime, Draft: ss.Draft, Verify: ss.Verify, AllReduce: ar, Tokens: n, Accepted: accepted})
		if len(f.snap.Steps) > 256 {
			f.snap.Steps = f.snap.Steps[1:]
		}
		f.mu.Unlock()
	}
	elapsed := time.Since(start)
	if elapsed > 0 {
		st.DecodeTokensPerS = float64(st.GeneratedTokens) / elapsed.Seconds()
	}
	if st.Drafts > 0 {
		st.MeanAcceptLen = 1 + float64(st.AcceptedTokens)/float64(st.Drafts)
	}
	st.AllReduceMs = float64(arTotal.Microseconds()) / 1000
	st.BytesSent = make([]int64, tp)
	st.BytesRecv = make([]int64, tp)
	steps := len(arSamples)
	for r := range tp {
		st.BytesSent[r] = int64(steps) * 4096
		st.BytesRecv[r] = int64(steps) * 4096
	}

	f.mu.Lock()
	f.snap.Running = false
	f.snap.TokensPerS = st.DecodeTokensPerS
	f.snap.MeanAcceptLen = st.MeanAcceptLen
	if steps > 0 {
		p50, p99 := percentiles(arSamples)
		f.snap.AllReduce = []metrics.LatencySummary{{Backend: cfg.AllReduce, Bytes: 4096, Count: int64(steps), P50: p50, P99: p99, Mean: arTotal / time.Duration(steps)}}
	}
	f.mu.Unlock()
	sink(engine.Event{Kind: engine.EventDone, Stats: st})
	return st, nil
}
