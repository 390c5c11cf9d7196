package model_test

import (
	"context"
	"math"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// A bf16 cache (KVCache.BF16, the GPU's RIGSCOPE_CUDA_KV=bf16 on the CPU)
// rounds each value as it is stored, before any read, so: a batch of any
// size still gives decode's logits to the bit (what the GPU's verify
// approximates: its steps are not batch-invariant, see
// bench/cuda/wip/kvbf16-cpu-amplification.patch); every stored value is a
// bf16 value; layer 0's values are the float32 cache's rounded (they
// depend on the embedding alone); and the logits move from the float32
// cache's by the rounding alone (not zero, well under a percent of the
// largest logit).
func TestKVCacheBF16(t *testing.T) {
	long := append(append([]int32{}, prompt...), prompt...)
	for _, spec := range []string{"tiny", "tiny?dtype=bf16"} {
		src := tinySource(t, spec)
		V := src.Config().Vocab
		f32, b16 := newRunner(t, src), newRunner(t, src)
		b16.KV.BF16 = true
		want := make([]float32, len(long)*V) // float32 cache, one token a step
		one := make([]float32, len(long)*V)  // bf16 cache, one token a step
		for i, tok := range long {
			for _, c := range []struct {
				r   *model.Runner
				out []float32
			}{{f32, want}, {b16, one}} {
				if err := c.r.Forward(context.Background(), model.Batch{Tokens: []int32{tok}}, c.out[i*V:(i+1)*V]); err != nil {
					t.Fatal(err)
				}
			}
		}
		n, w := len(long), b16.KV.Width
		for l := range b16.KV.Layers {
			for i, x := range append(append([]float32{}, b16.KV.K[l][:n*w]...), b16.KV.V[l][:n*w]...) {
				if r := tensor.BF16ToF32(tensor.F32ToBF16(x)); r != x {
					t.Fatalf("%s: layer %d value %d = %v is not a bf16 value", spec, l, i, x)
				}
			}
		}
		for i := range n * w {
			for _, kv := range [][2][]float32{{b16.KV.K[0], f32.KV.K[0]}, {b16.KV.V[0], f32.KV.V[0]}} {
				if r := tensor.BF16ToF32(tensor.F32ToBF16(kv[1][i])); kv[0][i] != r {
					t.Fatalf("%s: layer 0 value %d = %v, the float32 cache's %v rounds to %v", spec, i, kv[0][i], kv[1][i], r)
				}
			}
		}
		var peak float64
		for _, x := range want {
			peak = math.Max(peak, math.Abs(float64(x)))
		}
		if d := maxDiff(one, want) / peak; d == 0 || d > 1e-2 {
			t.Errorf("%s: logits with a bf16 cache %.2e relative from the float32 cache's, want in (0, 1e-2]", spec, d)
		}
		for _, batch := range []int{len(long), 5, 2} {
			b16.KV.Rewind(0)
			all := make([]float32, len(long)*V)
			for t0 := 0; t0 < len(long); t0 += batch {
				t1 := min(t0+batch, len(long))
				if err := b16.Forward(context.Background(), model.Batch{Tokens: long[t0:t1], Logits: model.LogitsAll}, all[t0*V:t1*V]); err != nil {
					t.Fatal(err)
				}
			}
			for i := range long {
				if j := firstBitDiff(one[i*V:(i+1)*V], all[i*V:(i+1)*V]); j >= 0 {
					t.Errorf("%s bf16 cache: token %d, batches of %d: logit %d = %v, decode gives %v", spec, i, batch, j, all[i*V+j], one[i*V+j])
					break
				}
			}
		}
	}
}
