package spec_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/draftmodel"
	"rigscope/engine/spec/ngram"
	"rigscope/engine/tensor"
)

// miniSource is a very small random Llama (vocab 8) whose output layer is
// scaled up so its distributions are far from uniform.
type miniSource struct {
	cfg  model.Config
	seed uint64
}

func newMini(seed uint64) *miniSource {
	return &miniSource{seed: seed, cfg: model.Config{Arch: "llama", Dim: 16, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 8,
		FFN: 32, Vocab: 8, MaxSeq: 16, NormEps: 1e-5, RopeTheta: 10000}}
}

func (s *miniSource) Config() model.Config { return s.cfg }

func (s *miniSource) Tensor(name string) (*tensor.Tensor, error) {
	c := s.cfg
	shape := map[string][]int{model.NameTokEmbd: {c.Vocab, c.Dim}, model.NameOutput: {c.Vocab, c.Dim}, model.NameOutputNorm: {c.Dim},
		model.LayerName(0, "attn_norm"): {c.Dim}, model.LayerName(0, "ffn_norm"): {c.Dim},
		model.LayerName(0, "attn_q"): {c.Heads * c.HeadDim, c.Dim}, model.LayerName(0, "attn_k"): {c.KVHeads * c.HeadDim, c.Dim},
		model.LayerName(0, "attn_v"): {c.KVHeads * c.HeadDim, c.Dim}, model.LayerName(0, "attn_output"): {c.Dim, c.Heads * c.HeadDim},
		model.LayerName(0, "ffn_gate"): {c.FFN, c.Dim}, model.LayerName(0, "ffn_up"): {c.FFN, c.Dim}, model.LayerName(0, "ffn_down"): {c.Dim, c.FFN}}[name]
	if shape == nil {
		return nil, fmt.Errorf("mini: no tensor %q", name)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	amp := float32(1.5)
	switch {
	case len(shape) == 1:
		amp = 0
	case name == model.NameOutput:
		amp = 4
	}
	h := uint64(0)
	for _, b := range []byte(name) {
		h = h*131 + uint64(b)
	}
	rng := rand.New(rand.NewPCG(s.seed, h))
	data := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		v := float32(1)
		if amp != 0 {
			v = amp * (2*rng.Float32() - 1)
		}
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return &tensor.Tensor{Name: name, DType: tensor.F32, Shape: shape, Data: data}, nil
}

const (
	runs  = 20000
	alpha = 0.001 // significance of the chi-square tests
)

// Prompts: the second repeats, so the n-gram drafter often finds a match.
var (
	miniPrompt   = []int32{1, 5, 3}
	repeatPrompt = []int32{1, 5, 3, 1, 5}
)

// pairCounts samples `runs` generations of 3 tokens and counts the pair
// (token 2, token 3): the tokens a speculative step produces (token 1 comes
// from the prefill). drafter nil means plain sampling.
// Run i uses seed seed0+i.
func pairCounts(t *testing.T, prompt []int32, seed0 uint64, mk func(seed uint64) spec.Options) []int {
	t.Helper()
	V := 8
	tgt := spec.NewRunnerTarget(runner(t, newMini(1), 16))
	counts := make([]int, V*V)
	for i := 0; i < runs; i++ {
		o := mk(seed0 + uint64(i))
		o.MaxTokens, o.EOS = 3, -1
		res, err := spec.Generate(context.Background(), tgt, prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tokens) != 3 {
			t.Fatalf("run %d generated %v, want 3 tokens", i, res.Tokens)
		}
		counts[int(res.Tokens[1])*V+int(res.Tokens[2])]++
	}
	return counts
}

// chiSquare2 is Pearson's two-sample homogeneity statistic over the cells,
// pooling cells whose expected count is under 5 into one. It returns the
// statistic and the degrees of freedom.
func chiSquare2(a, b []int) (float64, int) {
	var na, nb float64
	for i := range a {
		na += float64(a[i])
		nb += float64(b[i])
	}
	var stat float64
	df := -1
	var poolA, poolB float64
	add := func(x, y float64) {
		tot := x + y
		ea, eb := tot*na/(na+nb), tot*nb/(na+nb)
		stat += (x-ea)*(x-ea)/ea + (y-eb)*(y-eb)/eb
		df++
	}
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		if (x+y)*min(na, nb)/(na+nb) < 5 {
			poolA += x
			poolB += y
			continue
		}
		add(x, y)
	}
	if poolA+poolB > 0 {
		add(poolA, poolB)
	}
	return stat, df
}

// chiCritical is the 1-alpha quantile of chi-square with df degrees of
// freedom (Wilson-Hilferty; z = 3.0902 for alpha = 0.001).
func chiCritical(df int) float64 {
	const z = 3.0902
	k := float64(df)
	h := 2 / (9 * k)
	return k * math.Pow(1-h+z*math.Sqrt(h), 3)
}

// The joint distribution of the two tokens a speculative step (k=2) emits
// must match plain sampling at temperature 1, for a model drafter (p != q:
// a different random model) and the n-gram drafter (a point mass), chain
// and tree; and a wrong residual must be caught.
//
// It is a numerics-only golden test: it skips under -race (the detector
// slows the forward pass ~10x and there is no concurrency here); `make
// test` runs it in its non-race pass.
func TestGoldenSamplingIsLossless(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("statistical test (20,000 runs per arm): runs in the non-race golden pass")
	}
	params := sample.Params{Temperature: 1}
	base := map[*[]int32][]int{}
	for _, p := range []*[]int32{&miniPrompt, &repeatPrompt} {
		base[p] = pairCounts(t, *p, 0, func(seed uint64) spec.Options {
			return spec.Options{Sampler: sample.New(params, seed)}
		})
	}
	draft := draftmodel.New(spec.NewRunnerTarget(runner(t, newMini(2), 24)))
	ng, _ := ngram.New(1, 2)
	for _, tc := range []struct {
		name   string
		prompt *[]int32
		d      spec.Drafter
		branch int
		wrong  bool
	}{
		{"model chain", &miniPrompt, draft, 0, false},
		{"ngram chain", &repeatPrompt, ng, 0, false},
		{"model tree", &miniPrompt, draft, 2, false},
		{"ngram tree", &repeatPrompt, ng, 2, false},
		{"model chain, residual from p (wrong)", &miniPrompt, draft, 0, true},
	} {
		got := pairCounts(t, *tc.prompt, runs, func(seed uint64) spec.Options {
			o := spec.Options{Sampler: sample.New(params, seed), DraftSeed: seed, Drafter: tc.d, K: 2, Branch: tc.branch}
			if tc.wrong {
				o = spec.WithWrongResidual(o)
			}
			return o
		})
		stat, df := chiSquare2(base[tc.prompt], got)
		crit := chiCritical(df)
		t.Logf("%s: chi-square %.1f on %d df, critical value at %g: %.1f", tc.name, stat, df, alpha, crit)
		if !tc.wrong && stat > crit {
			t.Errorf("%s: speculative sampling differs from plain sampling: chi-square %.1f > %.1f (%d df, alpha %g)", tc.name, stat, crit, df, alpha)
		}
		if tc.wrong && stat <= crit {
			t.Errorf("%s: the test did not notice a wrong residual: chi-square %.1f <= %.1f (%d df, alpha %g)", tc.name, stat, crit, df, alpha)
		}
	}
}
