package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rigscope/engine/metrics"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/stepstats"
	"rigscope/engine/tokenizer"
	"rigscope/engine/tp"
)

// Run generates with cfg, streaming events to sink (called on this
// goroutine; it must not block). It returns when the run ends; a cancelled
// ctx stops it cleanly with StopReason "cancelled"; a stop string
// (cfg.Stop) completing in the text ends it with StopReason "stop", the
// text cut before it.
//
// With a drafter, the baseline for the break-even verdict is plain decoding
// of exactly this configuration (model, device, context, TP size, allreduce
// backend): the steps of the last complete plain run of it on this engine,
// or, when there was none, plain steps interleaved in this run
// (Stats.Verdict.BaselineSource says which).
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
	if len(cfg.Stop) > 0 && e.tok == nil {
		return st, errors.New("stop strings need the model's tokenizer to see the text; this model has none, so leave them out")
	}
	var endIDs []int32
	var text *textStream
	if e.tok != nil {
		if !cfg.IgnoreEOS {
			if endIDs, err = stopIDs(e.tok, e.src.Meta(), cfg.Template); err != nil {
				return st, err
			}
		}
		text = &textStream{dec: tokenizer.NewStreamDecoder(e.tok), stop: tokenizer.NewStopper(cfg.Stop)}
	}
	sp := sample.Params{Temperature: cfg.Sampling.Temperature, TopK: cfg.Sampling.TopK, TopP: cfg.Sampling.TopP}
	key := e.baselineKey(cfg)
	counts, measure := e.seedCounts(key, dc.K, drafter != nil)
	start := time.Now()
	var firstTok time.Duration
	opts := spec.Options{
		MaxTokens:       cfg.MaxTokens,
		EOS:             -1,
		EOSIDs:          endIDs,
		K:               dc.K,
		Branch:          dc.Tree,
		Sampler:         sample.New(sp, cfg.Sampling.Seed),
		Drafter:         drafter,
		DraftSeed:       cfg.Sampling.Seed,
		MeasureBaseline: measure,
		Emit: func(ids []int32, fromDraft []bool) {
			if firstTok == 0 {
				firstTok = time.Since(start)
				obs.firstToken(firstTok)
			}
			toks := make([]Token, len(ids))
			for i, id := range ids {
				toks[i] = Token{ID: id, FromDraft: fromDraft[i]}
				if text != nil {
					toks[i].Text = text.texts[i]
				}
			}
			sink(Event{Kind: EventTokens, Tokens: toks})
		},
	}
	if text != nil {
		opts.Stop = text.step
	}
	runID := e.nextRunID()
	e.rec.StartRun(metrics.RunInfo{RunID: runID, Backend: cfg.AllReduce, TP: cfg.TP, Drafter: dc.Kind, K: counts.K, Counts: counts, RankGPU: rankGPUs(t)}, lat, bytes)
	defer e.rec.EndRun()
	obs.start(e.opts.Observer, RunStart{Model: e.info.ServedName(), Drafter: dc, TP: cfg.TP, Backend: cfg.AllReduce, PromptTokens: len(prompt),
		AllReduce: lat, Bytes: bytes})
	log, err := e.openRunLog(runID, cfg)
	if err != nil {
		return st, err
	}
	st.RunID, st.LogPath = runID, log.path()
	steps := &stepper{e: e, t: t, log: log, sink: sink, ranks: cfg.TP, start: start, lastAR: t.allReduceTime()}
	opts.Step = steps.step
	fb := headFallbacks(drafter)
	res, err := spec.Generate(ctx, t, prompt, opts)
	for _, w := range fallbackWarnings(fb, headFallbacks(drafter)) {
		sink(Event{Kind: EventWarning, Warning: w})
	}
	st.PromptTokens = len(prompt)
	st.GeneratedTokens = len(res.Tokens)
	st.PrefillMs = ms(res.Prefill)
	st.TimeToFirstTokenMs = ms(firstTok)
	st.StopReason = res.StopReason
	if n := len(res.Tokens) - 1; n > 0 && res.Decode > 0 {
		st.DecodeTokensPerS = float64(n) / res.Decode.Seconds()
	}
	c := e.rec.Counts()
	st.SetCounts(c)
	if drafter == nil {
		st.BaselineTokensPerS = st.DecodeTokensPerS
		if err == nil && res.StopReason != "cancelled" && c.Run.Y.N >= stepstats.MinSteps {
			e.baselines.set(key, c.Run.Y)
		}
	}
	t.commStats(&st, ms(time.Since(start)))
	st.RankGPU = rankGPUs(t)
	st.PrefillPath = prefillPath(t)
	if err != nil {
		err = fmt.Errorf("run: %w", err)
	}
	if lerr := log.end(st, err); lerr != nil && err == nil {
		err = lerr
	}
	return st, err
}

// stepper turns the loop's step reports into the step record (numbered,
// timed since the run's start, with the allreduce time the target counted)
// and hands it to the recorder, the run log and the sink.
type stepper struct {
	e      *Engine
	t      runTarget
	log    *runLog
	sink   func(Event)
	ranks  int
	n      int
	start  time.Time
	lastAR time.Duration // allreduce time up to the previous step
}

func (s *stepper) step(si spec.StepInfo) {
	s.n++
	ar := s.t.allReduceTime()
	st := si.Step
	st.Step, st.At, st.AllReduce = s.n, time.Since(s.start), ar-s.lastAR
	s.lastAR = ar
	s.e.rec.RecordStep(st)
	s.log.step(st, s.ranks)
	s.sink(Event{Kind: EventStep, Step: st})
}

// SetCounts fills the stats' step figures from the run's tally: counts,
// acceptance, draft and verify time, and the verdict of the finished run.
func (st *Stats) SetCounts(c stepstats.Counts) {
	st.Drafts = c.Drafts
	st.DraftTokens = c.DraftTokens
	st.AcceptedTokens = c.Accepted
	st.DraftAcceptRate = c.AcceptRate()
	st.AcceptHist = c.Hist
	st.AcceptPerPos = c.AcceptPerPos()
	st.MeanAcceptLen = c.MeanAcceptLen()
	st.DraftMs = ms(c.Draft)
	st.VerifyMs = ms(c.Verify)
	st.Verdict = stepstats.Judge(c, true)
	st.BaselineTokensPerS = c.BaselineTokS()
	st.BreakEvenAcceptLen = st.Verdict.BreakEven
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// textStream decodes a run's tokens to text and applies its stop strings:
// step (spec.Options.Stop) decodes a step's tokens into texts, which Emit
// then streams.
type textStream struct {
	dec   *tokenizer.StreamDecoder
	stop  *tokenizer.Stopper
	texts []string // the text each token of the step adds, stop strings cut out
}

func (s *textStream) step(ids []int32, final bool) (keep int, stop bool) {
	s.texts = s.texts[:0]
	for i, id := range ids {
		out, hit := s.stop.Feed(s.dec.Next(id))
		s.texts = append(s.texts, out)
		if hit {
			return i + 1, true
		}
	}
	if final {
		// The text held back as a possible stop string's start goes out
		// with the last token, cut at a stop string it completes.
		rest, hit := s.stop.Flush()
		s.texts[len(s.texts)-1] += rest
		return len(ids), hit
	}
	return len(ids), false
}
