package planner

import (
	"fmt"

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
	// DecodeAllReduceMs its allreduce calls per the table.
	DecodeStepMs      Range `json:"decode_step_ms"`
	DecodeAllReduceMs Range `json:"decode_allreduce_ms"`
	// VerifyStepMs is the verify of a full proposal (k+1 tokens for a
	// chain); VerifyAllReduceMs its allreduce calls per the table.
	VerifyStepMs      Range `json:"verify_step_ms"`
	VerifyAllReduceMs Range `json:"verify_allreduce_ms"`
	// DraftMs is one proposal; StepMs the mean speculative step: the draft
	// plus the verify of the proposal's mean size, or a plain step when
	// the drafter proposes nothing.
	DraftMs       Range `json:"draft_ms"`
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
	Verdict    string      `json:"verdict"`
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
	plain, plainAR, miss := forward(in, c, 1)
	p.Missing = append(p.Missing, miss...)
	p.DecodeStepMs, p.DecodeAllReduceMs = plain.Scale(1e-3), plainAR.Scale(1e-3)
	if !c.Speculative() {
		if len(p.Missing) == 0 {
			p.TokensPerStep = Exact(1)
			p.StepMs = p.DecodeStepMs
			p.TokS = perSecond(Exact(1), plain)
			p.BaselineTokS = p.TokS
			p.Speedup = Exact(1)
			p.Verdict = stepstats.NoSpec
		}
		return p
	}
	acc := in.Accept.For(c.DrafterKey(), c.Drafter, c.K, c.Tree)
	p.Acceptance = &acc
	verify, ar, miss := forward(in, c, c.VerifyTokens())
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
		f, _, miss := forward(in, c, 1+n)
		p.Missing = append(p.Missing, miss...)
		fwd = fwd.Add(f.Scale(share))
	}
	if len(p.Missing) > 0 {
		return p
	}
	step := draft.Add(fwd)
	p.StepMs = step.Scale(1e-3)
	p.TokensPerStep = acc.TokensPerStep
	p.TokS = perSecond(acc.TokensPerStep, step)
	p.BaselineTokS = perSecond(Exact(1), plain)
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
// and the allreduce part of it: the timed forward at this TP size (made
// with a reference backend), with the reference's allreduce calls swapped
// for this backend's from the table. What stays of the timed forward (the
// compute, and the ranks' waits for each other) is this TP size's and
// does not depend on the backend.
func forward(in Inputs, c Config, tokens int) (fwd, ar Range, missing []Missing) {
	wall, ref, miss := in.Compute.Lookup(in.Shape.Key, c.Device, c.TP, tokens)
	if miss != nil {
		return Range{}, Range{}, []Missing{*miss}
	}
	if c.TP == 1 {
		return wall, Range{}, nil
	}
	bytes := in.Shape.MessageBytes(tokens)
	n := float64(in.Shape.AllReduces())
	arB, missB := allReduce(in, c.Device, c.TP, c.Backend, bytes)
	arRef, missRef := allReduce(in, c.Device, c.TP, ref, bytes)
	for _, m := range []*Missing{missB, missRef} {
		if m != nil {
			missing = append(missing, *m)
		}
	}
	if len(missing) > 0 {
		return Range{}, Range{}, missing
	}
	ar = arB.Scale(n)
	if c.Backend == ref {
		return wall, ar, nil
	}
	rest := wall.V - n*arRef.V // the timed forward without its allreduce calls
	rest = max(rest, 0.05*wall.V)
	fwd = Range{rest + ar.V, max(0, wall.Lo-n*arRef.V) + ar.Lo, wall.Hi - n*arRef.V + ar.Hi}
	fwd.Lo = min(max(fwd.Lo, 0), fwd.V)
	fwd.Hi = max(fwd.Hi, fwd.V)
	return fwd, ar, nil
}

// allReduce is one call's time, auto resolved through its table.
func allReduce(in Inputs, device string, ranks int, backend string, bytes int64) (Range, *Missing) {
	if backend == "auto" {
		t := in.Auto[ranks]
		if t == nil || len(t.Rules) == 0 {
			return Range{}, &Missing{Kind: "allreduce", Device: device, TP: ranks, Backend: "auto", Bytes: bytes}
		}
		backend = t.Pick(bytes)
	}
	return in.AllReduce.Lookup(device, ranks, backend, bytes)
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
