package spec

import (
	"context"
	"fmt"
	"math"
	"time"

	"rigscope/engine/model"
	"rigscope/engine/stepstats"
)

// Plain greedy decoding with the next step enqueued before the previous
// token is read (AheadTarget): the device runs step i+1 while the host
// waits for, emits and streams token i, so a plain run's rate is the
// device's step time rather than the step time plus the host's round
// trip. The tokens are those of plainStep.

// ahead returns the target as an AheadTarget when plain greedy steps can be
// enqueued ahead now (nil: one step at a time).
func (g *gen) ahead() AheadTarget {
	if !g.o.Sampler.P.Greedy() {
		return nil
	}
	at, ok := g.t.(AheadTarget)
	if !ok || !at.Ahead() {
		return nil
	}
	return at
}

// plainAhead decodes plain greedy tokens two steps deep until the
// generation ends (or the context or MaxTokens leave no room for another
// step; the caller's loop then says why it stops). For a baseline
// measurement inside a speculative run it decodes two tokens and records
// the second as the baseline step: its wall time is the rate a plain run
// of this target gets, which a lone step (a full round trip) would
// understate. A step enqueued but not needed (the generation ended) is
// rewound.
func (g *gen) plainAhead(ctx context.Context, at AheadTarget, baseline bool, last *time.Time) (err error) {
	n := math.MaxInt
	if baseline {
		n = 2
	}
	base := at.Len()
	fed := []int32{g.next}
	observe := g.fd != nil
	if baseline && g.fd != nil {
		observe = false
		// A plain run captures no features, so the baseline tokens run
		// without; then they run again with capture (one forward of both
		// from base) for the drafter to observe, outside the baseline's
		// time.
		g.ft.SetCapture(nil)
		defer func() {
			g.ft.SetCapture(g.fd.FeatureLayers())
			if err == nil && !g.done {
				err = g.catchUp(ctx, base, fed[:len(fed)-1])
			}
		}()
	}
	pending := 0
	defer func() {
		if pending == 0 {
			return
		}
		if rerr := at.Rewind(at.Len() - pending); err == nil {
			err = rerr
		}
	}()
	ts := time.Now()
	if err := at.EnqueueGreedy(ctx, g.next, false); err != nil {
		return err
	}
	pending++
	for i := 0; pending > 0 && !g.done; i++ {
		// Step i+1 goes in behind step i when it is wanted: its token is
		// number len(Tokens)+pending+1, at position Len().
		if i+1 < n && len(g.res.Tokens)+pending < g.o.MaxTokens && at.Len()+1 < at.MaxLen() && ctx.Err() == nil {
			if err := at.EnqueueGreedy(ctx, 0, true); err != nil {
				return err
			}
			pending++
		}
		tok, err := at.WaitGreedy(ctx)
		if err != nil {
			return err
		}
		pending--
		if observe {
			g.observe(base+i, []int32{g.next}, nil, 1)
		}
		st := StepInfo{Step: stepstats.Step{Verify: time.Since(ts)}, IDs: []int32{tok}, FromDraft: []bool{false}}
		st.Baseline = baseline && i == 1
		g.record(&st, last)
		fed = append(fed, g.next)
		ts = time.Now()
	}
	return nil
}

// catchUp runs tokens again from position base with the drafter's feature
// capture on and hands it their features: the positions a baseline
// segment decoded without capture.
func (g *gen) catchUp(ctx context.Context, base int, tokens []int32) error {
	if len(tokens) == 0 {
		return nil
	}
	if err := g.t.Rewind(base); err != nil {
		return err
	}
	if _, err := g.t.Forward(ctx, model.Batch{Tokens: tokens, Logits: model.LogitsNone}); err != nil {
		return fmt.Errorf("generate: features of the baseline tokens: %w", err)
	}
	g.observe(base, tokens, nil, len(tokens))
	return nil
}
