package model_test

import (
	"context"
	"testing"

	"rigscope/engine/model"
)

// After its first pass at a batch size, a runner's forward pass allocates
// nothing: garbage made per token would stay resident until the collector
// runs, and with the KV cache counted as live that can be a cache's worth.
func TestForwardAllocatesNothing(t *testing.T) {
	long := make([]int32, 200) // more than a micro-batch: the chunked path
	for i := range long {
		long[i] = int32(3 + i%200)
	}
	for _, tc := range []struct {
		spec   string
		tokens []int32
		mode   model.LogitsMode
	}{
		{"tiny?dtype=q8_0", prompt[:1], model.LogitsLast},                // a decode step
		{"tiny?dtype=q8_0", append(prompt, prompt...), model.LogitsLast}, // threaded row-wise steps
		{"tiny?dtype=f16", append(prompt, prompt...), model.LogitsAll},
		{"tiny", long, model.LogitsLast},
		{"tiny-moe", prompt[:1], model.LogitsLast}, // mixture of experts
		{"tiny-moe", append(prompt, prompt...), model.LogitsAll},
		{"tiny-mla", prompt[:1], model.LogitsLast}, // latent attention, shared expert, groups
		{"tiny-mla", append(prompt, prompt...), model.LogitsAll},
	} {
		src := tinySource(t, tc.spec)
		r := newRunner(t, src)
		logits := make([]float32, len(tc.tokens)*src.Config().Vocab)
		step := func() {
			if err := r.KV.Rewind(0); err != nil {
				t.Fatal(err)
			}
			if err := r.Forward(context.Background(), model.Batch{Tokens: tc.tokens, Logits: tc.mode}, logits); err != nil {
				t.Fatal(err)
			}
		}
		step()
		if n := testing.AllocsPerRun(5, step); n != 0 {
			t.Errorf("%s, %d tokens: %.1f allocations per forward pass, want 0", tc.spec, len(tc.tokens), n)
		}
	}
}
