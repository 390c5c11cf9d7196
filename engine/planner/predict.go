package planner

import (
	"fmt"

	"slices"

	"rigscope/engine/stepstats"
	"rigscope/engine/tp"
)

// Inputs are the measurements a prediction rests on.
type Inputs struct {
	Shape     Shape
	AllReduce *AllReduceTable
	Compute   *ComputeTable
	Draft     *DraftTable
	Accept    *Book
	// Auto resolves the auto backend per group size (the table --allreduce
	// auto uses); a size without one makes auto a missing measurement.
	Auto map[int]*tp.AutoTable
	// Fits, when set, refuses a TP size the model does not fit at on the
	// device, with the numbers.
	Fits func(tp int) error
}

// Prediction is what a configuration would give, every time in
// milliseconds and every figure with its range.
type Prediction struct {
	Config Config `json:"config"`
	// DecodeStepMs is a plain step: the forward of one token;
	// DecodeAllReduceMs its allreduce calls (see Basis).
	DecodeStepMs      Range `json:"decode_step_ms"`
	DecodeAllReduceMs Range `json:"decode_allreduce_ms"`
	// VerifyStepMs is the verify of a full proposal (k+1 tokens for a
	// chain); VerifyAllReduceMs its allreduce calls per the table.
	VerifyStepMs      Range `json:"verify_step_ms"`
	VerifyAllReduceMs Range `json:"verify_allreduce_ms"`
	// DraftMs is one proposal; StepMs the mean speculative step: the draft
	// plus the verify of the proposal's mean size, or a plain step when
	// the drafter proposes nothing.
	DraftMs Range `json:"draft_ms"`
	// LoopMs is the loop's own time per step (emitting the tokens, the
	// step's records), from earlier runs' steps on this kind of device:
	// StepMs and the baseline include it.
	LoopMs        Range `json:"loop_ms"`
	StepMs        Range `json:"step_ms"`
	TokensPerStep Range `json:"tokens_per_step"`
	TokS          Range `json:"tokens_per_s"`
	BaselineTokS  Range `json:"baseline_tokens_per_s"`
	// BreakEven is the tokens per step at which speculation only matches
	// plain decoding; Speedup the predicted rate over plain decoding.
	BreakEven Range `json:"break_even"`
	Speedup   Range `json:"speedup"`
	// Verdict is stepstats's state for the predicted figures (pays,
	// does_not_pay, cannot_pay_at_k, too_close_to_call, no_drafter); ""
	// when a measurement is missing or the model does not fit.
	Verdict string `json:"verdict"`
	// Basis says what the forwards rest on: timed with this backend, or
	// timed with another and its allreduce calls swapped per the table.
	Basis      string      `json:"basis,omitempty"`
	Acceptance *Acceptance `json:"acceptance,omitempty"`
	Missing    []Missing   `json:"missing,omitempty"`
	Unfit      string      `json:"unfit,omitempty"`
}

// OK says every figure was predicted.
func (p Prediction) OK() bool { return len(p.Missing) == 0 && p.Unfit == "" }

// Predict predicts one configuration.
func Predict(in Inputs, c Config) Prediction {
	p := Prediction{Config: c}
	if c.TP < 1 {
		p.Unfit = fmt.Sprintf("TP %d: give 1 or more ranks", c.TP)
		return p
	}
	if in.Fits != nil {
		if err := in.Fits(c.TP); err != nil {
			p.Unfit = err.Error()
			return p
		}
	}
	if c.Speculative() && (c.K < 1 || c.K > 16 || c.Tree < 0) {
		p.Unfit = fmt.Sprintf("k=%d tree=%d: give k in 1..16 and tree 0 (chain) or more", c.K, c.Tree)
		return p
	}
	plain, plainAR, basis, miss := forward(in, c, 1)
	p.Basis = basis
	p.Missing = append(p.Missing, miss...)
	p.DecodeStepMs, p.DecodeAllReduceMs = plain.Scale(1e-3), plainAR.Scale(1e-3)
	gpu := c.Device != "" && c.Device != "cpu"
	loopUs, loopSteps := in.Accept.Loop(gpu, "none", 0)
	plainStep := plain.Add(Exact(loopUs)) // a plain step: its forward and the loop's own time
	if !c.Speculative() {
		if len(p.Missing) == 0 {
			p.Basis += "; " + loopWords(loopUs, loopSteps)
			p.TokensPerStep = Exact(1)
			p.LoopMs = Exact(loopUs * 1e-3)
			p.StepMs = plainStep.Scale(1e-3)
			p.TokS = perSecond(Exact(1), plainStep)
			p.BaselineTokS = p.TokS
			p.Speedup = Exact(1)
			p.Verdict = stepstats.NoSpec
		}
		return p
	}
	acc := in.Accept.For(c.DrafterKey(), c.Drafter, c.K, c.Tree)
	p.Acceptance = &acc
	verify, ar, _, miss := forward(in, c, c.VerifyTokens())
	p.Missing = append(p.Missing, miss...)
	p.VerifyStepMs, p.VerifyAllReduceMs = verify.Scale(1e-3), ar.Scale(1e-3)
	draft, dmiss := in.Draft.Lookup(c.DrafterKey(), c.Device, c.K, c.Tree)
	if dmiss != nil && acc.DraftUs.V > 0 {
		draft, dmiss = acc.DraftUs, nil // timed in the logged runs instead
	}
	if dmiss != nil {
		p.Missing = append(p.Missing, *dmiss)
	}
	p.DraftMs = draft.Scale(1e-3)
	// The step: the draft, then the verify of the proposal each step had
	// (a plain step where it had none), averaged over the proposal sizes.
	var fwd Range
	for n, share := range acc.Sizes {
		if share == 0 {
			continue
		}
		f, _, _, miss := forward(in, c, 1+n)
		p.Missing = append(p.Missing, miss...)
		fwd = fwd.Add(f.Scale(share))
	}
	if len(p.Missing) > 0 {
		return p
	}
	specLoopUs, specLoopSteps := in.Accept.Loop(gpu, c.DrafterKey(), c.K)
	if specLoopSteps == 0 { // no logged run of this drafter: a plain step's
		specLoopUs, specLoopSteps = loopUs, loopSteps
	}
	p.Basis += "; " + loopWords(specLoopUs, specLoopSteps)
	p.LoopMs = Exact(specLoopUs * 1e-3)
	step := draft.Add(fwd).Add(Exact(specLoopUs))
	p.StepMs = step.Scale(1e-3)
	p.TokensPerStep = acc.TokensPerStep
	p.TokS = perSecond(acc.TokensPerStep, step)
	p.BaselineTokS = perSecond(Exact(1), plainStep)
	plain = plainStep
	// The break-even and the speedup are stepstats's arithmetic; their
	// bounds take each input at the end that widens them.
	p.BreakEven = Range{stepstats.BreakEven(step.V, plain.V), stepstats.BreakEven(step.Lo, plain.Hi), stepstats.BreakEven(step.Hi, plain.Lo)}
	p.Speedup = Range{stepstats.Speedup(acc.TokensPerStep.V, step.V, plain.V),
		stepstats.Speedup(acc.TokensPerStep.Lo, step.Hi, plain.Lo), stepstats.Speedup(acc.TokensPerStep.Hi, step.Lo, plain.Hi)}
	v := stepstats.Verdict{MaxPerStep: c.K + 1, Speedup: p.Speedup.V, SpeedupLo: p.Speedup.Lo, SpeedupHi: p.Speedup.Hi,
		BreakEven: p.BreakEven.V, BreakEvenLo: p.BreakEven.Lo, BreakEvenHi: p.BreakEven.Hi}
	p.Verdict = stepstats.Decide(v, true)
	return p
}

// perSecond is tokens per second from tokens per step and microseconds per
// step.
func perSecond(tokens, stepUs Range) Range { return tokens.Div(stepUs).Scale(1e6) }

// forward predicts the target's forward of tokens rows in microseconds,
// the allreduce part of it, and what the figure rests on.
//
// The forward timed at this TP size with this backend comes first: its
// allreduce calls ran among the ranks' compute as a run's do. On CPU
// ranks that differs from an allreduce timed call after call: with more
// ranks than cores, every barrier of a call waits for ranks descheduled
// by the others' compute, so ring (2(n-1) barriers a call) and tree pay
// several times their back-to-back latency while oneshot (one barrier)
// does not (see bench/results/planner-amd-epyc-s2.md). The allreduce part is
// then rank 0's time inside the calls as timed (waits for slower ranks
// included), or, where the device does not count it, the table's.
//
// Without that timing, a forward timed with another backend at this TP
// size stands in, its allreduce calls swapped for this backend's per the
// allreduce table (a device's table from allreduce-bench, a published
// rig's): what stays of the timed forward (the compute, the ranks' waits)
// is this TP size's.
func forward(in Inputs, c Config, tokens int) (fwd, ar Range, basis string, missing []Missing) {
	if c.TP == 1 {
		pt, miss := in.Compute.Lookup(in.Shape.Key, c.Device, 1, "", tokens)
		if miss != nil {
			return Range{}, Range{}, "", []Missing{*miss}
		}
		return pt.WallUs, Range{}, "forward timed at TP 1", nil
	}
	bytes := in.Shape.MessageBytes(tokens)
	n := float64(in.Shape.AllReduces())
	backend := c.Backend
	if backend == "auto" {
		t := in.Auto[c.TP]
		if t == nil || len(t.Rules) == 0 {
			return Range{}, Range{}, "", []Missing{{Kind: "allreduce", Device: c.Device, TP: c.TP, Backend: "auto", Bytes: bytes}}
		}
		backend = t.Pick(bytes)
	}
	arB, missB := in.AllReduce.Lookup(c.Device, c.TP, backend, bytes)
	pt, miss := in.Compute.Lookup(in.Shape.Key, c.Device, c.TP, backend, tokens)
	if miss == nil {
		basis = "forward timed with " + backend
		switch {
		case pt.Calls > 0 && pt.AllReduceUs.V > 0:
			ar = pt.AllReduceUs
			basis += ", allreduce as rank 0 spent in its calls"
		case pt.AllReduceUs.V > 0: // a device times its calls, not counting them
			ar = pt.AllReduceUs
			basis += ", allreduce as the device timed rank 0's calls"
		case missB == nil:
			ar = arB.Scale(n)
			basis += ", allreduce per the table"
		}
		return pt.WallUs, ar, basis, nil
	}
	if missB == nil {
		for _, ref := range referenceBackends(in, c) {
			refPt, m := in.Compute.Lookup(in.Shape.Key, c.Device, c.TP, ref, tokens)
			arRef, mRef := in.AllReduce.Lookup(c.Device, c.TP, ref, bytes)
			if m != nil || mRef != nil {
				continue
			}
			wall := refPt.WallUs
			ar = arB.Scale(n)
			rest := max(wall.V-n*arRef.V, 0.05*wall.V) // the timed forward without its allreduce calls
			fwd = Range{rest + ar.V, max(0, wall.Lo-n*arRef.V) + ar.Lo, wall.Hi - n*arRef.V + ar.Hi}
			fwd.Lo = min(max(fwd.Lo, 0), fwd.V)
			fwd.Hi = max(fwd.Hi, fwd.V)
			return fwd, ar, fmt.Sprintf("forward timed with %s, its allreduce calls swapped for %s's per the table", ref, backend), nil
		}
	}
	return Range{}, Range{}, "", []Missing{*miss}
}

// referenceBackends are the backends timed at c's TP size that a swap may
// start from, RefBackend first.
func referenceBackends(in Inputs, c Config) []string {
	refs := in.Compute.Backends(in.Shape.Key, c.Device, c.TP)
	slices.SortStableFunc(refs, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == RefBackend:
			return -1
		case b == RefBackend:
			return 1
		}
		return 0
	})
	return refs
}

// VerdictWords is a predicted verdict in a few words, for tables.
func VerdictWords(state string) string {
	switch state {
	case stepstats.Pays:
		return "pays"
	case stepstats.DoesNotPay:
		return "does not pay"
	case stepstats.CannotPay:
		return "cannot pay at this k"
	case stepstats.TooClose:
		return "too close to call"
	case stepstats.NoSpec:
		return "no drafter"
	}
	return state
}
