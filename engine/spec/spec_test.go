package spec_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/draftmodel"
	"rigscope/engine/spec/ngram"
	"rigscope/engine/tensor/cpu"
)

func runner(t testing.TB, src model.WeightSource, ctxLen int) *model.Runner {
	t.Helper()
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	return model.NewRunner(w, ctxLen, nil, cpu.NewPool(1))
}

func synth(t testing.TB, s string) model.WeightSource {
	t.Helper()
	src, err := synthetic.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// A prompt with repeats, so the n-gram drafter finds matches.
var prompt = []int32{1, 40, 41, 42, 43, 7, 9, 40, 41, 42, 43, 7, 100, 200, 40, 41}

func plain(t testing.TB, tgt spec.Target, prompt []int32, n int) []int32 {
	t.Helper()
	res, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: n, EOS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tokens
}

// Greedy speculative decoding must reproduce plain greedy decoding token
// for token, for every drafter, k and tree shape.
func TestGreedyEqualsPlain(t *testing.T) {
	const ctxLen, n = 160, 24
	tgt := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), ctxLen))
	want := plain(t, tgt, prompt, n)
	ng, err := ngram.New(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	drafters := []struct {
		name string
		d    spec.Drafter
	}{
		{"ngram", ng},
		{"model-same", draftmodel.New(spec.NewRunnerTarget(runner(t, synth(t, "tiny"), ctxLen+64)))},
		{"model-other", draftmodel.New(spec.NewRunnerTarget(runner(t, synth(t, "tiny?seed=7&layers=1"), ctxLen+64)))},
	}
	ks, branches := []int{1, 2, 3, 4, 5, 6, 7, 8}, []int{0, 2, 3}
	if raceEnabled {
		ks, branches = []int{1, 3, 8}, []int{0, 2}
	}
	for _, dr := range drafters {
		for _, branch := range branches {
			for _, k := range ks {
				res, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: n, EOS: -1, K: k, Branch: branch, Drafter: dr.d})
				if err != nil {
					t.Fatalf("Generate(%s, k=%d, tree=%d): %v", dr.name, k, branch, err)
				}
				if !slices.Equal(res.Tokens, want) {
					t.Errorf("Generate(%s, k=%d, tree=%d) = %v, plain greedy = %v", dr.name, k, branch, res.Tokens, want)
				}
				c := res.Counts
				if dr.name == "model-same" && c.Drafts > 0 && c.Accepted != c.DraftTokens && branch == 0 {
					t.Errorf("Generate(%s, k=%d): the target drafting for itself accepted %d of %d", dr.name, k, c.Accepted, c.DraftTokens)
				}
				for i, fd := range res.FromDraft {
					if fd && i == 0 {
						t.Errorf("Generate(%s, k=%d, tree=%d): the first token is marked as drafted", dr.name, k, branch)
					}
				}
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	tgt := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 32))
	ng, _ := ngram.New(1, 2)
	for _, tc := range []struct {
		k, branch int
		want      string
	}{
		{0, 0, "k=0 outside 1..16"},
		{17, 0, "k=17 outside 1..16"},
		{4, 9, "branching 9 outside"},
		{8, 4, "a tree of 4 x 8 = 32 nodes after a 16-token prompt needs 49 positions, the context holds 32"},
		{16, 0, "a chain of 16 drafts after a 16-token prompt needs 33 positions"},
	} {
		_, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: 4, EOS: -1, K: tc.k, Branch: tc.branch, Drafter: ng})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(k=%d, tree=%d) error = %v, want one containing %q", tc.k, tc.branch, err, tc.want)
		}
	}
	for _, tc := range []struct {
		min, max int
		want     string
	}{{0, 3, "minimum n-gram size 0 must be at least 1"}, {3, 2, "maximum n-gram size 2 is below the minimum 3"}, {1, 65, "above 64"}} {
		if _, err := ngram.New(tc.min, tc.max); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ngram.New(%d, %d) error = %v, want %q", tc.min, tc.max, err, tc.want)
		}
	}
}

// A run cancelled mid-step leaves both caches usable: the next run equals
// a fresh engine's.
func TestCancelThenRerun(t *testing.T) {
	const ctxLen, n = 128, 20
	src := synth(t, "tiny")
	fresh := plain(t, spec.NewRunnerTarget(runner(t, src, ctxLen)), prompt, n)
	tgt := spec.NewRunnerTarget(runner(t, src, ctxLen))
	d := draftmodel.New(spec.NewRunnerTarget(runner(t, synth(t, "tiny?seed=3"), ctxLen+16)))
	for _, branch := range []int{0, 2} {
		ctx, cancel := context.WithCancel(context.Background())
		got := 0
		res, err := spec.Generate(ctx, tgt, prompt, spec.Options{MaxTokens: n, EOS: -1, K: 4, Branch: branch, Drafter: d,
			Emit: func(ids []int32, _ []bool) {
				if got += len(ids); got >= 5 {
					cancel()
				}
			}})
		cancel()
		if err != nil || res.StopReason != "cancelled" {
			t.Fatalf("cancelled Generate(tree=%d) = %q, %v; want stop reason cancelled", branch, res.StopReason, err)
		}
		res, err = spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: n, EOS: -1, K: 4, Branch: branch, Drafter: d})
		if err != nil || !slices.Equal(res.Tokens, fresh) {
			t.Errorf("Generate(tree=%d) after a cancelled run = %v, %v; a fresh target gives %v", branch, res.Tokens, err, fresh)
		}
	}
}

// Stop conditions: MaxTokens cuts a step's accepted tokens; EOS among
// drafted tokens ends the run there.
func TestStopInsideStep(t *testing.T) {
	tgt := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 128))
	want := plain(t, tgt, prompt, 30)
	d := draftmodel.New(spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 160))) // accepts everything
	for _, n := range []int{1, 2, 5, 7} {
		res, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: n, EOS: -1, K: 8, Drafter: d})
		if err != nil || !slices.Equal(res.Tokens, want[:n]) || res.StopReason != "max_tokens" {
			t.Errorf("Generate(max=%d) = %v, %q, %v; want %v, max_tokens", n, res.Tokens, res.StopReason, err, want[:n])
		}
	}
	eos := want[9]
	stop := slices.Index(want, eos) + 1
	res, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: 30, EOS: eos, K: 8, Drafter: d})
	if err != nil || !slices.Equal(res.Tokens, want[:stop]) || res.StopReason != "eos" {
		t.Errorf("Generate(eos=%d) = %v, %q, %v; want %v, eos", eos, res.Tokens, res.StopReason, err, want[:stop])
	}
	res, err = spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: 30, EOS: -1, EOSIDs: []int32{-5, eos}, K: 8, Drafter: d})
	if err != nil || !slices.Equal(res.Tokens, want[:stop]) || res.StopReason != "eos" {
		t.Errorf("Generate(EOSIDs=%d) = %v, %q, %v; want %v, eos", eos, res.Tokens, res.StopReason, err, want[:stop])
	}
}

// recorder is a feature drafter (EAGLE-style) that checks what the loop
// feeds it: every cached position exactly once, in order, with features.
type recorder struct {
	spec.Drafter
	t      *testing.T
	seen   []int32
	layers []int
}

func (r *recorder) FeatureLayers() []int { return r.layers }
func (r *recorder) Observe(pos int, tokens []int32, feats [][]float32) {
	if pos != len(r.seen) {
		r.t.Errorf("Observe(pos=%d) after %d observed positions", pos, len(r.seen))
	}
	for l, f := range feats {
		if len(f) != len(tokens)*64 {
			r.t.Errorf("Observe: layer %d features hold %d floats for %d tokens of dim 64", r.layers[l], len(f), len(tokens))
		}
	}
	r.seen = append(r.seen[:min(pos, len(r.seen))], tokens...)
}

func TestFeatureDrafterObservesCache(t *testing.T) {
	tgt := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 128))
	ng, _ := ngram.New(1, 3)
	for _, branch := range []int{0, 2} {
		rec := &recorder{Drafter: ng, t: t, layers: []int{0, 1}}
		res, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: 20, EOS: -1, K: 4, Branch: branch, Drafter: rec})
		if err != nil {
			t.Fatal(err)
		}
		all := append(slices.Clone(prompt), res.Tokens...)
		if want := all[:tgt.Len()]; !slices.Equal(rec.seen, want) {
			t.Errorf("tree=%d: observed %v, the target cached %v", branch, rec.seen, want)
		}
	}
}

func TestProposalShapes(t *testing.T) {
	seq := []int32{5, 6, 7, 8, 5, 6, 9, 9, 5, 6}
	ng, _ := ngram.New(1, 2)
	ctx := context.Background()
	chain, _ := ng.Propose(ctx, seq, spec.Request{K: 3})
	if want := []int32{9, 9, 5}; !slices.Equal(chain.Tokens, want) || chain.Parent != nil {
		t.Errorf("ngram.Propose(%v, k=3) = %+v, want chain %v", seq, chain, want)
	}
	tree, _ := ng.Propose(ctx, seq, spec.Request{K: 3, Branch: 2})
	if want, wantPar := []int32{9, 9, 5, 7, 8, 5}, []int32{-1, 0, 1, -1, 3, 4}; !slices.Equal(tree.Tokens, want) || !slices.Equal(tree.Parent, wantPar) {
		t.Errorf("ngram.Propose(%v, k=3, tree=2) = %v parents %v, want %v parents %v", seq, tree.Tokens, tree.Parent, want, wantPar)
	}
	none, _ := ng.Propose(ctx, []int32{1, 2, 3}, spec.Request{K: 3})
	if len(none.Tokens) != 0 {
		t.Errorf("ngram.Propose(no repeats) = %v, want nothing", none.Tokens)
	}
	d := draftmodel.New(spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 64)))
	for _, req := range []spec.Request{{K: 4}, {K: 4, Branch: 3}, {K: 2, Sampler: sample.New(sample.Params{Temperature: 1}, 1)}} {
		p, err := d.Propose(ctx, seq, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Tokens) != req.MaxNodes() {
			t.Errorf("draftmodel.Propose(%+v) gave %d nodes, want %d", req, len(p.Tokens), req.MaxNodes())
		}
		if req.Sampler != nil && len(p.Probs) != len(p.Tokens) {
			t.Errorf("draftmodel.Propose(%+v) gave %d probability rows for %d tokens", req, len(p.Probs), len(p.Tokens))
		}
		if got := d.Target().Len(); req.Branch > 0 && got != len(seq) {
			t.Errorf("draftmodel.Propose(%+v) left %d cached positions, want the context's %d", req, got, len(seq))
		}
	}
}

// TestMeasureBaseline: a speculative run that measures its own baseline
// takes plain steps on the schedule (spread over the whole run, never the
// first two steps), flags them, keeps the greedy output, and the steps'
// wall times fit in the decode time.
func TestMeasureBaseline(t *testing.T) {
	var want []int
	for step, taken := 0, 0; step < 200; step++ {
		if spec.BaselineDue(step, taken) {
			want = append(want, step)
			taken++
		}
	}
	if !slices.Equal(want[:10], []int{2, 6, 10, 14, 18, 22, 26, 30, 34, 50}) || want[len(want)-1] != 194 {
		t.Errorf("baseline steps %v: want every 4th step from 2 until 8 are taken, then every 16th", want)
	}
	tgt := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 256))
	ng, _ := ngram.New(1, 3)
	plain, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: 80, EOS: -1})
	if err != nil {
		t.Fatal(err)
	}
	var steps []spec.StepInfo
	res, err := spec.Generate(context.Background(), tgt, prompt, spec.Options{MaxTokens: 80, EOS: -1, K: 3, Drafter: ng, MeasureBaseline: true,
		Step: func(st spec.StepInfo) { steps = append(steps, st) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, plain.Tokens) {
		t.Errorf("with baseline steps: %v, plain greedy %v", res.Tokens, plain.Tokens)
	}
	var got []int
	var walls time.Duration
	for i, st := range steps {
		if st.Baseline {
			got = append(got, i)
			if st.Drafted != 0 || st.Tokens != 1 {
				t.Errorf("baseline step %d = %+v, want a plain step of one token", i, st.Step)
			}
		}
		if st.Tokens != len(st.IDs) {
			t.Errorf("step %d = %+v: %d tokens counted, %d emitted", i, st.Step, st.Tokens, len(st.IDs))
		}
		walls += st.Wall()
	}
	// Step walls are disjoint slices of the decode time (each runs from the
	// previous step's end): they cannot add up to more.
	if walls > res.Decode || walls <= 0 {
		t.Errorf("steps' wall times add up to %v, decode took %v", walls, res.Decode)
	}
	if n := len(got); n == 0 || !slices.Equal(got, want[:n]) || res.Counts.Base.N != n {
		t.Errorf("baseline steps at %v (tally %d), want the schedule's %v", got, res.Counts.Base.N, want[:min(len(want), len(got))])
	}
}
