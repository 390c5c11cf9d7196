package engine

import (
	"context"
	"fmt"
	"time"

	"rigscope/engine/metrics"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/tokenizer"
	"rigscope/engine/tp"
)

// Run generates with cfg, streaming events to sink (called on this
// goroutine; it must not block). It returns when the run ends; a cancelled
// ctx stops it cleanly with StopReason "cancelled".
//
// With a drafter, the baseline tokens/s (for the break-even acceptance
// length) is the decode rate of the last plain run of the same TP size and
// allreduce backend on this engine; when there was none, the run starts with
// a short plain decode of a few steps that measures it (BaselineSource says
// which).
func (e *Engine) Run(ctx context.Context, cfg RunConfig, sink func(Event)) (Stats, error) {
	e.run.Lock()
	defer e.run.Unlock()
	if sink == nil {
		sink = func(Event) {}
	}
	var obs runObserver
	sink = obs.watch(sink)
	st, err := e.runLocked(ctx, cfg, sink, &obs)
	if err != nil {
		st.StopReason = "error"
	}
	sink(Event{Kind: EventDone, Stats: st, Err: err})
	return st, err
}

// Baseline sources, for logs.
const (
	BaselineLastPlain = "last plain run with the same config"
	BaselineMeasured  = "short plain decode at run start"
	BaselineThisRun   = "this plain run"
)

// BaselineSource says where a speculative run's baseline came from for the
// last run of cfg's configuration on this engine.
func (e *Engine) BaselineSource(cfg RunConfig) string {
	if cfg.Drafter.Kind == "none" || cfg.Drafter.Kind == "" && cfg.Drafter.Path == "" {
		return BaselineThisRun
	}
	if cfg.TP <= 0 {
		cfg.TP = 1
	}
	if _, ok := e.drafters.lastPlain(baselineKey(cfg)); ok {
		return BaselineLastPlain
	}
	return BaselineMeasured
}

func (e *Engine) runLocked(ctx context.Context, cfg RunConfig, sink func(Event), obs *runObserver) (Stats, error) {
	var st Stats
	// Every size is checked before anything is sized by it.
	if err := CheckRunConfig(cfg); err != nil {
		return st, err
	}
	if err := CheckTP(e.cfg, cfg.TP); err != nil {
		return st, err
	}
	prompt := cfg.PromptIDs
	if prompt == nil {
		ids, err := e.Encode(cfg.Prompt)
		if err != nil {
			return st, err
		}
		prompt = ids
	}
	if err := e.checkPrompt(prompt); err != nil {
		return st, err
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	dc, err := NormalizeDrafter(cfg.Drafter)
	if err != nil {
		return st, err
	}
	// The allreduce group's latency histograms and byte counters are the
	// recorder's, so the panel sees them live.
	lat, bytes := metrics.NewLatencySet(), metrics.NewRankBytes(max(cfg.TP, 1))
	calibrating := func(why string, done bool) {
		pr := Progress{What: "measuring this machine's allreduce table for auto (" + why + ")"}
		if done {
			pr.Done, pr.Total = 1, 1
		}
		sink(Event{Kind: EventProgress, Progress: pr})
	}
	t, err := e.prepare(ctx, &cfg, tp.GroupOptions{Latency: lat, Bytes: bytes, Calibrating: calibrating,
		Warn: func(msg string) { sink(Event{Kind: EventWarning, Warning: msg}) }})
	if err != nil {
		return st, err
	}
	if dc.Kind != "none" {
		if err := spec.Check(dc.K, dc.Tree, len(prompt), t.MaxLen()); err != nil {
			return st, err
		}
	}
	drafter, err := e.drafter(dc)
	if err != nil {
		return st, err
	}
	eos := int32(-1)
	var dec *tokenizer.StreamDecoder
	if e.tok != nil {
		if !cfg.IgnoreEOS {
			eos = e.tok.EOS()
		}
		dec = tokenizer.NewStreamDecoder(e.tok)
	}
	sp := sample.Params{Temperature: cfg.Sampling.Temperature, TopK: cfg.Sampling.TopK, TopP: cfg.Sampling.TopP}
	key := baselineKey(cfg)
	baseline, haveBaseline := e.drafters.lastPlain(key)
	start := time.Now()
	var firstTok time.Duration
	opts := spec.Options{
		MaxTokens: cfg.MaxTokens,
		EOS:       eos,
		K:         dc.K,
		Branch:    dc.Tree,
		Sampler:   sample.New(sp, cfg.Sampling.Seed),
		Drafter:   drafter,
		DraftSeed: cfg.Sampling.Seed,
		Emit: func(ids []int32, fromDraft []bool) {
			if firstTok == 0 {
				firstTok = time.Since(start)
				obs.firstToken(firstTok)
			}
			toks := make([]Token, len(ids))
			for i, id := range ids {
				toks[i] = Token{ID: id, FromDraft: fromDraft[i]}
				if dec != nil {
					toks[i].Text = dec.Next(id)
				}
			}
			sink(Event{Kind: EventTokens, Tokens: toks})
		},
	}
	if drafter != nil && !haveBaseline {
		opts.BaselineSteps = baselineSteps
	}
	runID := e.nextRunID()
	e.rec.StartRun(metrics.RunInfo{RunID: runID, Backend: cfg.AllReduce, TP: cfg.TP, Drafter: dc.Kind, K: dc.K}, lat, bytes)
	defer e.rec.EndRun()
	obs.start(e.opts.Observer, RunStart{Model: e.info.ServedName(), Drafter: dc, TP: cfg.TP, PromptTokens: len(prompt),
		AllReduce: lat, Bytes: bytes})
	if haveBaseline {
		e.rec.SetBaseline(baseline)
	}
	log, err := e.openRunLog(runID, cfg)
	if err != nil {
		return st, err
	}
	steps := &stepper{e: e, t: t, log: log, sink: sink, ranks: cfg.TP, start: start, last: time.Now(), lastAR: t.allReduceTime()}
	opts.Step = steps.step
	res, err := spec.Generate(ctx, t, prompt, opts)
	st.PromptTokens = len(prompt)
	st.GeneratedTokens = len(res.Tokens)
	st.PrefillMs = ms(res.Prefill)
	st.TimeToFirstTokenMs = ms(firstTok)
	st.StopReason = res.StopReason
	if n := len(res.Tokens) - 1; n > 0 && res.Decode > 0 {
		st.DecodeTokensPerS = float64(n) / res.Decode.Seconds()
	}
	fillSpecStats(&st, res.Counts)
	switch {
	case drafter == nil:
		st.BaselineTokensPerS = st.DecodeTokensPerS
		if err == nil && res.StopReason != "cancelled" && len(res.Tokens) > 1 {
			e.drafters.setPlain(key, st.DecodeTokensPerS)
		}
	case haveBaseline:
		st.BaselineTokensPerS = baseline
	default:
		st.BaselineTokensPerS = res.BaselineTokS
	}
	if res.Counts.Drafts > 0 {
		st.BreakEvenAcceptLen = spec.BreakEven(st.BaselineTokensPerS, res.Counts.StepTime())
	}
	e.rec.SetBaseline(st.BaselineTokensPerS)
	t.commStats(&st, ms(time.Since(start)))
	if err != nil {
		err = fmt.Errorf("run: %w", err)
	}
	if lerr := log.end(st, err); lerr != nil && err == nil {
		err = lerr
	}
	return st, err
}

// stepper turns the loop's step reports into StepStats events, recorder
// samples and run-log lines, splitting each step's wall time into draft,
// verify (which includes allreduce) and other.
type stepper struct {
	e      *Engine
	t      runTarget
	log    *runLog
	sink   func(Event)
	ranks  int
	n      int
	start  time.Time
	last   time.Time     // when the previous step ended
	lastAR time.Duration // allreduce time up to the previous step
}

func (s *stepper) step(si spec.StepInfo) {
	s.n++
	now, ar := time.Now(), s.t.allReduceTime()
	wall := now.Sub(s.last)
	ss := StepStats{Step: s.n, Drafted: si.Drafted, Depth: si.Depth, Accepted: si.Accepted, Draft: si.Draft, Verify: si.Verify,
		AllReduce: ar - s.lastAR, NewTokens: si.New, ElapsedTime: now.Sub(s.start)}
	s.last, s.lastAR = now, ar
	sample := metrics.StepSample{Step: s.n, Drafted: si.Drafted, At: ss.ElapsedTime, Draft: si.Draft, Verify: si.Verify,
		AllReduce: ss.AllReduce, Other: max(0, wall-si.Draft-si.Verify), Tokens: si.New, Accepted: si.Accepted}
	s.e.rec.RecordStep(sample, si.Drafted)
	s.log.step(sample, s.ranks)
	s.sink(Event{Kind: EventStep, Step: ss})
}

// fillSpecStats copies the speculative counts into the run's stats.
func fillSpecStats(st *Stats, c spec.Counts) {
	st.Drafts = c.Drafts
	st.DraftTokens = c.DraftTokens
	st.AcceptedTokens = c.Accepted
	st.AcceptHist = c.Hist
	st.AcceptPerPos = c.AcceptPerPos()
	st.MeanAcceptLen = c.MeanAcceptLen()
	st.DraftMs = ms(c.Draft)
	st.VerifyMs = ms(c.Verify)
}

// SpecPays is the verdict next to the numbers: the measured mean
// acceptance length beats the break-even one.
func SpecPays(st Stats) bool {
	return st.Drafts > 0 && st.MeanAcceptLen > st.BreakEvenAcceptLen
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
