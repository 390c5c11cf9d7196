package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"rigscope/internal/fixtures"
)

// TestGoldenTensorParallel checks that greedy generation at TP 2, 4 and 8
// with every exact allreduce backend equals TP 1 on the reference prompts
// (gocoder-14m: 8 heads, 4 kv heads, so TP 8 replicates kv heads). It
// reports the matching prefix per prompt and needs 11 of 12 in full.
func TestGoldenTensorParallel(t *testing.T) {
	skipUnderRace(t)
	ref := loadReference(t)
	const n = 24
	eng, err := Open(context.Background(), fixtures.Path(t, "gocoder-14m-hf"), Options{CtxLen: 1024, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	gen := func(cfg RunConfig) []int32 {
		t.Helper()
		var got []int32
		if _, err := eng.Run(context.Background(), cfg, func(ev Event) {
			for _, tk := range ev.Tokens {
				got = append(got, tk.ID)
			}
		}); err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		return got
	}
	base := make([][]int32, len(ref.Prompts))
	for i, p := range ref.Prompts {
		base[i] = gen(RunConfig{PromptIDs: p.PromptIDs, MaxTokens: n})
	}
	var table strings.Builder
	for _, tp := range []int{2, 4, 8} {
		for _, backend := range []string{"ring", "tree", "oneshot", "twoshot", "auto"} {
			full := 0
			var pre []string
			for i, p := range ref.Prompts {
				got := gen(RunConfig{PromptIDs: p.PromptIDs, MaxTokens: n, TP: tp, AllReduce: backend})
				m := matchPrefix(got, base[i])
				if m == len(base[i]) && len(got) == len(base[i]) {
					full++
				}
				pre = append(pre, fmt.Sprint(m))
			}
			fmt.Fprintf(&table, "TP=%d %-8s %2d/%d in full; prefix per prompt: %s\n", tp, backend, full, len(ref.Prompts), strings.Join(pre, " "))
			if full < len(ref.Prompts)-1 {
				t.Errorf("TP=%d %s: %d of %d prompts equal TP=1 in full", tp, backend, full, len(ref.Prompts))
			}
		}
	}
	t.Logf("greedy tokens vs TP=1 (%d new tokens per prompt):\n%s", n, table.String())
}

// TestGoldenTensorParallelArch checks that greedy generation at TP 2 and 4
// equals TP 1 for each architecture's tiny model (4 heads, 2 kv heads: TP
// 4 replicates the kv heads with their biases; q/k norms are replicated),
// 11 of 12 prompts in full.
func TestGoldenTensorParallelArch(t *testing.T) {
	skipUnderRace(t)
	const n = 24
	var table strings.Builder
	for _, f := range archFixtures {
		t.Run(f.file, func(t *testing.T) {
			ref := loadArchReference(t, f.ref)
			eng, err := Open(context.Background(), archPath(t, f.file), Options{CtxLen: 1024, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			base := make([][]int32, len(ref.Prompts))
			for i, p := range ref.Prompts {
				base[i], _ = generate(t, eng, RunConfig{PromptIDs: p.PromptIDs, MaxTokens: n})
			}
			for _, tp := range []int{2, 4} {
				for _, backend := range []string{"ring", "auto"} {
					full := 0
					var pre []string
					for i, p := range ref.Prompts {
						got, _ := generate(t, eng, RunConfig{PromptIDs: p.PromptIDs, MaxTokens: n, TP: tp, AllReduce: backend})
						m := matchPrefix(got, base[i])
						if m == len(base[i]) && len(got) == len(base[i]) {
							full++
						}
						pre = append(pre, fmt.Sprint(m))
					}
					fmt.Fprintf(&table, "%-28s TP=%d %-5s %2d/%d in full; prefix per prompt: %s\n", f.file, tp, backend, full, len(ref.Prompts), strings.Join(pre, " "))
					if full < len(ref.Prompts)-1 {
						t.Errorf("TP=%d %s: %d of %d prompts equal TP=1 in full", tp, backend, full, len(ref.Prompts))
					}
				}
			}
		})
	}
	t.Logf("greedy tokens vs TP=1 (%d new tokens per prompt):\n%s", n, table.String())
}
