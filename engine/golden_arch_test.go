package engine

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/internal/fixtures"
)

// archReference is a ../shared/models/arch/*-hf/reference.json: greedy
// tokens and first-step top-10 logits from transformers in float32.
type archReference struct {
	Prompts []struct {
		PromptIDs []int32      `json:"prompt_ids"`
		Greedy    []int32      `json:"greedy"`
		FirstTop  [][2]float64 `json:"first_logits_top"`
	} `json:"prompts"`
}

// archFixtures are the tiny models of the architectures the engine reads,
// each file with its folder's reference (a GGUF holds F16 copies of the
// folder's bf16 weights: bf16 values of small exponent are exact in F16,
// and these fixtures' are).
var archFixtures = []struct{ file, ref string }{
	{"arch/tiny-llama31-hf", "arch/tiny-llama31-hf"},
	{"arch/tiny-llama31.F16.gguf", "arch/tiny-llama31-hf"},
	{"arch/tiny-qwen2-hf", "arch/tiny-qwen2-hf"},
	{"arch/tiny-qwen2.F16.gguf", "arch/tiny-qwen2-hf"},
	{"arch/tiny-qwen3-hf", "arch/tiny-qwen3-hf"},
	{"arch/tiny-qwen3.F16.gguf", "arch/tiny-qwen3-hf"},
	{"arch/tiny-mistral-hf", "arch/tiny-mistral-hf"},
	{"arch/tiny-gemma3-hf", "arch/tiny-gemma3-hf"},
	{"arch/tiny-gemma3.F16.gguf" + gemmaLayerTypesSuffix, "arch/tiny-gemma3-hf"},
	{"arch/tiny-mixtral-hf", "arch/tiny-mixtral-hf"},
	{"arch/tiny-mixtral.F16.gguf", "arch/tiny-mixtral-hf"},
	{"arch/tiny-qwen3moe-hf", "arch/tiny-qwen3moe-hf"},
	{"arch/tiny-deepseekv3-hf", "arch/tiny-deepseekv3-hf"},
}

// archLogitTol is the largest relative first-step logit difference from
// transformers allowed (float32 math on bf16 weights).
const archLogitTol = 1e-3

func loadArchReference(t testing.TB, dir string) *archReference {
	t.Helper()
	var ref archReference
	fixtures.ReadJSON(t, filepath.Join(dir, "reference.json"), &ref)
	return &ref
}

// TestGoldenArchitectures compares each architecture's greedy tokens and
// first-step logits with transformers': at least 11 of 12 prompts in
// full, and the top-10 logits within archLogitTol relative (|got-want| /
// max(|want|, 1)).
func TestGoldenArchitectures(t *testing.T) {
	skipUnderRace(t)
	var table strings.Builder
	for _, f := range archFixtures {
		t.Run(f.file, func(t *testing.T) {
			ref := loadArchReference(t, f.ref)
			eng, err := Open(context.Background(), archPath(t, f.file), Options{CtxLen: 1024})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			full := 0
			var maxAbs, maxRel float64
			var prefixes []string
			for i, p := range ref.Prompts {
				got, _, err := greedyWithFirstLogits(eng, p.PromptIDs, len(p.Greedy), nil)
				if err != nil {
					t.Fatalf("prompt %d: %v", i, err)
				}
				abs, rel, err := firstLogitDiff(eng, p.PromptIDs, p.FirstTop)
				if err != nil {
					t.Fatalf("prompt %d: %v", i, err)
				}
				maxAbs, maxRel = math.Max(maxAbs, abs), math.Max(maxRel, rel)
				n := matchPrefix(got, p.Greedy)
				if n == len(p.Greedy) {
					full++
				}
				prefixes = append(prefixes, fmt.Sprint(n))
			}
			fmt.Fprintf(&table, "%-28s %2d/%d in full  max first-step logit diff %.2g (rel %.2g)  prefix per prompt: %s\n",
				f.file, full, len(ref.Prompts), maxAbs, maxRel, strings.Join(prefixes, " "))
			if full < len(ref.Prompts)-1 {
				t.Errorf("%d of %d prompts match the reference in full, want at least %d", full, len(ref.Prompts), len(ref.Prompts)-1)
			}
			if maxRel > archLogitTol {
				t.Errorf("first-step logits differ from the reference by up to %.3g relative, want at most %g", maxRel, archLogitTol)
			}
		})
	}
	t.Logf("greedy tokens and first-step logits vs transformers:\n%s", table.String())
}

// firstLogitDiff prefills prompt and returns the largest absolute and
// relative (|d| / max(|want|, 1)) difference from the reference top-10.
func firstLogitDiff(e *Engine, prompt []int32, top [][2]float64) (abs, rel float64, err error) {
	if len(top) == 0 {
		return 0, 0, fmt.Errorf("reference has no first-step logits")
	}
	tg, err := e.target(context.Background(), 1)
	if err != nil {
		return 0, 0, err
	}
	tg.attach(nil)
	if err := tg.Rewind(0); err != nil {
		return 0, 0, err
	}
	logits, err := tg.Forward(context.Background(), model.Batch{Tokens: prompt, Logits: model.LogitsLast})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range top {
		d := math.Abs(float64(logits[int(p[0])]) - p[1])
		abs, rel = math.Max(abs, d), math.Max(rel, d/math.Max(math.Abs(p[1]), 1))
	}
	return abs, rel, nil
}

// TestGoldenArchSpecEqualsPlain checks that greedy speculative decoding
// (n-gram chain and tree, a draft model chain and tree) gives each
// architecture's plain greedy tokens.
func TestGoldenArchSpecEqualsPlain(t *testing.T) {
	skipUnderRace(t)
	for _, f := range archFixtures {
		t.Run(f.file, func(t *testing.T) {
			ref := loadArchReference(t, f.ref)
			eng, err := Open(context.Background(), archPath(t, f.file), Options{CtxLen: 1024})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			draft := fixtures.Path(t, "gocoder-draft-1m-hf")
			for i, p := range ref.Prompts[:4] {
				plain, _ := generate(t, eng, RunConfig{PromptIDs: p.PromptIDs, MaxTokens: 32})
				for _, dc := range []DrafterConfig{
					{Kind: "ngram", K: 4}, {Kind: "ngram", K: 3, Tree: 2},
					{Kind: "model", Path: draft, K: 4}, {Kind: "model", Path: draft, K: 3, Tree: 2},
				} {
					got, st := generate(t, eng, RunConfig{PromptIDs: p.PromptIDs, MaxTokens: 32, Drafter: dc})
					if !slices.Equal(got, plain) {
						t.Errorf("prompt %d, drafter %+v: %v; plain greedy %v", i, dc, got, plain)
					}
					if dc.Kind == "model" && st.Drafts == 0 {
						t.Errorf("prompt %d, drafter %+v: nothing drafted", i, dc)
					}
				}
			}
		})
	}
}

func generate(t *testing.T, e *Engine, cfg RunConfig) ([]int32, Stats) {
	t.Helper()
	var got []int32
	st, err := e.Run(context.Background(), cfg, func(ev Event) {
		for _, tk := range ev.Tokens {
			got = append(got, tk.ID)
		}
	})
	if err != nil {
		t.Fatalf("%+v: %v", cfg, err)
	}
	return got, st
}
