package spec_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
)

// sampleTarget samples "on the device" (spec.SampleTarget) with the host's
// specification over its own logits, counting which forward the loop
// calls; rows and fail bend its answers to test the loop's checks.
type sampleTarget struct {
	spec.Target
	forwards, samples int
	us                []float64 // every uniform number it was handed
	rows              int       // > 0: answer this many ids instead
	fail              error
}

func (t *sampleTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	t.forwards++
	return t.Target.Forward(ctx, b)
}

func (t *sampleTarget) SampleIDs(ctx context.Context, b model.Batch, p sample.Params, u []float64) ([]int32, error) {
	t.samples++
	t.us = append(t.us, u...)
	if t.fail != nil {
		return nil, t.fail
	}
	logits, err := t.Target.Forward(ctx, b)
	if err != nil {
		return nil, err
	}
	v := t.Vocab()
	if len(logits)/v != len(u) {
		return nil, errors.New("rows and uniforms differ")
	}
	s, scratch := &sample.Sampler{P: p}, make([]float32, v)
	ids := make([]int32, len(u))
	for i := range ids {
		ids[i] = s.SampleU(logits[i*v:(i+1)*v], scratch, u[i])
	}
	if t.rows > 0 {
		ids = make([]int32, t.rows)
	}
	return ids, nil
}

// A plain sampled run through a SampleTarget picks every token on the
// "device" with the uniform the host's generator draws, and so emits what
// host sampling over Forward's logits emits with the same seed, for each
// setting; greedy runs never ask it to sample, and speculative sampled
// runs verify over Forward's logits (rejection sampling stays on the host).
func TestSampleTargetPlainSampled(t *testing.T) {
	const ctxLen, n = 160, 24
	base := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), ctxLen))
	cases := []struct {
		name    string
		p       sample.Params
		drafter spec.Drafter
		// want: SampleIDs calls (-1: at least one), direct Forward calls (-1: at least one)
		samples, forwards int
	}{
		{"temperature", sample.Params{Temperature: 1}, nil, n, 0},
		{"top-p", sample.Params{Temperature: 0.8, TopP: 0.9}, nil, n, 0},
		{"top-k", sample.Params{Temperature: 0.7, TopK: 5}, nil, n, 0},
		{"top-k top-p", sample.Params{Temperature: 1.2, TopK: 8, TopP: 0.5}, nil, n, 0},
		{"greedy", sample.Params{}, nil, 0, n},
		{"drafted sampled", sample.Params{Temperature: 0.8, TopP: 0.9}, fixedDrafter{}, -1, -1},
	}
	for _, c := range cases {
		opts := func() spec.Options {
			return spec.Options{MaxTokens: n, EOS: -1, Sampler: sample.New(c.p, 5), DraftSeed: 9, Drafter: c.drafter, K: 3}
		}
		want, err := spec.Generate(context.Background(), base, prompt, opts())
		if err != nil {
			t.Fatalf("%s: host: %v", c.name, err)
		}
		tgt := &sampleTarget{Target: base}
		got, err := spec.Generate(context.Background(), tgt, prompt, opts())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Errorf("%s: through SampleIDs %v, host sampling %v", c.name, got.Tokens, want.Tokens)
		}
		if c.samples >= 0 && tgt.samples != c.samples || c.samples < 0 && tgt.samples == 0 {
			t.Errorf("%s: SampleIDs called %d times, want %d", c.name, tgt.samples, c.samples)
		}
		if c.forwards >= 0 && tgt.forwards != c.forwards || c.forwards < 0 && tgt.forwards == 0 {
			t.Errorf("%s: Forward called %d times, want %d (-1: some)", c.name, tgt.forwards, c.forwards)
		}
		// The uniforms are the host generator's Float64 stream in order.
		if c.drafter == nil && !c.p.Greedy() {
			ref := sample.New(c.p, 5)
			for i, u := range tgt.us {
				if w := ref.Uniform(); u != w {
					t.Fatalf("%s: uniform %d = %v, want the generator's %v", c.name, i, u, w)
				}
			}
		}
	}
}

// The loop refuses a SampleTarget's wrong answers and passes its errors on.
func TestSampleTargetBadAnswers(t *testing.T) {
	base := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 160))
	boom := errors.New("device lost")
	cases := []struct {
		name string
		tgt  *sampleTarget
		want string
	}{
		{"error", &sampleTarget{Target: base, fail: boom}, "device lost"},
		{"two ids for one row", &sampleTarget{Target: base, rows: 2}, "target sampled 2 rows for one"},
	}
	for _, c := range cases {
		_, err := spec.Generate(context.Background(), c.tgt, prompt, spec.Options{MaxTokens: 4, EOS: -1, Sampler: sample.New(sample.Params{Temperature: 1}, 1)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// SampledIDs samples on the host over Forward's logits when the target
// cannot, with the uniforms given, and refuses greedy params and a count
// of uniforms that does not match the rows.
func TestSampledIDsFallback(t *testing.T) {
	base := spec.NewRunnerTarget(runner(t, synth(t, "tiny"), 160))
	ctx := context.Background()
	p := sample.Params{Temperature: 0.9, TopP: 0.8}
	b := model.Batch{Tokens: prompt[:4], Logits: model.LogitsAll}
	us := []float64{0.1, 0.5, 0.9, 0.99}
	got, err := spec.SampledIDs(ctx, base, b, p, us)
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Rewind(0); err != nil {
		t.Fatal(err)
	}
	dev := &sampleTarget{Target: base}
	want, err := spec.SampledIDs(ctx, dev, b, p, us)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || dev.samples != 1 {
		t.Errorf("host fallback %v, SampleTarget %v (%d calls)", got, want, dev.samples)
	}
	if err := base.Rewind(0); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		p    sample.Params
		us   []float64
	}{
		{"greedy", sample.Params{}, us},
		{"uniforms short", p, us[:2]},
	}
	for _, c := range bad {
		if _, err := spec.SampledIDs(ctx, base, b, c.p, c.us); err == nil {
			t.Errorf("%s: SampledIDs accepted it", c.name)
		}
		if err := base.Rewind(0); err != nil {
			t.Fatal(err)
		}
	}
}

// fixedDrafter always proposes the chain 3, 4, 5 (a deterministic drafter:
// point masses), so a sampled run verifies every step by rejection
// sampling, except the last steps where no token is left to draft.
type fixedDrafter struct{}

func (fixedDrafter) Name() string { return "fixed" }
func (fixedDrafter) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	return spec.Proposal{Tokens: []int32{3, 4, 5}[:min(3, req.K)]}, nil
}
func (fixedDrafter) Accept([]int) {}
func (fixedDrafter) Reset()       {}
