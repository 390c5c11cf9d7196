package eagle3_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/draftmodel"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/spec/ngram"
	"rigscope/engine/tensor/cpu"
	"rigscope/internal/fixtures"
)

// TestBenchEagle3Table prints, for the gocoder-14m target on the first
// public prompts, greedy decoding with the EAGLE-3 head vs the
// gocoder-draft-1m model vs n-gram at k = 2..8, chain and tree (top-2 per
// depth): mean acceptance length, tokens/s and speedup over plain
// decoding. Timings are printed, never asserted; it runs only when asked:
//
//	RIGSCOPE_BENCH_EAGLE3=1 go test -run BenchEagle3Table -v ./engine/spec/eagle3
//
// RIGSCOPE_BENCH_PROMPTS (default 4) and RIGSCOPE_BENCH_TOKENS (default
// 64) size it.
func TestBenchEagle3Table(t *testing.T) {
	if os.Getenv("RIGSCOPE_BENCH_EAGLE3") == "" {
		t.Skip("a timing table, not a test: set RIGSCOPE_BENCH_EAGLE3=1 to print it")
	}
	f := loadFixture(t)
	nPrompts, nTokens := 4, 64
	fmt.Sscan(os.Getenv("RIGSCOPE_BENCH_PROMPTS"), &nPrompts)
	fmt.Sscan(os.Getenv("RIGSCOPE_BENCH_TOKENS"), &nTokens)
	prompts := f.ref.Prompts[:min(nPrompts, len(f.ref.Prompts))]
	dsrc, err := loader.Open(fixtures.Path(t, "gocoder-draft-1m-hf"), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dsrc.Close()
	dw, err := model.LoadWeights(dsrc, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctxLen := 1024
	one := cpu.NewPool(1) // drafters run on one thread, as the engine runs them
	heads := eagle3.New(f.head, ctxLen, one)
	dm := draftmodel.New(spec.NewRunnerTarget(model.NewRunner(dw, ctxLen+spec.MaxK*spec.MaxBranch, nil, one)))
	ng, err := ngram.New(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	target := spec.NewRunnerTarget(model.NewRunner(f.w, ctxLen, nil, f.pool))
	// run decodes every prompt (best of reps runs each: the machine may be
	// shared) and returns tokens/s over the decode phase, the mean
	// acceptance length and the drafter's time per speculative step.
	const reps = 2
	run := func(d spec.Drafter, k, branch int) (tokS, mal float64, draftMS float64) {
		var toks int
		var dur, draft time.Duration
		var drafts, acc int
		for _, p := range prompts {
			var best spec.Result
			for rep := 0; rep < reps; rep++ {
				if d != nil {
					d.Reset()
				}
				res, err := spec.Generate(context.Background(), target, p.PromptIDs, spec.Options{MaxTokens: nTokens, EOS: -1, K: k, Branch: branch, Drafter: d})
				if err != nil {
					t.Fatalf("Generate(k=%d, tree=%d): %v", k, branch, err)
				}
				if rep == 0 || res.Decode < best.Decode {
					best = res
				}
			}
			toks += len(best.Tokens) - 1
			dur += best.Decode
			draft += best.Counts.Draft
			drafts += best.Counts.Drafts
			acc += best.Counts.Accepted
		}
		return float64(toks) / dur.Seconds(), 1 + float64(acc)/float64(max(drafts, 1)), draft.Seconds() * 1000 / float64(max(drafts, 1))
	}
	plain, _, _ := run(nil, 0, 0)
	var b strings.Builder
	fmt.Fprintf(&b, "gocoder-14m (HF bf16, %d threads), %d prompts x %d tokens, greedy, best of 2 runs per prompt; plain decoding %.1f tok/s\n", f.pool.Threads, len(prompts), nTokens, plain)
	fmt.Fprintf(&b, "| drafter | shape | k | mean acc. len | draft ms/step | tok/s | speedup |\n|---|---|---|---|---|---|---|\n")
	drafters := []struct {
		name string
		d    spec.Drafter
	}{{"eagle3", heads}, {"model (draft-1m)", dm}, {"ngram 1-3", ng}}
	for _, dr := range drafters {
		for _, branch := range []int{0, 2} {
			for k := 2; k <= 8; k++ {
				tokS, mal, dms := run(dr.d, k, branch)
				shape := "chain"
				if branch > 0 {
					shape = fmt.Sprintf("tree %dx%d", branch, k)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.2f | %.1f | %.2fx |\n", dr.name, shape, k, mal, dms, tokS, tokS/plain)
			}
		}
	}
	t.Log("\n" + b.String())
}
