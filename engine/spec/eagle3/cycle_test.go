package eagle3_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor/cpu"
)

// cycleTarget plays a device that keeps the speculative step
// (spec.CycleVerifier) with the drafter's CPUChain as its head: each
// enqueued step verifies, accepts, and drafts the next chain from the
// verify's features at once (the extended rows of the kept positions, as
// the device's cycle leaves them), then waits for WaitCycle.
type cycleTarget struct {
	chainTarget
	cc        *eagle3.CPUChain
	layers    []int
	queue     []spec.CycleStep
	feats     [][][]float32
	cur       [][]float32
	next      int32
	chain     []int32
	committed int
	cycling   bool
	steps     int
}

func (c *cycleTarget) Len() int {
	if c.cycling {
		return c.committed
	}
	return c.RunnerTarget.Len()
}

func (c *cycleTarget) Captured() [][]float32 {
	if c.cur != nil {
		return c.cur
	}
	return c.RunnerTarget.Captured()
}

func (c *cycleTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	c.cur = nil
	return c.RunnerTarget.Forward(ctx, b)
}

func (c *cycleTarget) VerifyChain(ctx context.Context, next int32, p spec.PendingChain) ([]int32, []int32, error) {
	c.cur = nil
	return c.chainTarget.VerifyChain(ctx, next, p)
}

func (c *cycleTarget) EnqueueCycle(ctx context.Context, next int32, p spec.PendingChain) (bool, error) {
	if p != nil {
		c.next, c.chain, c.committed, c.cycling = next, p.(*eagle3.CPUPending).Tokens(), c.RunnerTarget.Len(), true
	}
	k, base := len(c.chain), c.RunnerTarget.Len()
	ids, err := spec.GreedyIDs(ctx, c.RunnerTarget, model.Batch{Tokens: append([]int32{c.next}, c.chain...), Logits: model.LogitsAll})
	if err != nil {
		return false, err
	}
	acc := 0
	for acc < k && c.chain[acc] == ids[acc] {
		acc++
	}
	captured := c.RunnerTarget.Captured()
	dim := len(captured[0]) / (k + 1)
	var f [][]float32
	feats := make([]float32, 0, (acc+1)*len(captured)*dim) // (acc+1, layers*dim) by position
	for _, x := range captured {
		f = append(f, slices.Clone(x))
	}
	for r := 0; r <= acc; r++ {
		for _, x := range captured {
			feats = append(feats, x[r*dim:(r+1)*dim]...)
		}
	}
	if err := c.RunnerTarget.Rewind(base + 1 + acc); err != nil {
		return false, err
	}
	chain, err := c.cc.GreedyChain(ctx, base, ids[:acc+1], feats, k)
	if err != nil {
		return false, err
	}
	c.next, c.chain = ids[acc], slices.Clone(chain)
	c.queue = append(c.queue, spec.CycleStep{Base: base, IDs: slices.Clone(ids[:acc+1]), Accepted: acc, Drafted: k})
	c.feats = append(c.feats, f)
	c.steps++
	return true, nil
}

func (c *cycleTarget) WaitCycle(context.Context) (spec.CycleStep, error) {
	if len(c.queue) == 0 {
		return spec.CycleStep{}, errors.New("no cycle step pending")
	}
	cs := c.queue[0]
	c.cur, c.queue, c.feats = c.feats[0], c.queue[1:], c.feats[1:]
	c.committed = cs.Base + cs.Accepted + 1
	return cs, nil
}

func (c *cycleTarget) DropCycle() error {
	c.queue, c.feats = nil, nil
	if !c.cycling {
		return nil
	}
	c.cycling = false
	return c.RunnerTarget.Rewind(c.committed)
}

// TestCycleEqualsHostDriven: greedy chains kept "on the device" by a
// CycleVerifier (the drafter told of each step's extended rows) propose
// and accept exactly what host-driven steps do, and host-driven chains
// after a cycle (a baseline step, the context's end) continue from the
// device rows the drafter was told of.
func TestCycleEqualsHostDriven(t *testing.T) {
	s := newSynth(t)
	for _, tc := range []struct {
		ctxLen, maxTok, k int
		baseline          bool
	}{{160, 40, 3, false}, {160, 60, 4, true}, {len(synthPrompt) + 30, 60, 4, false}, {160, 30, 1, true}} {
		name := fmt.Sprintf("ctx %d, %d tokens, k=%d, baseline %v", tc.ctxLen, tc.maxTok, tc.k, tc.baseline)
		o := spec.Options{MaxTokens: tc.maxTok, EOS: -1, K: tc.k, MeasureBaseline: tc.baseline}
		run := func(tgt spec.Target, d *eagle3.Drafter) (spec.Result, []spec.StepInfo) {
			var steps []spec.StepInfo
			o.Drafter, o.Step = d, func(st spec.StepInfo) { steps = append(steps, st) }
			res, err := spec.Generate(context.Background(), tgt, synthPrompt, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return res, steps
		}
		newDrafter := func() (*eagle3.Drafter, *eagle3.CPUChain) {
			d := eagle3.New(s.head, tc.ctxLen, nil)
			cc := eagle3.NewCPUChain(s.head, tc.ctxLen+spec.MaxK*spec.MaxBranch, nil)
			d.SetDevice(cc)
			return d, cc
		}
		rt := func() *spec.RunnerTarget {
			return spec.NewRunnerTarget(model.NewRunner(s.w, tc.ctxLen, nil, cpu.NewPool(1)))
		}
		plain, err := spec.Generate(context.Background(), rt(), synthPrompt, spec.Options{MaxTokens: tc.maxTok, EOS: -1})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := newDrafter()
		want, wantSteps := run(&chainTarget{RunnerTarget: rt()}, d)
		d, cc := newDrafter()
		ct := &cycleTarget{chainTarget: chainTarget{RunnerTarget: rt()}, cc: cc}
		got, gotSteps := run(ct, d)
		accepted := func(steps []spec.StepInfo) (a []int) {
			for _, st := range steps {
				if !st.Baseline {
					a = append(a, st.Accepted)
				}
			}
			return a
		}
		switch {
		case !slices.Equal(got.Tokens, plain.Tokens) || !slices.Equal(want.Tokens, plain.Tokens):
			t.Errorf("%s: cycle %v, host-driven %v, plain greedy %v", name, got.Tokens, want.Tokens, plain.Tokens)
		case ct.steps == 0:
			t.Errorf("%s: no step went through the cycle", name)
		case tc.maxTok >= 60 && !slices.Equal(accepted(gotSteps), accepted(wantSteps)):
			// (short runs differ at the end: the cycle drafts k where the host shortens the last chain)
			t.Errorf("%s: accepted per step %v through the cycle, %v host-driven", name, accepted(gotSteps), accepted(wantSteps))
		}
	}
}
