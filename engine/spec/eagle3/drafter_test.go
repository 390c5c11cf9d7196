package eagle3_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor/cpu"
)

// synthSetup is a synthetic 4-layer target with a random head.
type synthSetup struct {
	w    *model.Weights
	head *eagle3.Head
}

func newSynth(t testing.TB) synthSetup {
	t.Helper()
	src := target4(t)
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	head, err := eagle3.Load(newHeadSpec(src.Config(), 100, 3).write(t), src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { head.Close() })
	return synthSetup{w: w, head: head}
}

var synthPrompt = []int32{1, 40, 41, 42, 43, 7, 9, 40, 41, 42, 43, 7, 100, 200, 40, 41}

// TestGreedyEqualsPlain: greedy decoding with the head, chains k = 1..8
// and trees, emits exactly the target's plain greedy tokens.
func TestGreedyEqualsPlain(t *testing.T) {
	s := newSynth(t)
	const ctxLen, n = 128, 24
	tgt := spec.NewRunnerTarget(model.NewRunner(s.w, ctxLen, nil, cpu.NewPool(1)))
	plain, err := spec.Generate(context.Background(), tgt, synthPrompt, spec.Options{MaxTokens: n, EOS: -1})
	if err != nil {
		t.Fatal(err)
	}
	d := eagle3.New(s.head, ctxLen, nil)
	for _, branch := range []int{0, 2, 3} {
		for k := 1; k <= 8; k++ {
			res, err := spec.Generate(context.Background(), tgt, synthPrompt, spec.Options{MaxTokens: n, EOS: -1, K: k, Branch: branch, Drafter: d})
			if err != nil {
				t.Fatalf("Generate(eagle3, k=%d, tree=%d): %v", k, branch, err)
			}
			if !slices.Equal(res.Tokens, plain.Tokens) {
				t.Errorf("Generate(eagle3, k=%d, tree=%d) = %v, plain greedy = %v", k, branch, res.Tokens, plain.Tokens)
			}
			if res.Counts.Drafts == 0 {
				t.Errorf("Generate(eagle3, k=%d, tree=%d): no speculative step", k, branch)
			}
		}
	}
}

// checker wraps the drafter: at every Propose it also drafts from scratch
// (a fresh drafter that observes every feature at once) and compares, so
// the incremental cache (extend rows, discarded draft rows, tree slots)
// must give what a full recomputation gives.
type checker struct {
	*eagle3.Drafter
	t      *testing.T
	fresh  *eagle3.Drafter
	feats  [][]float32 // per layer, (positions, dim) everything observed
	toks   []int32
	dim    int
	checks int
}

func (c *checker) Observe(pos int, tokens []int32, feats [][]float32) {
	c.Drafter.Observe(pos, tokens, feats)
	c.toks = append(c.toks[:pos], tokens...)
	if c.feats == nil {
		c.feats = make([][]float32, len(feats))
	}
	for l, f := range feats {
		c.feats[l] = append(c.feats[l][:pos*c.dim], f[:len(tokens)*c.dim]...)
	}
}

func (c *checker) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	got, err := c.Drafter.Propose(ctx, seq, req)
	if err != nil {
		return got, err
	}
	c.fresh.Reset()
	c.fresh.Observe(0, c.toks, c.feats)
	want, err := c.fresh.Propose(ctx, seq, req)
	if err != nil {
		c.t.Fatalf("fresh Propose(%d tokens, %+v): %v", len(seq), req, err)
	}
	if !slices.Equal(got.Tokens, want.Tokens) || !slices.Equal(got.Parent, want.Parent) {
		c.t.Errorf("Propose(%d tokens, k=%d, tree=%d) incrementally = %v %v, from scratch = %v %v", len(seq), req.K, req.Branch, got.Tokens, got.Parent, want.Tokens, want.Parent)
	}
	c.checks++
	return got, nil
}

func TestIncrementalEqualsFresh(t *testing.T) {
	s := newSynth(t)
	const ctxLen = 128
	tgt := spec.NewRunnerTarget(model.NewRunner(s.w, ctxLen, nil, cpu.NewPool(1)))
	for _, branch := range []int{0, 2} {
		for _, k := range []int{1, 3, 6} {
			c := &checker{Drafter: eagle3.New(s.head, ctxLen, nil), fresh: eagle3.New(s.head, ctxLen, nil), t: t, dim: s.w.Cfg.Dim}
			if _, err := spec.Generate(context.Background(), tgt, synthPrompt, spec.Options{MaxTokens: 20, EOS: -1, K: k, Branch: branch, Drafter: c}); err != nil {
				t.Fatalf("Generate(k=%d, tree=%d): %v", k, branch, err)
			}
			if c.checks == 0 {
				t.Errorf("Generate(k=%d, tree=%d): Propose never called", k, branch)
			}
		}
	}
}

// TestProposeNeedsFeatures: a drafter that was not shown the target's
// features says so instead of drafting from stale ones.
func TestProposeNeedsFeatures(t *testing.T) {
	s := newSynth(t)
	d := eagle3.New(s.head, 64, nil)
	_, err := d.Propose(context.Background(), synthPrompt, spec.Request{K: 2})
	if err == nil || !strings.Contains(err.Error(), "Observe") {
		t.Errorf("Propose without features = %v, want an error about Observe", err)
	}
	dim := s.w.Cfg.Dim
	feats := [][]float32{make([]float32, 4*dim), make([]float32, 4*dim), make([]float32, 4*dim)}
	d.Observe(4, synthPrompt[4:8], feats) // positions 0..3 never observed
	if _, err := d.Propose(context.Background(), synthPrompt[:9], spec.Request{K: 2}); err == nil || !strings.Contains(err.Error(), "never observed") {
		t.Errorf("Propose after a gap in the features = %v, want an error naming the gap", err)
	}
	d.Reset()
	d.Observe(0, synthPrompt[:4], feats[:2])
	if _, err := d.Propose(context.Background(), synthPrompt[:5], spec.Request{K: 2}); err == nil || !strings.Contains(err.Error(), "2 layers") {
		t.Errorf("Propose after features of 2 layers = %v, want an error naming the layer count", err)
	}
	d.Reset()
	d.Observe(0, synthPrompt[:4], feats)
	p, err := d.Propose(context.Background(), synthPrompt[:5], spec.Request{K: 3, Branch: 2})
	if err != nil || len(p.Tokens) != 6 {
		t.Errorf("Propose(tree 2x3) after Observe = %d nodes, %v; want 6 nodes", len(p.Tokens), err)
	}
	for i, x := range p.Tokens {
		if x%2 != 0 || x < 2 || x > 200 {
			t.Errorf("Propose: node %d = target id %d, outside the head's draft vocabulary (even ids 2..200)", i, x)
		}
	}
}

// TestSampledChainProbs: with a sampler the chain reports q over the
// target vocabulary, zero outside the draft vocabulary, and the loop runs.
func TestSampledChainProbs(t *testing.T) {
	s := newSynth(t)
	const ctxLen = 96
	tgt := spec.NewRunnerTarget(model.NewRunner(s.w, ctxLen, nil, cpu.NewPool(1)))
	d := eagle3.New(s.head, ctxLen, nil)
	params := sample.Params{Temperature: 0.8, TopK: 20}
	res, err := spec.Generate(context.Background(), tgt, synthPrompt, spec.Options{
		MaxTokens: 16, EOS: -1, K: 3, Drafter: d, Sampler: sample.New(params, 1), DraftSeed: 2,
	})
	if err != nil || len(res.Tokens) != 16 {
		t.Fatalf("Generate(sampled, k=3) = %d tokens, %v", len(res.Tokens), err)
	}
	d.Reset()
	// Observe a prompt through a plain generation, then sample a chain.
	r := model.NewRunner(s.w, ctxLen, nil, nil)
	r.CaptureLayers = d.FeatureLayers()
	logits := make([]float32, s.w.Cfg.Vocab)
	if err := r.Forward(context.Background(), model.Batch{Tokens: synthPrompt, Logits: model.LogitsLast}, logits); err != nil {
		t.Fatal(err)
	}
	d.Observe(0, synthPrompt, r.Captured)
	seq := append(slices.Clone(synthPrompt), sample.Argmax(logits))
	p, err := d.Propose(context.Background(), seq, spec.Request{K: 3, Sampler: sample.New(params, 3)})
	if err != nil || len(p.Tokens) != 3 || len(p.Probs) != 3 {
		t.Fatalf("Propose(sampled chain of 3) = %d tokens, %d probs, %v", len(p.Tokens), len(p.Probs), err)
	}
	for i, q := range p.Probs {
		var sum float64
		for id, v := range q {
			sum += float64(v)
			if v != 0 && (id%2 != 0 || id < 2 || id > 200) {
				t.Errorf("Probs[%d][%d] = %g outside the draft vocabulary", i, id, v)
			}
		}
		if math.Abs(sum-1) > 1e-4 || q[p.Tokens[i]] == 0 {
			t.Errorf("Probs[%d] sums to %g, q(token %d) = %g", i, sum, p.Tokens[i], q[p.Tokens[i]])
		}
	}
}

// countingChain counts a chain runner's calls.
type countingChain struct {
	*eagle3.CPUChain
	extends, chains int
}

func (c *countingChain) Extend(ctx context.Context, first int, tokens []int32, feats []float32) error {
	c.extends++
	return c.CPUChain.Extend(ctx, first, tokens, feats)
}

func (c *countingChain) GreedyChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) ([]int32, error) {
	c.chains++
	return c.CPUChain.GreedyChain(ctx, first, tokens, feats, k)
}

func (c *countingChain) EnqueueChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) (spec.PendingChain, error) {
	c.chains++
	return c.CPUChain.EnqueueChain(ctx, first, tokens, feats, k)
}

// proposals records a drafter's proposals.
type proposals struct {
	*eagle3.Drafter
	got [][]int32
}

func (p *proposals) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	prop, err := p.Drafter.Propose(ctx, seq, req)
	p.got = append(p.got, prop.Tokens)
	return prop, err
}

// chainTarget verifies CPUChain's pending chains (spec.ChainVerifier), as
// a device target reads a device head's, and records them.
type chainTarget struct {
	*spec.RunnerTarget
	props [][]int32
}

func (t *chainTarget) VerifyChain(ctx context.Context, next int32, p spec.PendingChain) ([]int32, []int32, error) {
	drafts := p.(*eagle3.CPUPending).Tokens()
	t.props = append(t.props, drafts)
	ids, err := spec.GreedyIDs(ctx, t.RunnerTarget, model.Batch{Tokens: append([]int32{next}, drafts...), Logits: model.LogitsAll})
	return ids, drafts, err
}

// TestChainRunnerEqualsCPU: greedy chains drafted through a ChainRunner
// (the device path; here the CPU one) propose exactly what the drafter's
// own chains propose, step by step, for short prompts (extended at the
// first Propose) and long ones (extended when observed: prefill work, so
// the first chain runs one row), read back by the drafter or left "on the
// device" for the target's verify (ProposeOnDevice, VerifyChain).
func TestChainRunnerEqualsCPU(t *testing.T) {
	s := newSynth(t)
	const ctxLen = 160
	rt := spec.NewRunnerTarget(model.NewRunner(s.w, ctxLen, nil, cpu.NewPool(1)))
	long := slices.Concat(synthPrompt, synthPrompt, synthPrompt[:9]) // 41 tokens: more rows than eagerRows
	for _, tc := range []struct {
		prompt  []int32
		k       int
		pending bool
	}{
		{synthPrompt, 1, false}, {synthPrompt, 3, false}, {synthPrompt, 5, false},
		{long, 1, false}, {long, 3, false}, {long, 5, false},
		{synthPrompt, 4, true}, {long, 1, true}, {long, 4, true},
	} {
		name := fmt.Sprintf("%d-token prompt, k=%d, pending %v", len(tc.prompt), tc.k, tc.pending)
		gen := func(tgt spec.Target, d spec.Drafter) spec.Result {
			res, err := spec.Generate(context.Background(), tgt, tc.prompt, spec.Options{MaxTokens: 24, EOS: -1, K: tc.k, Drafter: d})
			if err != nil {
				t.Fatalf("%s: Generate: %v", name, err)
			}
			return res
		}
		ref := &proposals{Drafter: eagle3.New(s.head, ctxLen, nil)}
		want := gen(rt, ref)
		d := eagle3.New(s.head, ctxLen, nil)
		cc := &countingChain{CPUChain: eagle3.NewCPUChain(s.head, ctxLen+spec.MaxK*spec.MaxBranch, nil)}
		d.SetDevice(cc)
		var got spec.Result
		var props [][]int32
		if tc.pending {
			ct := &chainTarget{RunnerTarget: rt}
			got, props = gen(ct, d), ct.props
		} else {
			p := &proposals{Drafter: d}
			got, props = gen(rt, p), p.got
		}
		if !slices.Equal(got.Tokens, want.Tokens) || !slices.EqualFunc(props, ref.got, slices.Equal) {
			t.Errorf("%s: through the runner %v proposed %v, CPU chains %v proposed %v", name, got.Tokens, props, want.Tokens, ref.got)
		}
		wantExt := 0
		if len(tc.prompt) > 18 {
			wantExt = 1
		}
		if cc.extends != wantExt || cc.chains == 0 {
			t.Errorf("%s: %d extensions when observed (want %d), %d chains", name, cc.extends, wantExt, cc.chains)
		}
	}
}
