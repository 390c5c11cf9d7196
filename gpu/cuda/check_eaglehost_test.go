//go:build cuda

package cuda

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"rigscope/engine"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor/cpu"
)

// hostTimes sums the host time of named calls; the zero value is ready.
type hostTimes struct {
	d map[string]time.Duration
	n map[string]int
}

func (h *hostTimes) add(name string, t0 time.Time) {
	if h.d == nil {
		h.d, h.n = map[string]time.Duration{}, map[string]int{}
	}
	h.d[name] += time.Since(t0)
	h.n[name]++
}

// timedTarget is the CUDA target with its speculative loop's calls timed.
type timedTarget struct {
	*Target
	tm *hostTimes
}

func (t timedTarget) VerifyChain(ctx context.Context, next int32, p spec.PendingChain) ([]int32, []int32, error) {
	defer t.tm.add("target.VerifyChain", time.Now())
	return t.Target.VerifyChain(ctx, next, p)
}

func (t timedTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	defer t.tm.add(fmt.Sprintf("target.ForwardIDs T=%d", min(len(b.Tokens), 2)), time.Now())
	return t.Target.ForwardIDs(ctx, b)
}

func (t timedTarget) EnqueueGreedy(ctx context.Context, next int32, fed bool) error {
	defer t.tm.add("target.EnqueueGreedy", time.Now())
	return t.Target.EnqueueGreedy(ctx, next, fed)
}

func (t timedTarget) WaitGreedy(ctx context.Context) (int32, error) {
	defer t.tm.add("target.WaitGreedy", time.Now())
	return t.Target.WaitGreedy(ctx)
}

func (t timedTarget) EnqueueCycle(ctx context.Context, next int32, p spec.PendingChain) (bool, error) {
	defer t.tm.add("target.EnqueueCycle", time.Now())
	return t.Target.EnqueueCycle(ctx, next, p)
}

func (t timedTarget) WaitCycle(ctx context.Context) (spec.CycleStep, error) {
	defer t.tm.add("target.WaitCycle", time.Now())
	return t.Target.WaitCycle(ctx)
}

func (t timedTarget) Rewind(n int) error {
	defer t.tm.add("target.Rewind", time.Now())
	return t.Target.Rewind(n)
}

func (t timedTarget) Captured() [][]float32 {
	defer t.tm.add("target.Captured", time.Now())
	return t.Target.Captured()
}

// timedDrafter is the EAGLE-3 drafter with the loop's calls timed.
type timedDrafter struct {
	*eagle3.Drafter
	tm *hostTimes
}

func (d timedDrafter) ProposeOnDevice(ctx context.Context, seq []int32, req spec.Request) (spec.PendingChain, error) {
	defer d.tm.add("drafter.ProposeOnDevice", time.Now())
	return d.Drafter.ProposeOnDevice(ctx, seq, req)
}

func (d timedDrafter) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	defer d.tm.add("drafter.Propose", time.Now())
	return d.Drafter.Propose(ctx, seq, req)
}

func (d timedDrafter) Observe(pos int, tokens []int32, feats [][]float32) {
	name := "drafter.Observe"
	if len(tokens) > spec.MaxK+1 {
		name += " (prefill)"
	}
	defer d.tm.add(name, time.Now())
	d.Drafter.Observe(pos, tokens, feats)
}

func (d timedDrafter) Accept(path []int) {
	defer d.tm.add("drafter.Accept", time.Now())
	d.Drafter.Accept(path)
}

// checkEagleHost runs greedy chain speculation (k=4) with gocoder-14m and
// its EAGLE-3 head through spec.Generate on the CUDA target, with the
// loop's calls timed on the host, and plain decoding the same way: where
// a speculative step's host time goes beyond the device's graphs.
func checkEagleHost(ctx context.Context, d *Device, models, head string, stdout io.Writer) error {
	const k = 4
	ctxLen := *checkEagleCtx
	ref, err := readRef(models)
	if err != nil {
		return err
	}
	pair, err := loadEaglePair(d, models, head, ctxLen)
	if err != nil {
		return err
	}
	defer pair.Close()
	t, hw := pair.t, pair.hw
	dh, err := LoadHead(d, hw, ctxLen+spec.MaxK*spec.MaxBranch)
	if err != nil {
		return err
	}
	defer dh.Close()
	dr := eagle3.New(hw, ctxLen, cpu.NewPool(1))
	dr.SetDevice(dh)
	type agg struct {
		tm                   hostTimes
		steps, first, tokens int
		decode, firstStep    time.Duration
		base                 spec.Counts // the in-run baseline steps' tally (baseline runs)
	}
	run := func(a *agg, drafter spec.Drafter, baseline bool) error {
		tt := timedTarget{Target: t, tm: &a.tm}
		for _, p := range ref.Prompts {
			prompt := p.PromptIDs
			if drafter != nil {
				dr.Reset()
			}
			n := 0
			res, err := spec.Generate(ctx, tt, prompt, spec.Options{MaxTokens: 64 + k + 1, EOS: -1, K: k, Drafter: drafter, MeasureBaseline: baseline,
				Step: func(st spec.StepInfo) {
					if n == 0 {
						a.firstStep += st.Draft + st.Verify + st.Other
						a.first++
					}
					n++
				}})
			if err != nil {
				return err
			}
			a.steps += n
			a.tokens += len(res.Tokens) - 1
			a.decode += res.Decode
			a.base.Base.N += res.Counts.Base.N
			a.base.Base.Sum += res.Counts.Base.Sum
		}
		return nil
	}
	var plain, eagle, hosted, based agg
	// hostDriven runs the speculative steps without the device cycle
	// (cycle.go): each verify and chain waited for by the host.
	hostDriven := func(a *agg) error {
		defer func(on bool) { t.tune.EagleCycle = on }(t.tune.EagleCycle)
		t.tune.EagleCycle = false
		return run(a, timedDrafter{dr, &a.tm}, false)
	}
	// a warm-up of each (graphs captured), then the measured runs
	if err := run(&agg{}, nil, false); err != nil {
		return err
	}
	if err := run(&agg{}, timedDrafter{dr, &hostTimes{}}, false); err != nil {
		return err
	}
	if err := hostDriven(&agg{}); err != nil {
		return err
	}
	if err := run(&plain, nil, false); err != nil {
		return err
	}
	if err := run(&eagle, timedDrafter{dr, &eagle.tm}, false); err != nil {
		return err
	}
	if err := hostDriven(&hosted); err != nil {
		return err
	}
	if err := run(&based, timedDrafter{dr, &based.tm}, true); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\neagle3 host times through spec.Generate (no engine), gocoder-14m-hf + head, k=%d, %d prompts, context %d, graphs warm\n", k, len(ref.Prompts), ctxLen)
	for _, r := range []struct {
		name string
		a    *agg
	}{{"plain", &plain}, {"eagle3", &eagle}, {"eagle3 host-driven (RIGSCOPE_CUDA_EAGLECYCLE=0)", &hosted}} {
		a := r.a
		us := func(x time.Duration, n int) float64 { return float64(x.Microseconds()) / float64(max(n, 1)) }
		fmt.Fprintf(stdout, "%-7s %8.1f tok/s, %d tokens, %d steps, decode %.1f us a step (%.1f a token); first step of a run %.1f us\n",
			r.name, float64(a.tokens)/a.decode.Seconds(), a.tokens, a.steps, us(a.decode, a.steps), us(a.decode, a.tokens), us(a.firstStep, a.first))
		names := make([]string, 0, len(a.tm.d))
		for n := range a.tm.d {
			names = append(names, n)
		}
		slices.Sort(names)
		var sum time.Duration
		for _, n := range names {
			if n == "target.ForwardIDs T=2" || n == "drafter.Observe (prefill)" {
				continue // the prefills
			}
			sum += a.tm.d[n]
			fmt.Fprintf(stdout, "    %-26s %6d calls %8.1f us a call %8.1f us a step\n", n, a.tm.n[n], us(a.tm.d[n], a.tm.n[n]), us(a.tm.d[n], a.steps))
		}
		fmt.Fprintf(stdout, "    %-26s %8.1f us a step (decode less the timed calls)\n", "the rest", us(a.decode-sum, a.steps))
	}
	fmt.Fprintf(stdout, "eagle3 runs measuring their own baseline (spec.Options.MeasureBaseline): %d baseline steps, %.1f tok/s, against the plain runs' %.1f (%.3fx); the runs %.1f tok/s\n",
		based.base.Base.N, based.base.BaselineTokS(), float64(plain.tokens)/plain.decode.Seconds(),
		based.base.BaselineTokS()/(float64(plain.tokens)/plain.decode.Seconds()), float64(based.tokens)/based.decode.Seconds())
	return nil
}

var (
	checkEagleReps = flag.Int("eaglereps", 20, "eagleprof check: engine runs of the 12 prompts with the EAGLE-3 head (for -test.cpuprofile)")
	checkEagleCtx  = flag.Int("eaglectx", 1024, "eaglehost and eagleprof checks: the context (KV cache) length; eagleprof: 0 for the engine's default")
)

// checkEagleProf runs the eagle check's engine path (plain once, then
// -eaglereps rounds of EAGLE-3 k=4 over the 12 prompts) long enough for a
// host CPU profile (-test.cpuprofile) to show the engine's share of a step.
func checkEagleProf(ctx context.Context, d *Device, models, head string, stdout io.Writer) error {
	ref, err := readRef(models)
	if err != nil {
		return err
	}
	e, err := engine.Open(ctx, filepath.Join(models, "gocoder-14m-hf"), engine.Options{Device: "cuda", CtxLen: *checkEagleCtx})
	if err != nil {
		return err
	}
	defer e.Close()
	rate := func(dc engine.DrafterConfig, reps int) (float64, error) {
		var n, s float64
		for range reps {
			for _, p := range ref.Prompts {
				_, _, st, err := runCollect(ctx, e, engine.RunConfig{PromptIDs: p.PromptIDs, MaxTokens: 69, Drafter: dc})
				if err != nil {
					return 0, err
				}
				n, s = n+float64(st.GeneratedTokens-1), s+float64(st.GeneratedTokens-1)/st.DecodeTokensPerS
			}
		}
		return n / s, nil
	}
	plain, err := rate(engine.DrafterConfig{Kind: "none"}, 2)
	if err != nil {
		return err
	}
	eagle, err := rate(engine.DrafterConfig{Kind: "eagle3", Path: head, K: 4}, *checkEagleReps)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\neagleprof (engine path, gocoder-14m-hf, context %d): plain %.1f tok/s, eagle3 k=4 %.1f tok/s over %d rounds of %d prompts (%.2fx)\n",
		e.CtxLen(), plain, eagle, *checkEagleReps, len(ref.Prompts), eagle/plain)
	return nil
}
