package eagle3_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor/cpu"
)

// propRecorder records a drafter's proposals (tokens, parents, probabilities).
type propRecorder struct {
	*eagle3.Drafter
	got []spec.Proposal
}

func (r *propRecorder) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	p, err := r.Drafter.Propose(ctx, seq, req)
	r.got = append(r.got, p)
	return p, err
}

// sameProposal says how a and b differ ("" when equal: tokens, parents
// and every probability to the bit).
func sameProposal(a, b spec.Proposal) string {
	switch {
	case !slices.Equal(a.Tokens, b.Tokens) || !slices.Equal(a.Parent, b.Parent):
		return fmt.Sprintf("tokens %v parents %v, want %v %v", a.Tokens, a.Parent, b.Tokens, b.Parent)
	case len(a.Probs) != len(b.Probs):
		return fmt.Sprintf("%d distributions, want %d", len(a.Probs), len(b.Probs))
	}
	for i := range a.Probs {
		if !slices.Equal(a.Probs[i], b.Probs[i]) {
			return fmt.Sprintf("token %d's distribution differs", i)
		}
	}
	return ""
}

// TestRunnerTreesAndSampledEqualCPU: trees and sampled chains drafted
// through a device runner (here CPUChain: the device's contract on the
// CPU) propose exactly what the drafter's own CPU path proposes, step by
// step and to the bit (the CPU samples over the target vocabulary, the
// runner over the draft vocabulary), and the generations are equal; a
// top-k between the two vocabularies runs on the CPU and is counted.
func TestRunnerTreesAndSampledEqualCPU(t *testing.T) {
	s := newSynth(t)
	const ctxLen = 160
	rt := spec.NewRunnerTarget(model.NewRunner(s.w, ctxLen, nil, cpu.NewPool(1)))
	long := slices.Concat(synthPrompt, synthPrompt, synthPrompt[:9]) // extended when observed
	for _, tc := range []struct {
		prompt   []int32
		k, tree  int
		p        sample.Params
		fallback string // the reason counted, "" for none
	}{
		{prompt: synthPrompt, k: 1, tree: 2},
		{prompt: synthPrompt, k: 3, tree: 2},
		{prompt: synthPrompt, k: 4, tree: 3},
		{prompt: long, k: 5, tree: 3},
		{prompt: synthPrompt, k: 3, tree: 2, p: sample.Params{Temperature: 0.8}}, // a tree ignores the sampler
		{prompt: synthPrompt, k: 1, p: sample.Params{Temperature: 0.8}},
		{prompt: synthPrompt, k: 4, p: sample.Params{Temperature: 0.8}},
		{prompt: long, k: 4, p: sample.Params{Temperature: 1.3, TopK: 20}},
		{prompt: synthPrompt, k: 3, p: sample.Params{Temperature: 0.7, TopP: 0.9}},
		{prompt: synthPrompt, k: 3, p: sample.Params{Temperature: 0.9, TopK: 150, TopP: 0.95}},
		{prompt: synthPrompt, k: 3, p: sample.Params{Temperature: 0.9, TopK: 150}, fallback: "top-k 150 between"},
	} {
		name := fmt.Sprintf("%d-token prompt, k=%d, tree=%d, %+v", len(tc.prompt), tc.k, tc.tree, tc.p)
		gen := func(d spec.Drafter) spec.Result {
			res, err := spec.Generate(context.Background(), rt, tc.prompt, spec.Options{MaxTokens: 24, EOS: -1, K: tc.k, Branch: tc.tree,
				Drafter: d, Sampler: sample.New(tc.p, 11), DraftSeed: 12})
			if err != nil {
				t.Fatalf("%s: Generate: %v", name, err)
			}
			return res
		}
		ref := &propRecorder{Drafter: eagle3.New(s.head, ctxLen, nil)}
		want := gen(ref)
		d := eagle3.New(s.head, ctxLen, nil)
		d.SetDevice(eagle3.NewCPUChain(s.head, ctxLen+spec.MaxK*spec.MaxBranch, nil))
		got := &propRecorder{Drafter: d}
		res := gen(got)
		if !slices.Equal(res.Tokens, want.Tokens) || len(got.got) != len(ref.got) {
			t.Errorf("%s: through the runner %v in %d proposals, CPU %v in %d", name, res.Tokens, len(got.got), want.Tokens, len(ref.got))
			continue
		}
		for i := range got.got {
			if why := sameProposal(got.got[i], ref.got[i]); why != "" {
				t.Errorf("%s: proposal %d through the runner: %s", name, i, why)
				break
			}
		}
		fb := d.Fallbacks()
		switch {
		case tc.fallback == "" && len(fb) != 0:
			t.Errorf("%s: fell back to the CPU: %v", name, fb)
		case tc.fallback != "" && (len(fb) != 1 || !strings.Contains(fmt.Sprint(fb), tc.fallback)):
			t.Errorf("%s: fallbacks %v, want one naming %q", name, fb, tc.fallback)
		}
	}
}

// smallTrees is a tree runner with room for few nodes.
type smallTrees struct{ *eagle3.CPUChain }

func (smallTrees) TreeNodes() int { return 6 }

// TestDeviceTreeLimit: a tree larger than the device runner holds is
// refused by name, not drafted elsewhere.
func TestDeviceTreeLimit(t *testing.T) {
	s := newSynth(t)
	const ctxLen = 96
	rt := spec.NewRunnerTarget(model.NewRunner(s.w, ctxLen, nil, cpu.NewPool(1)))
	for _, tc := range []struct {
		k, tree int
		ok      bool
	}{{3, 2, true}, {2, 3, true}, {4, 2, false}, {3, 3, false}} {
		d := eagle3.New(s.head, ctxLen, nil)
		d.SetDevice(smallTrees{eagle3.NewCPUChain(s.head, ctxLen+spec.MaxK*spec.MaxBranch, nil)})
		_, err := spec.Generate(context.Background(), rt, synthPrompt, spec.Options{MaxTokens: 12, EOS: -1, K: tc.k, Branch: tc.tree, Drafter: d})
		if tc.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "exceeds the device head's 6") {
			t.Errorf("Generate(k=%d, tree=%d) on a runner of 6 nodes: %v, want ok=%v or an error naming the limit", tc.k, tc.tree, err, tc.ok)
		}
	}
}

// TestTreeScores: the scores are the nodes' cumulative log-probabilities:
// negative, and a child's below its parent's.
func TestTreeScores(t *testing.T) {
	s := newSynth(t)
	d := eagle3.New(s.head, 64, nil)
	r := model.NewRunner(s.w, 64, nil, nil)
	r.CaptureLayers = d.FeatureLayers()
	logits := make([]float32, s.w.Cfg.Vocab)
	if err := r.Forward(context.Background(), model.Batch{Tokens: synthPrompt, Logits: model.LogitsLast}, logits); err != nil {
		t.Fatal(err)
	}
	d.Observe(0, synthPrompt, r.Captured)
	p, err := d.Propose(context.Background(), append(slices.Clone(synthPrompt), sample.Argmax(logits)), spec.Request{K: 3, Branch: 2})
	sc := d.TreeScores()
	if err != nil || len(sc) != len(p.Tokens) || len(sc) != 6 {
		t.Fatalf("Propose(tree 2x3) = %d nodes, %d scores, %v", len(p.Tokens), len(sc), err)
	}
	for i, v := range sc {
		if !(v < 0) || p.Parent[i] >= 0 && !(v < sc[p.Parent[i]]) {
			t.Errorf("node %d (parent %d) score %g, scores %v", i, p.Parent[i], v, sc)
		}
	}
}
