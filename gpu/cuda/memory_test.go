//go:build cuda

package cuda

import (
	"strings"
	"testing"

	"rigscope/engine/model"
)

// llama8bConfig is the Llama 3.1 8B shape the GPU checks and timings load
// with synthetic weights (LoadSynthetic).
var llama8bConfig = model.Config{Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 128256,
	NormEps: 1e-5, RopeTheta: 500000, RopeLayout: model.RopeHalf, MaxSeq: 8192}

// kvTestConfig is llama8bConfig with its 128k trained context.
var kvTestConfig = func() model.Config { c := llama8bConfig; c.MaxSeq = 131072; return c }()

// A bf16 cache counts 2 bytes a value: half float32's cache, the rest of
// the run state unchanged, so about twice the context fits a budget.
func TestStateBytesKV(t *testing.T) {
	cfg := kvTestConfig
	for _, tp := range []int{1, 2} {
		f, b := stateBytes(cfg, 4096, 132, tp, kvF32), stateBytes(cfg, 4096, 132, tp, kvBF16)
		// 2 (K, V) x 32 layers x (4096+16) slots x 1024 values (8 KV heads x 128), whichever way the ranks split it
		if want := int64(2 * 32 * (4096 + MaxTokens) * 1024 * 4); f.kv != want {
			t.Errorf("tp %d: float32 cache %d bytes, want %d", tp, f.kv, want)
		}
		if 2*b.kv != f.kv || b.other != f.other {
			t.Errorf("tp %d: bf16 cache %d bytes and %d other, float32 %d and %d", tp, b.kv, b.other, f.kv, f.other)
		}
	}
	cases := []struct {
		name   string
		budget int64
	}{{"8 GiB", 8 << 30}, {"12 GiB", 12 << 30}, {"3 GiB", 3 << 30}}
	for _, c := range cases {
		nf, nb := contextFits(cfg, c.budget, 132, 1, kvF32), contextFits(cfg, c.budget, 132, 1, kvBF16)
		if nf < 1024 || nb < 2*nf || nb > 2*nf+4096 {
			t.Errorf("%s: float32 fits %d positions, bf16 %d: want about twice", c.name, nf, nb)
		}
		if stateBytes(cfg, nb, 132, 1, kvBF16).total() > c.budget || stateBytes(cfg, nb+1024, 132, 1, kvBF16).total() <= c.budget {
			t.Errorf("%s: bf16 context %d is not the longest that fits", c.name, nb)
		}
	}
	if n := contextFits(cfg, 1<<40, 132, 1, kvBF16); n != cfg.MaxSeq {
		t.Errorf("1 TiB: context %d, want the model's %d", n, cfg.MaxSeq)
	}
	if n := contextFits(cfg, 1<<20, 132, 1, kvBF16); n != 0 {
		t.Errorf("1 MiB: context %d, want 0", n)
	}
}

// The refusal gives the weights, the cache (its format and positions) and
// the rest, and the hint to a bf16 cache only when it is float32.
func TestFitsError(t *testing.T) {
	cfg := kvTestConfig
	need := stateBytes(cfg, 8192, 132, 1, kvF32)
	need.weights = 16 << 30
	if err := fitsError(need, cfg, "H200", 140<<30, 141<<30); err != nil {
		t.Fatalf("fits in 140 GiB: %v", err)
	}
	err := fitsError(need, cfg, "H200", 16<<30, 141<<30)
	if err == nil {
		t.Fatal("fits in 16 GiB")
	}
	for _, s := range []string{"8192-position float32 KV cache", "weights 16.00 + KV cache 2.00", "H200 has 16.00 GiB free of 141.00 GiB", "RIGSCOPE_CUDA_KV=bf16"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
	need = stateBytes(cfg, 8192, 132, 1, kvBF16)
	need.weights = 16 << 30
	err = fitsError(need, cfg, "H200", 16<<30, 141<<30)
	if err == nil || !strings.Contains(err.Error(), "8192-position bf16 KV cache") || !strings.Contains(err.Error(), "KV cache 1.00") || strings.Contains(err.Error(), "RIGSCOPE_CUDA_KV") {
		t.Errorf("bf16 refusal: %v", err)
	}
}

// One rank per GPU: each GPU holds a share of the cache, so two GPUs fit a
// longer context than one for the same budget, never a shorter one.
func TestContextFitsShare(t *testing.T) {
	cfg := kvTestConfig
	for _, budget := range []int64{4 << 30, 16 << 30, 64 << 30} {
		one, two := contextFitsShare(cfg, budget, 132, 2, kvBF16, 1), contextFitsShare(cfg, budget, 132, 2, kvBF16, 2)
		if one != contextFits(cfg, budget, 132, 2, kvBF16) {
			t.Errorf("budget %d: one GPU's share %d, contextFits %d", budget, one, contextFits(cfg, budget, 132, 2, kvBF16))
		}
		if two < one || one > 0 && one < cfg.MaxSeq && two == one {
			t.Errorf("budget %d: one GPU fits %d positions, each of two %d", budget, one, two)
		}
	}
}
