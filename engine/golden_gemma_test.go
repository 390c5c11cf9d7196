package engine

import (
	"context"
	"strings"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/loader/gguf"
	"rigscope/internal/fixtures"
	"rigscope/internal/fixtures/ggufedit"
)

// gemmaLayerTypesSuffix marks an archFixtures file that is the gemma3
// GGUF with the HF folder's layer types written into it (archPath).
const gemmaLayerTypesSuffix = "+layer_types"

// archPath is the path of an archFixtures file: the fixture itself, or
// for NAME+layer_types a copy of the gemma3 GGUF NAME that states
// gemma3.attention.sliding_window_pattern (one bool per layer, true =
// local) as tiny-gemma3-hf's layer_types do. llama.cpp's converter does
// not write that key for gemma3, so the fixture as written reads as
// llama.cpp reads it (every 6th layer global: none of 4), not as the
// model was trained (TestGemmaGGUFReadsAsLlamaCpp).
func archPath(t testing.TB, file string) string {
	t.Helper()
	name, derived := strings.CutSuffix(file, gemmaLayerTypesSuffix)
	if !derived {
		return fixtures.Path(t, name)
	}
	return ggufedit.Copy(t, name, func(kv []gguf.KV) []gguf.KV {
		return append(kv, gguf.KV{Key: "gemma3.attention.sliding_window_pattern", Value: []bool{true, true, true, false}})
	})
}

// The gemma3 GGUF as llama.cpp's converter wrote it states no layer
// types: it reads as llama.cpp reads it, every 6th layer global (so all 4
// local here), with the window and the local RoPE base of the file.
func TestGemmaGGUFReadsAsLlamaCpp(t *testing.T) {
	src, err := loader.Open(fixtures.Path(t, "arch/tiny-gemma3.F16.gguf"), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := src.Config()
	if c.Gemma.Layers != "LLLL" || c.SlidingWindow != 48 || c.Gemma.LocalRopeTheta != 10000 || c.RopeTheta != 1e6 || c.Gemma.QueryScale != 32 {
		t.Errorf("gemma3 GGUF read as layers %q, window %d, local/global RoPE base %g/%g, query scale %g; want LLLL, 48, 10000/1e6, 32",
			c.Gemma.Layers, c.SlidingWindow, c.Gemma.LocalRopeTheta, c.RopeTheta, c.Gemma.QueryScale)
	}
	if testing.Short() {
		return
	}
	skipUnderRace(t)
	ref := loadArchReference(t, "arch/tiny-gemma3-hf")
	eng, err := Open(context.Background(), fixtures.Path(t, "arch/tiny-gemma3.F16.gguf"), Options{CtxLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	full := 0
	for _, p := range ref.Prompts {
		got, _, err := greedyWithFirstLogits(eng, p.PromptIDs, len(p.Greedy), nil)
		if err != nil {
			t.Fatal(err)
		}
		if matchPrefix(got, p.Greedy) == len(p.Greedy) {
			full++
		}
	}
	t.Logf("tiny-gemma3.F16.gguf as written (all layers local): %d of %d prompts equal the reference (trained with layer 3 global)", full, len(ref.Prompts))
}
