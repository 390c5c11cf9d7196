package model_test

import (
	"fmt"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/internal/fixtures"
)

// archFiles are the tiny models of ../shared/models/arch whose
// extensions the CPU engine implements (RoPE scaling, q/k/v biases, q/k
// head norms, sliding-window attention), in both formats where both exist.
var archFiles = []string{
	"arch/tiny-llama31-hf", "arch/tiny-llama31.F16.gguf",
	"arch/tiny-qwen2-hf", "arch/tiny-qwen2.F16.gguf",
	"arch/tiny-qwen3-hf", "arch/tiny-qwen3.F16.gguf",
	"arch/tiny-mistral-hf",
}

func openArch(t *testing.T, file string) loader.Source {
	t.Helper()
	src, err := loader.Open(fixtures.Path(t, file), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// windowed is src with its sliding window replaced.
type windowed struct {
	model.WeightSource
	window int
}

func (w windowed) Config() model.Config {
	c := w.WeightSource.Config()
	c.SlidingWindow = w.window
	return c
}

// Each architecture's tree batch gives each node its chain's logits bit
// for bit; with windows of 2 and 3 positions the tree's own ancestors and
// the cached prefix fall out of the window.
func TestArchTreeEqualsChains(t *testing.T) {
	for _, file := range archFiles {
		t.Run(file, func(t *testing.T) {
			src := openArch(t, file)
			testTreeEqualsChains(t, src)
			for _, w := range []int{2, 3} {
				t.Run(fmt.Sprintf("window%d", w), func(t *testing.T) { testTreeEqualsChains(t, windowed{src, w}) })
			}
		})
	}
}

// TP 2 and 4 give TP 1's logits for each architecture (4 heads, 2 kv
// heads: TP 4 replicates the kv heads, and their biases, over two ranks
// each; q/k norms are per head-dim and replicated).
func TestArchTensorParallel(t *testing.T) {
	for _, file := range archFiles {
		src := openArch(t, file)
		for _, tp := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/tp%d", file, tp), func(t *testing.T) { testTensorParallel(t, src, tp) })
		}
	}
}
