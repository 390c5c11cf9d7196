package engine

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
	"rigscope/engine/tokenizer"
)

func TestCheckRunConfig(t *testing.T) {
	ok := RunConfig{PromptIDs: []int32{1}, MaxTokens: 4}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		edit func(*RunConfig)
		want string // "" = accepted
	}{
		{"ok", func(*RunConfig) {}, ""},
		{"greedy", func(c *RunConfig) { c.Sampling.Temperature = 0 }, ""},
		{"smallest temperature", func(c *RunConfig) { c.Sampling.Temperature = MinTemperature }, ""},
		{"max tokens -1", func(c *RunConfig) { c.MaxTokens = -1 }, "max tokens -1 is negative"},
		{"temperature NaN", func(c *RunConfig) { c.Sampling.Temperature = nan }, "temperature is NaN"},
		{"temperature Inf", func(c *RunConfig) { c.Sampling.Temperature = inf }, "temperature is +Inf"},
		{"temperature denormal", func(c *RunConfig) { c.Sampling.Temperature = 1e-45 }, "below the smallest that samples"},
		{"temperature 1e-6", func(c *RunConfig) { c.Sampling.Temperature = 1e-6 }, "below the smallest that samples"},
		{"temperature -0.5", func(c *RunConfig) { c.Sampling.Temperature = -0.5 }, "temperature -0.5 is outside [0, 100]"},
		{"top-p NaN", func(c *RunConfig) { c.Sampling.TopP = nan }, "top-p is NaN"},
		{"top-p 2", func(c *RunConfig) { c.Sampling.TopP = 2 }, "top-p 2 is outside [0, 1]"},
		{"top-k -1", func(c *RunConfig) { c.Sampling.TopK = -1 }, "top-k -1 is negative"},
		{"tp -1", func(c *RunConfig) { c.TP = -1 }, "TP -1 is negative"},
		{"tp 2^31", func(c *RunConfig) { c.TP = 1 << 31 }, "TP 2147483648 is more than this machine can run"},
		{"backend", func(c *RunConfig) { c.AllReduce = "pigeon" }, "pigeon"},
		{"negative id", func(c *RunConfig) { c.PromptIDs = []int32{3, -2} }, "prompt token id -2 (position 1) is negative"},
		{"empty prompt", func(c *RunConfig) { c.PromptIDs = nil }, "empty prompt"},
		{"k -3", func(c *RunConfig) { c.Drafter = DrafterConfig{Kind: "ngram", K: -3} }, "k=-3 outside"},
		{"tree -1 without a drafter", func(c *RunConfig) { c.Drafter.Tree = -1 }, "tree branching -1"},
	} {
		cfg := ok
		tc.edit(&cfg)
		err := CheckRunConfig(cfg)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: CheckRunConfig = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestResolveCtx(t *testing.T) {
	cfg := model.Config{MaxSeq: 2048}
	for _, tc := range []struct {
		asked, got int
		want       string
	}{
		{0, 2048, ""}, {1, 1, ""}, {2048, 2048, ""},
		{2049, 0, "beyond the 2048 positions"}, {math.MaxInt, 0, "beyond the 2048 positions"}, {-1, 0, "context -1 is negative"},
	} {
		got, err := resolveCtx(tc.asked, cfg)
		if got != tc.got || tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("resolveCtx(%d) = %d, %v; want %d, %q", tc.asked, got, err, tc.got, tc.want)
		}
	}
	if got, _ := resolveCtx(0, model.Config{MaxSeq: 1 << 20}); got != defaultCtx {
		t.Errorf("resolveCtx(0) of a 1M-context model = %d, want the %d cap", got, defaultCtx)
	}
}

func TestCheckTokenizer(t *testing.T) {
	tok := func(n int) tokenizer.Tokenizer {
		tk, err := tokenizer.New(synthetic.Vocab(n))
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	for _, tc := range []struct {
		tokens, vocab int
		want          string
	}{
		{4096, 4096, ""},
		{4096 - 300, 4096, ""}, // padding rows
		{100, 4096, "the tokenizer has 100 tokens, the model 4096"},
		{5000, 4096, "the model only 4096 embedding rows"},
	} {
		err := checkTokenizer("m", model.Config{Vocab: tc.vocab}, tok(tc.tokens))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkTokenizer(%d tokens, vocab %d) = %v, want %q", tc.tokens, tc.vocab, err, tc.want)
		}
	}
}

// The memory check refuses before the target is built, with the figures;
// without MemAvailable it refuses nothing.
func TestOpenChecksMemory(t *testing.T) {
	defer func(f func() (int64, error)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, error) { return 1 << 10, nil } // 1 KiB
	_, err := Open(context.Background(), "synthetic:tiny", Options{CtxLen: 64})
	if err == nil || !strings.Contains(err.Error(), "this machine has 0.0 GiB available (MemAvailable)") || !strings.Contains(err.Error(), "KV cache") {
		t.Errorf("Open with 1 KiB available = %v, want a refusal with the figures", err)
	}
	availableMemory = func() (int64, error) { return 0, errors.New("no /proc/meminfo") }
	e, err := Open(context.Background(), "synthetic:tiny", Options{CtxLen: 64})
	if err != nil {
		t.Fatalf("Open without MemAvailable = %v", err)
	}
	e.Close()
	w, kv := memoryNeed(model.Config{Layers: 2, KVHeads: 2, HeadDim: 4, Dim: 8, Heads: 2, FFN: 8, Vocab: 10}, "F16", 100, 4)
	if kv != 2*100*4*4*2*4 || w != float64(params(model.Config{Layers: 2, KVHeads: 2, HeadDim: 4, Dim: 8, Heads: 2, FFN: 8, Vocab: 10}))*2 {
		t.Errorf("memoryNeed = %v weights, %v KV; want F16 weights and KV replicated to 4 ranks", w, kv)
	}
}

func TestOpenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, "synthetic:tiny", Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Open(cancelled) = %v, want context.Canceled", err)
	}
}
