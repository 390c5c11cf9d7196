package spec_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/ngram"
)

// aheadTarget plays a device that runs greedy steps enqueued ahead: each
// step runs when it is enqueued (its token fed from the previous step's
// argmax when fed), its id and features wait in a queue until WaitGreedy.
// It fails the test on any misuse of the contract.
type aheadTarget struct {
	*spec.RunnerTarget
	t       *testing.T
	off     bool // Ahead answers false
	queue   []int32
	feats   [][][]float32 // per pending step: its captured features
	cur     [][]float32   // Captured after WaitGreedy
	last    int32         // the argmax of the step enqueued last
	enqueue int
	maxPend int
	bare    int // steps enqueued with the capture set empty
}

func (a *aheadTarget) Ahead() bool { return !a.off }

func (a *aheadTarget) drop() { a.queue, a.feats = a.queue[:0], a.feats[:0] }

func (a *aheadTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	a.drop()
	a.cur = nil
	return a.RunnerTarget.Forward(ctx, b)
}

func (a *aheadTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	a.drop()
	a.cur = nil
	return spec.GreedyIDs(ctx, a.RunnerTarget, b)
}

func (a *aheadTarget) Rewind(n int) error { a.drop(); return a.RunnerTarget.Rewind(n) }

func (a *aheadTarget) Captured() [][]float32 {
	if a.cur != nil {
		return a.cur
	}
	return a.RunnerTarget.Captured()
}

func (a *aheadTarget) EnqueueGreedy(ctx context.Context, next int32, fed bool) error {
	switch {
	case a.off:
		a.t.Error("EnqueueGreedy while Ahead is false")
	case len(a.queue) == 2:
		a.t.Error("a third greedy step enqueued")
	case fed && len(a.queue) == 0:
		a.t.Error("a step fed from no pending step")
	}
	if fed {
		next = a.last
	}
	if len(a.R.CaptureLayers) == 0 {
		a.bare++
	}
	ids, err := spec.GreedyIDs(ctx, a.RunnerTarget, model.Batch{Tokens: []int32{next}, Logits: model.LogitsLast})
	if err != nil {
		return err
	}
	var f [][]float32
	for _, c := range a.RunnerTarget.Captured() {
		f = append(f, slices.Clone(c))
	}
	a.last = ids[0]
	a.queue, a.feats = append(a.queue, ids[0]), append(a.feats, f)
	a.enqueue++
	a.maxPend = max(a.maxPend, len(a.queue))
	return nil
}

func (a *aheadTarget) WaitGreedy(context.Context) (int32, error) {
	if len(a.queue) == 0 {
		return 0, errors.New("WaitGreedy with no step pending")
	}
	id := a.queue[0]
	a.cur = a.feats[0]
	a.queue, a.feats = a.queue[1:], a.feats[1:]
	return id, nil
}

// Plain greedy decoding through an AheadTarget gives plainStep's tokens,
// stop reason and cache length for every way a generation ends, keeps two
// steps in flight, and rewinds the step it did not need.
func TestAheadEqualsPlain(t *testing.T) {
	src := synth(t, "tiny")
	eosRun := plain(t, spec.NewRunnerTarget(runner(t, src, 160)), prompt, 30)
	eos := eosRun[9]
	stopAt := eosRun[5]
	cases := []struct {
		name   string
		ctxLen int
		o      spec.Options
	}{
		{"max tokens", 160, spec.Options{MaxTokens: 24, EOS: -1}},
		{"one token", 160, spec.Options{MaxTokens: 1, EOS: -1}},
		{"two tokens", 160, spec.Options{MaxTokens: 2, EOS: -1}},
		{"eos", 160, spec.Options{MaxTokens: 30, EOS: eos}},
		{"context", len(prompt) + 6, spec.Options{MaxTokens: 30, EOS: -1}},
		{"stop", 160, spec.Options{MaxTokens: 30, EOS: -1, Stop: func(ids []int32, _ bool) (int, bool) {
			i := slices.Index(ids, stopAt)
			return i + 1, i >= 0
		}}},
	}
	for _, c := range cases {
		ref := spec.NewRunnerTarget(runner(t, src, c.ctxLen))
		want, err := spec.Generate(context.Background(), ref, prompt, c.o)
		if err != nil {
			t.Fatal(err)
		}
		at := &aheadTarget{RunnerTarget: spec.NewRunnerTarget(runner(t, src, c.ctxLen)), t: t}
		got, err := spec.Generate(context.Background(), at, prompt, c.o)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !slices.Equal(got.Tokens, want.Tokens) || got.StopReason != want.StopReason:
			t.Errorf("%s: ahead %v (%s), one step at a time %v (%s)", c.name, got.Tokens, got.StopReason, want.Tokens, want.StopReason)
		case at.Len() != ref.Len():
			t.Errorf("%s: ahead leaves %d cached positions, one step at a time %d", c.name, at.Len(), ref.Len())
		case len(want.Tokens) > 1 && at.enqueue < len(want.Tokens)-1:
			t.Errorf("%s: %d steps enqueued ahead for %d tokens", c.name, at.enqueue, len(want.Tokens))
		case len(want.Tokens) > 2 && at.maxPend != 2:
			t.Errorf("%s: at most %d steps pending, want 2", c.name, at.maxPend)
		}
	}
	at := &aheadTarget{RunnerTarget: spec.NewRunnerTarget(runner(t, src, 160)), t: t, off: true}
	if got, err := spec.Generate(context.Background(), at, prompt, spec.Options{MaxTokens: 8, EOS: -1}); err != nil || !slices.Equal(got.Tokens, eosRun[:8]) {
		t.Errorf("with Ahead false: %v, %v; want %v", got.Tokens, err, eosRun[:8])
	}
}

// A speculative run's baseline steps through an AheadTarget are the second
// of two plain tokens decoded ahead, without feature capture (as a plain
// run); the output stays greedy, and a feature drafter still observes
// every cached position once, in order.
func TestAheadBaseline(t *testing.T) {
	src := synth(t, "tiny")
	want := plain(t, spec.NewRunnerTarget(runner(t, src, 256)), prompt, 80)
	ng, _ := ngram.New(1, 3)
	for _, features := range []bool{false, true} {
		at := &aheadTarget{RunnerTarget: spec.NewRunnerTarget(runner(t, src, 256)), t: t}
		var d spec.Drafter = ng
		rec := &recorder{Drafter: ng, t: t, layers: []int{0, 1}}
		if features {
			d = rec
		}
		var steps []spec.StepInfo
		res, err := spec.Generate(context.Background(), at, prompt, spec.Options{MaxTokens: 80, EOS: -1, K: 3, Drafter: d, MeasureBaseline: true,
			Step: func(st spec.StepInfo) { steps = append(steps, st) }})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, want) {
			t.Errorf("features %v: %v, plain greedy %v", features, res.Tokens, want)
		}
		n := 0
		for i, st := range steps {
			if !st.Baseline {
				continue
			}
			n++
			if st.Tokens != 1 || st.Drafted != 0 || i == 0 || steps[i-1].Drafted != 0 || steps[i-1].Baseline {
				t.Errorf("features %v: baseline step %d = %+v after %+v; want the second of two plain steps", features, i, st.Step, steps[i-1].Step)
			}
		}
		if n == 0 || res.Counts.Base.N != n || at.enqueue == 0 {
			t.Errorf("features %v: %d baseline steps (tally %d), %d steps enqueued ahead", features, n, res.Counts.Base.N, at.enqueue)
		}
		// A plain run captures no features, nor do the baseline tokens.
		if features && at.bare != 2*n {
			t.Errorf("%d steps enqueued ahead without feature capture, want the %d of %d baseline segments", at.bare, 2*n, n)
		}
		if all := append(slices.Clone(prompt), res.Tokens...); features && !slices.Equal(rec.seen, all[:at.Len()]) {
			t.Errorf("observed %v, the target cached %v", rec.seen, all[:at.Len()])
		}
	}
}
