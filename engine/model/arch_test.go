package model_test

import (
	"fmt"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
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
	"arch/tiny-gemma3-hf", "arch/tiny-gemma3.F16.gguf",
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

// Llama 3.1's divisors computed from config.json's llama3 parameters equal
// the rope_freqs.weight llama.cpp's converter wrote for the same model.
func TestLlama3DivisorsMatchGGUF(t *testing.T) {
	hf, gg := openArch(t, "arch/tiny-llama31-hf"), openArch(t, "arch/tiny-llama31.F16.gguf")
	if c := hf.Config(); c.RopeScaling.Type != model.RopeScaleLlama3 || gg.Config().RopeScaling.Type != model.RopeScaleFreqs {
		t.Fatalf("scalings %v and %v; want llama3 and the rope_freqs tensor", c.RopeScaling, gg.Config().RopeScaling)
	}
	wh, err := model.LoadWeights(hf, model.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	wg, err := model.LoadWeights(gg, model.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	if len(wh.RopeDivisors) != 16 || len(wg.RopeDivisors) != 16 {
		t.Fatalf("divisors %v and %v; want 16 each", wh.RopeDivisors, wg.RopeDivisors)
	}
	if d := maxDiff(wh.RopeDivisors, wg.RopeDivisors); d > 1e-5 {
		t.Errorf("llama3 divisors %v differ from rope_freqs.weight %v by %g", wh.RopeDivisors, wg.RopeDivisors, d)
	}
	if wh.RopeDivisors[0] != 1 || wh.RopeDivisors[15] != 8 {
		t.Errorf("divisors %v: want 1 for the fastest pair and the factor 8 for the slowest", wh.RopeDivisors)
	}
}

// Linear scaling by f rotates position f*p as plain RoPE rotates p.
func TestLinearScaling(t *testing.T) {
	s := model.RopeScaling{Type: model.RopeScaleLinear, Factor: 2}
	scaled := cpu.NewScaledRopeTable(8, 64, 10000, s.Divisors(10000, 8))
	plain := cpu.NewRopeTable(8, 64, 10000)
	for p := range 20 {
		a, b := []float32{1, 2, 3, 4, 5, 6, 7, 8}, []float32{1, 2, 3, 4, 5, 6, 7, 8}
		scaled.Apply(a, 2*p, false)
		plain.Apply(b, p, false)
		if d := maxDiff(a, b); d > 1e-5 {
			t.Errorf("position %d scaled by 2 differs from %d plain by %g", 2*p, p, d)
		}
	}
}
