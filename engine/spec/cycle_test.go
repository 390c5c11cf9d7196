package spec_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/spec"
)

// cycleChain is a chain the test's drafter left "on the device", with the
// sequence it continues.
type cycleChain struct{ seq, toks []int32 }

func (c *cycleChain) Len() int { return len(c.toks) }

// cycleDrafter drafts the greedy continuation (want after prompt) with a
// wrong token wherever the position is 3 mod 5, on the host (Propose) and
// on the "device" (ProposeOnDevice, and the cycle target's next chains).
// It observes features as a FeatureDrafter and checks ExtendedOnDevice's
// positions.
type cycleDrafter struct {
	t            *testing.T
	prompt, want []int32
	vocab        int
	seen         []int32 // observed tokens, by position
	expect       int     // the position ExtendedOnDevice must report next
	extended     int     // rows it reported
}

func (d *cycleDrafter) Name() string         { return "cycle-test" }
func (d *cycleDrafter) Accept([]int)         {}
func (d *cycleDrafter) Reset()               {}
func (d *cycleDrafter) FeatureLayers() []int { return []int{0, 1} }

func (d *cycleDrafter) chain(seq []int32, k int) []int32 {
	out := make([]int32, k)
	for i := range out {
		n := len(seq) + i
		if j := n - len(d.prompt); j < len(d.want) {
			out[i] = d.want[j]
		}
		if n%5 == 3 {
			out[i] = (out[i] + 1) % int32(d.vocab)
		}
	}
	return out
}

func (d *cycleDrafter) Propose(_ context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	return spec.Proposal{Tokens: d.chain(seq, req.K)}, nil
}

func (d *cycleDrafter) ProposeOnDevice(_ context.Context, seq []int32, req spec.Request) (spec.PendingChain, error) {
	d.expect = len(seq) - 1
	return &cycleChain{seq: slices.Clone(seq), toks: d.chain(seq, req.K)}, nil
}

func (d *cycleDrafter) ExtendedOnDevice(pos int, tokens []int32) {
	if pos != d.expect || len(tokens) == 0 {
		d.t.Errorf("ExtendedOnDevice(%d, %d tokens), want position %d", pos, len(tokens), d.expect)
	}
	d.expect = pos + len(tokens)
	d.extended += len(tokens)
}

func (d *cycleDrafter) Observe(pos int, tokens []int32, feats [][]float32) {
	if pos != len(d.seen) {
		d.t.Errorf("Observe(pos=%d) after %d observed positions", pos, len(d.seen))
	}
	for l, f := range feats {
		if len(f) != len(tokens)*64 {
			d.t.Errorf("Observe: layer %d features hold %d floats for %d tokens of dim 64", l, len(f), len(tokens))
		}
	}
	d.seen = append(d.seen[:min(pos, len(d.seen))], tokens...)
}

// cycleTarget plays a device that keeps the speculative step: each step
// runs when enqueued (verify, acceptance, the drafter's next chain), and
// waits in a queue until WaitCycle. Len is the positions of the steps
// read; it fails the test on any misuse of the contract.
type cycleTarget struct {
	*spec.RunnerTarget
	t         *testing.T
	d         *cycleDrafter
	refuse    bool
	queue     []spec.CycleStep
	feats     [][][]float32
	cur       [][]float32
	seq       []int32 // the device's sequence (its last token not cached)
	chain     []int32 // the next verify's drafts
	committed int
	cycling   bool
	enqueue   int
	maxPend   int
}

func (c *cycleTarget) busy(what string) {
	if len(c.queue) > 0 || c.cycling {
		c.t.Errorf("%s with the cycle running (%d steps pending)", what, len(c.queue))
	}
	c.cur = nil
}

func (c *cycleTarget) Len() int {
	if c.cycling {
		return c.committed
	}
	return c.RunnerTarget.Len()
}

func (c *cycleTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	c.busy("Forward")
	return c.RunnerTarget.Forward(ctx, b)
}

func (c *cycleTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	c.busy("ForwardIDs")
	return spec.GreedyIDs(ctx, c.RunnerTarget, b)
}

func (c *cycleTarget) Rewind(n int) error { c.busy("Rewind"); return c.RunnerTarget.Rewind(n) }

func (c *cycleTarget) Captured() [][]float32 {
	if c.cur != nil {
		return c.cur
	}
	return c.RunnerTarget.Captured()
}

func (c *cycleTarget) VerifyChain(ctx context.Context, next int32, p spec.PendingChain) ([]int32, []int32, error) {
	c.busy("VerifyChain")
	ch := p.(*cycleChain)
	ids, err := spec.GreedyIDs(ctx, c.RunnerTarget, model.Batch{Tokens: append([]int32{next}, ch.toks...), Logits: model.LogitsAll})
	return ids, ch.toks, err
}

func (c *cycleTarget) EnqueueCycle(ctx context.Context, next int32, p spec.PendingChain) (bool, error) {
	switch {
	case p != nil && (len(c.queue) > 0 || c.cycling):
		c.t.Error("a cycle started with steps pending")
	case p == nil && len(c.queue) == 0:
		c.t.Error("a cycle step fed from no pending step")
	case len(c.queue) == 2:
		c.t.Error("a third cycle step enqueued")
	}
	if p != nil {
		if c.refuse {
			return false, nil
		}
		ch := p.(*cycleChain)
		c.seq, c.chain, c.committed, c.cycling = ch.seq, ch.toks, c.RunnerTarget.Len(), true
		if ch.seq[len(ch.seq)-1] != next {
			c.t.Errorf("cycle started with next %d after a sequence ending in %d", next, ch.seq[len(ch.seq)-1])
		}
	}
	k := len(c.chain)
	base := c.RunnerTarget.Len()
	if base+1+k > c.MaxLen() {
		return false, fmt.Errorf("cycle step at %d of %d tokens past the context of %d", base, k+1, c.MaxLen())
	}
	ids, err := spec.GreedyIDs(ctx, c.RunnerTarget, model.Batch{Tokens: append([]int32{c.seq[len(c.seq)-1]}, c.chain...), Logits: model.LogitsAll})
	if err != nil {
		return false, err
	}
	acc := 0
	for acc < k && c.chain[acc] == ids[acc] {
		acc++
	}
	var f [][]float32
	for _, x := range c.RunnerTarget.Captured() {
		f = append(f, slices.Clone(x))
	}
	if err := c.RunnerTarget.Rewind(base + 1 + acc); err != nil {
		return false, err
	}
	c.seq = append(c.seq, ids[:acc+1]...)
	c.chain = c.d.chain(c.seq, k)
	c.queue = append(c.queue, spec.CycleStep{Base: base, IDs: slices.Clone(ids[:acc+1]), Accepted: acc, Drafted: k})
	c.feats = append(c.feats, f)
	c.enqueue++
	c.maxPend = max(c.maxPend, len(c.queue))
	return true, nil
}

func (c *cycleTarget) WaitCycle(context.Context) (spec.CycleStep, error) {
	if len(c.queue) == 0 {
		return spec.CycleStep{}, errors.New("WaitCycle with no step pending")
	}
	cs := c.queue[0]
	c.cur = c.feats[0]
	c.queue, c.feats = c.queue[1:], c.feats[1:]
	c.committed = cs.Base + cs.Accepted + 1
	return cs, nil
}

func (c *cycleTarget) DropCycle() error {
	c.queue, c.feats = c.queue[:0], c.feats[:0]
	if c.cycling {
		c.cycling = false
		return c.RunnerTarget.Rewind(c.committed)
	}
	return nil
}

// Speculative decoding through a CycleVerifier gives the host-driven
// steps' tokens, stop reason and cache length for every way a generation
// ends, keeps two steps in flight, hands the drafter every kept position's
// features once, in order, and falls back to VerifyChain when the cycle
// refuses the chain.
func TestCycleEqualsHostSteps(t *testing.T) {
	src := synth(t, "tiny")
	want := plain(t, spec.NewRunnerTarget(runner(t, src, 512)), prompt, 200)
	vocab := spec.NewRunnerTarget(runner(t, src, 16)).Vocab()
	eos, stopAt := want[40], want[25]
	cases := []struct {
		name   string
		ctxLen int
		refuse bool
		o      spec.Options
	}{
		{"max tokens", 512, false, spec.Options{MaxTokens: 60, EOS: -1, K: 4}},
		{"few tokens", 512, false, spec.Options{MaxTokens: 7, EOS: -1, K: 4}},
		{"k=1", 512, false, spec.Options{MaxTokens: 50, EOS: -1, K: 1}},
		{"eos", 512, false, spec.Options{MaxTokens: 100, EOS: eos, K: 4}},
		{"context", len(prompt) + 41, false, spec.Options{MaxTokens: 100, EOS: -1, K: 4}},
		{"stop", 512, false, spec.Options{MaxTokens: 100, EOS: -1, K: 3, Stop: func(ids []int32, _ bool) (int, bool) {
			i := slices.Index(ids, stopAt)
			return i + 1, i >= 0
		}}},
		{"baseline", 512, false, spec.Options{MaxTokens: 120, EOS: -1, K: 4, MeasureBaseline: true}},
		{"refused", 512, true, spec.Options{MaxTokens: 40, EOS: -1, K: 4}},
	}
	for _, c := range cases {
		refD := &cycleDrafter{t: t, prompt: prompt, want: want, vocab: vocab}
		ref := spec.NewRunnerTarget(runner(t, src, c.ctxLen))
		o := c.o
		o.Drafter = refD
		wantRes, err := spec.Generate(context.Background(), ref, prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		d := &cycleDrafter{t: t, prompt: prompt, want: want, vocab: vocab}
		ct := &cycleTarget{RunnerTarget: spec.NewRunnerTarget(runner(t, src, c.ctxLen)), t: t, d: d, refuse: c.refuse}
		o.Drafter = d
		var steps []spec.StepInfo
		o.Step = func(st spec.StepInfo) { steps = append(steps, st) }
		got, err := spec.Generate(context.Background(), ct, prompt, o)
		all := append(slices.Clone(prompt), got.Tokens...)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !slices.Equal(got.Tokens, wantRes.Tokens) || got.StopReason != wantRes.StopReason:
			t.Errorf("%s: cycle %v (%s), host steps %v (%s)", c.name, got.Tokens, got.StopReason, wantRes.Tokens, wantRes.StopReason)
		case !slices.Equal(got.Tokens, want[:len(got.Tokens)]):
			t.Errorf("%s: cycle %v, plain greedy %v", c.name, got.Tokens, want[:len(got.Tokens)])
		case ct.Len() != len(all)-1 && !c.refuse || c.refuse && ct.Len() != ref.Len():
			t.Errorf("%s: the cycle leaves %d cached positions for %d tokens (host steps %d)", c.name, ct.Len(), len(all), ref.Len())
		case len(d.seen) < ct.Len() || !slices.Equal(d.seen[:ct.Len()], all[:ct.Len()]):
			t.Errorf("%s: observed %v, the target cached %v", c.name, d.seen, all[:ct.Len()])
		case c.refuse && ct.enqueue != 0:
			t.Errorf("%s: %d steps enqueued through a refused cycle", c.name, ct.enqueue)
		case !c.refuse && len(got.Tokens) > 20 && (ct.maxPend != 2 || d.extended == 0):
			t.Errorf("%s: at most %d steps pending (want 2), %d rows extended on the device", c.name, ct.maxPend, d.extended)
		case c.o.MeasureBaseline && got.Counts.Base.N == 0:
			t.Errorf("%s: no baseline steps", c.name)
		}
		drafted, accepted := 0, 0
		for _, st := range steps {
			drafted += st.Drafted
			accepted += st.Accepted
			if st.Tokens > st.Accepted+1 || st.Accepted > st.Drafted {
				t.Errorf("%s: step %+v", c.name, st.Step)
			}
		}
		if drafted == 0 || accepted == 0 {
			t.Errorf("%s: %d drafted, %d accepted", c.name, drafted, accepted)
		}
	}
}
