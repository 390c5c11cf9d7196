package draftmodel_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/draftmodel"
	"rigscope/engine/spec/ngram"
	"rigscope/engine/tensor/cpu"
	"rigscope/internal/fixtures"
)

func openRunner(t *testing.T, rel string, ctxLen, threads int) *model.Runner {
	t.Helper()
	src, err := loader.Open(fixtures.Path(t, rel), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	return model.NewRunner(w, ctxLen, nil, cpu.NewPool(threads))
}

func referencePrompts(t *testing.T) [][]int32 {
	t.Helper()
	var ref struct {
		Prompts []struct {
			IDs []int32 `json:"prompt_ids"`
		} `json:"prompts"`
	}
	fixtures.ReadJSON(t, "reference-public.json", &ref)
	var ps [][]int32
	for _, p := range ref.Prompts {
		ps = append(ps, p.IDs)
	}
	return ps
}

// Over the reference prompts, greedy speculative decoding of gocoder-14m
// (bf16 Hugging Face files and the Q8_0 GGUF: the CPU kernels' per-row
// results do not depend on the batch size) with either drafter, k = 1..8, chain and
// tree, equals plain greedy decoding token for token. Prompts are cut to
// their last 96 tokens to keep the prefill cheap (equality does not depend
// on the prompt's length); under -race a subset runs.
func TestGoldenGreedySpecEqualsPlain(t *testing.T) {
	for _, target := range targetFiles() {
		t.Run(target, func(t *testing.T) { checkSpecEqualsPlain(t, target) })
	}
}

func checkSpecEqualsPlain(t *testing.T, target string) {
	const ctxLen = 256
	prompts := referencePrompts(t)
	tgt := spec.NewRunnerTarget(openRunner(t, target, ctxLen, 2))
	dm := draftmodel.New(spec.NewRunnerTarget(openRunner(t, "gocoder-draft-1m.F16.gguf", ctxLen+spec.MaxK*spec.MaxBranch, 1)))
	ng, err := ngram.New(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	n, ks, treeKs, cut := 24, []int{1, 2, 3, 4, 5, 6, 7, 8}, []int{2, 4, 8}, 96
	if raceEnabled || testing.Short() {
		prompts, n, ks, treeKs, cut = prompts[:1], 8, []int{1, 4, 8}, []int{3}, 32
	}
	ctx := context.Background()
	var drafts, accepted int
	for pi, p := range prompts {
		p = p[max(0, len(p)-cut):]
		first, err := spec.Generate(ctx, tgt, p, spec.Options{MaxTokens: n, EOS: 2})
		if err != nil {
			t.Fatal(err)
		}
		reuse := len(p) - 1 // every later run keeps the prompt's cached positions
		want, err := spec.Generate(ctx, tgt, p, spec.Options{MaxTokens: n, EOS: 2, Reuse: reuse})
		if err != nil || !slices.Equal(want.Tokens, first.Tokens) {
			t.Fatalf("prompt %d: plain greedy with a reused prefix = %v, %v; from scratch %v", pi, want.Tokens, err, first.Tokens)
		}
		for _, d := range []spec.Drafter{ng, dm} {
			for _, branch := range []int{0, 2} {
				kk := ks
				if branch > 0 {
					kk = treeKs
				}
				for _, k := range kk {
					res, err := spec.Generate(ctx, tgt, p, spec.Options{MaxTokens: n, EOS: 2, Reuse: reuse, K: k, Branch: branch, Drafter: d})
					if err != nil {
						t.Fatalf("prompt %d, %s, k=%d, tree=%d: %v", pi, d.Name(), k, branch, err)
					}
					if !slices.Equal(res.Tokens, want.Tokens) {
						t.Errorf("prompt %d, %s, k=%d, tree=%d: speculative greedy = %v, plain greedy = %v", pi, d.Name(), k, branch, res.Tokens, want.Tokens)
					}
					drafts += res.Counts.Drafts
					accepted += res.Counts.Accepted
				}
			}
		}
	}
	if drafts == 0 || accepted == 0 {
		t.Errorf("%d drafts, %d accepted tokens over all runs: the drafters never drafted or were never right", drafts, accepted)
	}
	t.Logf("%d prompts x %d tokens: %d drafts, %d accepted", len(prompts), n, drafts, accepted)
}

// targetFiles are the target fixtures: the bf16 Hugging Face files and the
// Q8_0 GGUF (whose CPU matmul quantizes activations per token row, and is
// batch-invariant all the same). RIGSCOPE_SPEC_TARGET picks one.
func targetFiles() []string {
	if f := os.Getenv("RIGSCOPE_SPEC_TARGET"); f != "" {
		return []string{f}
	}
	return []string{"gocoder-14m-hf", "gocoder-14m.Q8_0.gguf"}
}
