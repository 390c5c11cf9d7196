package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/tp"
)

// ForwardTiming is the target's forward pass of one batch size, timed as a
// greedy verify or plain step runs it (spec.GreedyIDs on the run's target,
// with the run's allreduce group), once per repetition.
type ForwardTiming struct {
	Device  string `json:"device"`
	TP      int    `json:"tp"`
	Backend string `json:"backend"` // "" at TP 1
	Tokens  int    `json:"tokens"`  // batch rows (1 = a plain step, k+1 = a verify)
	Context int    `json:"context"` // positions cached before the batch
	// Walls is each repetition's wall time; AllReduce rank 0's time inside
	// allreduce calls in it; Calls the allreduce calls of one forward.
	Walls     []time.Duration `json:"walls_ns"`
	AllReduce []time.Duration `json:"allreduce_ns"`
	Calls     int             `json:"allreduce_calls"`
}

// forwardsPerSample is how many forwards one timing sample averages, as a
// run's rate averages its steps.
const forwardsPerSample = 8

// calibrationContext is the cached prefix a timed forward runs after: a
// short prompt, as a chat's first turn has.
const calibrationContext = 32

// TimeForward times the target's forward pass at TP tpSize with the named
// allreduce backend, for each batch size in tokens (rows, logits for every
// row as a verify asks), reps samples each (a sample the mean of
// forwardsPerSample forwards) after one warm-up: the product path a run
// takes, on this engine's device, so the planner's compute figures are
// this machine's. It holds the engine as a run does.
func (e *Engine) TimeForward(ctx context.Context, tpSize int, backend string, tokens []int, reps int) ([]ForwardTiming, error) {
	e.run.Lock()
	defer e.run.Unlock()
	if err := checkTPMachine(tpSize); err != nil {
		return nil, err
	}
	if err := CheckTP(e.cfg, tpSize); err != nil {
		return nil, err
	}
	cfg := RunConfig{TP: tpSize, AllReduce: backend}
	t, err := e.prepare(ctx, &cfg, tp.GroupOptions{})
	if err != nil {
		return nil, err
	}
	maxRows := 0
	for _, n := range tokens {
		if n < 1 || n > 1+spec.MaxK*spec.MaxBranch {
			return nil, fmt.Errorf("time forward: batch of %d tokens outside 1..%d", n, 1+spec.MaxK*spec.MaxBranch)
		}
		maxRows = max(maxRows, n)
	}
	if calibrationContext+maxRows > t.MaxLen() {
		return nil, fmt.Errorf("time forward: %d cached and %d new positions do not fit the context of %d; raise --ctx", calibrationContext, maxRows, t.MaxLen())
	}
	ids := func(n, salt int) []int32 { // deterministic ids inside the vocabulary
		out := make([]int32, n)
		for i := range out {
			out[i] = int32((i*7919 + salt*104729 + 3) % e.cfg.Vocab)
		}
		return out
	}
	if err := t.Rewind(0); err != nil {
		return nil, err
	}
	if _, err := spec.GreedyIDs(ctx, t, model.Batch{Tokens: ids(calibrationContext, 0), Logits: model.LogitsLast}); err != nil {
		return nil, fmt.Errorf("time forward: prefill: %w", err)
	}
	if cfg.TP == 1 {
		cfg.AllReduce = ""
	}
	out := make([]ForwardTiming, len(tokens))
	for i, n := range tokens {
		out[i] = ForwardTiming{Device: e.device(), TP: cfg.TP, Backend: cfg.AllReduce, Tokens: n, Context: calibrationContext}
	}
	// Sizes interleave within each repetition, so a burst of load from
	// elsewhere on the machine spreads over every size instead of skewing
	// one.
	for rep := -1; rep < reps; rep++ { // rep -1 warms up
		for i, n := range tokens {
			logits := model.LogitsAll
			if n == 1 {
				logits = model.LogitsLast
			}
			if err := t.Rewind(calibrationContext); err != nil {
				return nil, err
			}
			ar0, calls0 := t.allReduceTime(), allReduceCalls(t)
			start := time.Now()
			for j := range forwardsPerSample {
				if err := t.Rewind(calibrationContext); err != nil {
					return nil, err
				}
				if _, err := spec.GreedyIDs(ctx, t, model.Batch{Tokens: ids(n, (rep+2)*forwardsPerSample+j), Logits: logits}); err != nil {
					return nil, fmt.Errorf("time forward of %d tokens at TP %d: %w", n, cfg.TP, err)
				}
			}
			if rep < 0 {
				continue
			}
			out[i].Walls = append(out[i].Walls, time.Since(start)/forwardsPerSample)
			out[i].AllReduce = append(out[i].AllReduce, (t.allReduceTime()-ar0)/forwardsPerSample)
			out[i].Calls = (allReduceCalls(t) - calls0) / forwardsPerSample
		}
	}
	return out, t.Rewind(0)
}

// allReduceCalls is rank 0's allreduce calls so far (0 off the CPU).
func allReduceCalls(t runTarget) int {
	if c, ok := t.(*tpTarget); ok {
		return c.ranks[0].AllReduceCall
	}
	return 0
}

// device names where the target runs.
func (e *Engine) device() string {
	if e.opts.Device == "" {
		return "cpu"
	}
	return e.opts.Device
}

// TimeDraft times the drafter of dc proposing dc.K tokens (greedy) after a
// context of contextLen tokens, reps times after one warm-up. Each call
// shows the drafter a context whose last token differs from the previous
// call's, so a draft model catches up one token and then drafts, as after
// a rejection in a run. EAGLE-3 heads read the target's hidden states and
// are timed from run logs instead.
func (e *Engine) TimeDraft(ctx context.Context, dc DrafterConfig, contextLen, reps int) ([]time.Duration, error) {
	e.run.Lock()
	defer e.run.Unlock()
	dc, err := NormalizeDrafter(dc)
	if err != nil {
		return nil, err
	}
	switch dc.Kind {
	case "none":
		return nil, errors.New("time draft: no drafter to time")
	case "eagle3":
		return nil, errors.New("time draft: an EAGLE-3 head drafts from the target's hidden states, which only a run produces; its draft time comes from run logs (run it once with --log-dir)")
	}
	if contextLen < 2 || contextLen+1+spec.MaxK*spec.MaxBranch > e.opts.CtxLen {
		return nil, fmt.Errorf("time draft: context of %d tokens outside 2..%d", contextLen, e.opts.CtxLen-1-spec.MaxK*spec.MaxBranch)
	}
	d, err := e.drafter(dc)
	if err != nil {
		return nil, err
	}
	seq := make([]int32, contextLen)
	for i := range seq { // a repetitive context, as code is, so n-grams match
		seq[i] = int32((i%23)*131+7) % int32(e.cfg.Vocab)
	}
	req := spec.Request{K: dc.K, Branch: dc.Tree}
	var out []time.Duration
	for rep := -1; rep < reps; rep++ {
		seq[len(seq)-1] = int32((rep+2)*977) % int32(e.cfg.Vocab)
		start := time.Now()
		if _, err := d.Propose(ctx, seq, req); err != nil {
			return nil, fmt.Errorf("time draft: %s: %w", dc.Kind, err)
		}
		if rep >= 0 {
			out = append(out, time.Since(start))
		}
	}
	return out, nil
}

// CheckFit refuses a TP size the model cannot run at on this machine: its
// heads against the ranks, the ranks against the cores, and the weights and
// KV cache against the available memory, with the numbers.
func (e *Engine) CheckFit(tpSize int) error {
	if err := CheckTP(e.cfg, tpSize); err != nil {
		return err
	}
	return e.checkMemory(max(tpSize, 1))
}
