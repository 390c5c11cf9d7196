package spec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rigscope/engine/stepstats"
)

// The greedy speculative step kept on the target's device (CycleVerifier):
// after a verify of (next, a chain) the device itself accepts the drafts,
// hands the drafter the kept positions' features and drafts the next chain
// from them, so the loop enqueues step i+1 before it reads step i, as
// plain decoding ahead does (ahead.go). The host reads each step a step
// behind: its accepted tokens, the verify's features for the drafter's
// bookkeeping, and the device times. The tokens are specStep's.

// CycleVerifier is a ChainVerifier whose device can continue a chain's
// drafter after each verify.
type CycleVerifier interface {
	ChainVerifier
	// EnqueueCycle enqueues a step: with p (the cycle's first step; none
	// pending) the verify of (next, p's chain), else of the token and the
	// chain the previous pending step left on the device; then the
	// acceptance and the next chain of as many tokens, drafted by p's
	// drafter on the device. It does not wait; at most two steps are
	// pending. False with no error: p's chain cannot continue there (the
	// caller verifies it with VerifyChain).
	EnqueueCycle(ctx context.Context, next int32, p PendingChain) (bool, error)
	// WaitCycle waits for the oldest pending step and returns it; Captured
	// then holds its verify's features (every row).
	WaitCycle(ctx context.Context) (CycleStep, error)
	// DropCycle waits for the pending steps and forgets them: the cache
	// keeps the positions of the steps WaitCycle returned (Len). Every
	// other call that runs the target does this first.
	DropCycle() error
}

// CycleStep is one step of a CycleVerifier.
type CycleStep struct {
	Base     int     // the verify's first position: its token is the loop's next
	IDs      []int32 // the argmax after each kept position: IDs[:Accepted] the accepted drafts, then the target's own token
	Accepted int
	Drafted  int
	// Device times: the verify (with the acceptance), and the chain the
	// step drafted for the next one.
	Verify, Draft time.Duration
}

// CycleDrafter is a DeviceChainDrafter whose chains a CycleVerifier
// continues: it is told which of its cache's rows the device extended.
type CycleDrafter interface {
	DeviceChainDrafter
	// ExtendedOnDevice: the device extended the rows of positions pos,
	// pos+1, ... each with the token after its position (tokens).
	ExtendedOnDevice(pos int, tokens []int32)
}

// cycler returns the target and drafter as a device cycle when greedy
// chains can take one (nil: host-driven steps).
func (g *gen) cycler() (CycleVerifier, CycleDrafter) {
	if g.o.Branch != 0 || !g.o.Sampler.P.Greedy() {
		return nil, nil
	}
	cv, ok := g.t.(CycleVerifier)
	if !ok {
		return nil, nil
	}
	cd, ok := g.o.Drafter.(CycleDrafter)
	if !ok {
		return nil, nil
	}
	return cv, cd
}

// cycle runs speculative steps through the device cycle, two deep, from
// loop step *step on, until the generation ends or the next step cannot
// take the cycle (the context's room for a whole chain, the tokens still
// wanted, a baseline step due); *step is left at the last step recorded.
// False: nothing ran (the caller takes a host-driven step).
func (g *gen) cycle(ctx context.Context, cv CycleVerifier, cd CycleDrafter, step *int, last *time.Time) (ran bool, err error) {
	k := g.o.K
	base := g.t.Len()
	if base+1+k > g.t.MaxLen() || g.o.MaxTokens-len(g.res.Tokens)-1 < k {
		return false, nil // a shorter chain: specStep
	}
	td := time.Now()
	req := Request{K: k, Sampler: g.o.DraftSampler}
	pend, err := cd.ProposeOnDevice(ctx, g.seq, req)
	switch {
	case err != nil:
		return true, fmt.Errorf("drafter %s: %w", g.o.Drafter.Name(), err)
	case pend == nil:
		return false, nil
	case pend.Len() != k:
		return true, fmt.Errorf("drafter %s: enqueued a chain of %d tokens for k=%d", g.o.Drafter.Name(), pend.Len(), k)
	}
	ok, err := cv.EnqueueCycle(ctx, g.next, pend)
	if err != nil {
		return true, err
	}
	if !ok { // the chain is verified as specStep verifies it
		st, err := g.verify(ctx, req, pend, cv, Proposal{}, time.Since(td))
		if err == nil {
			g.record(&st, last)
		}
		return true, err
	}
	boot := time.Since(td)
	s0, pending, enqueued := *step, 1, 1
	defer func() {
		// Steps enqueued before the generation ended are dropped, and
		// positions kept past its last token (a stop inside a step's
		// tokens) are rewound: the cache holds the sequence but its last
		// token, as after a plain step.
		derr := cv.DropCycle()
		if n := len(g.seq) - 1; derr == nil && g.done && cv.Len() > n {
			derr = cv.Rewind(n)
		}
		if err == nil {
			err = derr
		}
	}()
	for i := 0; pending > 0; i++ {
		// The next step goes in behind when it is wanted and fits: each
		// pending step keeps at least one token and at most k+1 positions.
		more := !g.done && ctx.Err() == nil &&
			len(g.res.Tokens)+pending < g.o.MaxTokens &&
			cv.Len()+pending*(k+1)+1+k <= g.t.MaxLen() &&
			!(g.o.MeasureBaseline && baselineDue(s0+enqueued, g.res.Counts.Base.N))
		if more {
			if ok, err := cv.EnqueueCycle(ctx, 0, nil); err != nil {
				return true, err
			} else if !ok {
				return true, errors.New("generate: the device cycle refused a step it had started")
			}
			pending++
			enqueued++
		}
		cs, err := cv.WaitCycle(ctx)
		if err != nil {
			return true, err
		}
		pending--
		if err := g.checkCycle(cs, k); err != nil {
			return true, err
		}
		st := StepInfo{Step: stepstats.Step{Drafted: cs.Drafted, Accepted: cs.Accepted, Depth: cs.Drafted, Draft: cs.Draft, Verify: cs.Verify}}
		if i == 0 {
			st.Draft += boot
		}
		g.keep(&st, cs.Base, cs.IDs, chainPath(cs.Accepted), cs.IDs[cs.Accepted], cs.Drafted+1)
		cd.ExtendedOnDevice(cs.Base, cs.IDs)
		if i > 0 {
			*step++
		}
		g.record(&st, last)
		if g.done {
			break
		}
	}
	return true, nil
}

// checkCycle checks a device step against the loop's state: it verified
// at the cached length after the last step, with next, and kept at most
// its chain.
func (g *gen) checkCycle(cs CycleStep, k int) error {
	switch {
	case cs.Base != len(g.seq)-1:
		return fmt.Errorf("generate: the device cycle verified at %d, the sequence caches %d positions", cs.Base, len(g.seq)-1)
	case cs.Drafted != k || cs.Accepted < 0 || cs.Accepted > k || len(cs.IDs) != cs.Accepted+1:
		return fmt.Errorf("generate: the device cycle returned %d ids for %d of %d drafts accepted (k=%d)", len(cs.IDs), cs.Accepted, cs.Drafted, k)
	}
	for _, id := range cs.IDs {
		if id < 0 || int(id) >= g.t.Vocab() {
			return fmt.Errorf("generate: the device cycle returned token id %d outside the vocabulary of %d", id, g.t.Vocab())
		}
	}
	return nil
}
