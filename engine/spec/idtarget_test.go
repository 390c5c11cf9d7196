package spec_test

import (
	"context"
	"slices"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/ngram"
)

// idTarget is a target with its own argmax, as a GPU target has: it counts
// which of the two forwards the loop calls.
type idTarget struct {
	spec.Target
	forwards, idForwards int
}

func (t *idTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	t.forwards++
	return t.Target.Forward(ctx, b)
}

func (t *idTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	t.idForwards++
	logits, err := t.Target.Forward(ctx, b)
	if err != nil {
		return nil, err
	}
	v := t.Vocab()
	ids := make([]int32, len(logits)/v)
	for r := range ids {
		row := logits[r*v : (r+1)*v]
		for i, x := range row {
			if x > row[ids[r]] {
				ids[r] = int32(i)
			}
		}
	}
	return ids, nil
}

// At temperature 0 every forward goes through the target's own argmax (a
// GPU copies back 4 bytes a row, not the logits) and the output equals
// plain greedy decoding over the logits; at temperature > 0 the loop needs
// the logits and never asks for ids.
func TestIDTargetGreedy(t *testing.T) {
	const ctxLen, n = 160, 24
	base := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), ctxLen))
	want := plain(t, base, prompt, n)
	ng, err := ngram.New(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		drafter spec.Drafter
		k, tree int
	}{
		{"plain", nil, 0, 0},
		{"ngram chain", ng, 4, 0},
		{"ngram tree", ng, 3, 2},
	}
	for _, c := range cases {
		tgt := &idTarget{Target: base}
		res, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: n, EOS: -1, K: c.k, Branch: c.tree, Drafter: c.drafter})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(res.Tokens, want) {
			t.Errorf("%s: greedy through ForwardIDs = %v, over logits = %v", c.name, res.Tokens, want)
		}
		if tgt.forwards != 0 || tgt.idForwards == 0 {
			t.Errorf("%s: greedy called Forward %d times and ForwardIDs %d times; want only ForwardIDs", c.name, tgt.forwards, tgt.idForwards)
		}
	}
	tgt := &idTarget{Target: base}
	smp := sample.New(sample.Params{Temperature: 0.8}, 1)
	if _, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: n, EOS: -1, Sampler: smp, K: 4, Drafter: ng}); err != nil {
		t.Fatal(err)
	}
	if tgt.idForwards != 0 || tgt.forwards == 0 {
		t.Errorf("sampling called ForwardIDs %d times and Forward %d times; want only Forward", tgt.idForwards, tgt.forwards)
	}
}
