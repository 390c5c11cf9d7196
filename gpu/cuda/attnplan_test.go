package cuda

import (
	"testing"

	"rigscope/engine/model"
)

// newAttnPlan: the split count by shape (or the knob), the chunk from the
// knob doubled until at most attnMaxChunks chunks cover the cache, none
// with the split by length; the scratch holds the larger of S and the
// chunks' columns (and the groups' after them).
func TestNewAttnPlan(t *testing.T) {
	llama := model.Config{Heads: 32, KVHeads: 8, HeadDim: 128}
	cases := []struct {
		name       string
		slots, sms int
		tune       Tuning
		S, ch, np  int
		cols       int
	}{
		{"llama ctx 4160 on an H200", 4176, 132, Tuning{AttnChunk: 32}, 32, 32, 131, 131},
		{"short cache", 528, 132, Tuning{AttnChunk: 32}, 17, 32, 17, 17},
		{"split by length", 4176, 132, Tuning{}, 32, 0, 0, 32},
		{"chunk 128", 4176, 132, Tuning{AttnChunk: 128}, 32, 128, 33, 33},
		{"long cache doubles the chunk", 131072 + 16, 132, Tuning{AttnChunk: 32}, 32, 64, 2049, 2049},
		{"longer still", 4*131072 + 16, 132, Tuning{AttnChunk: 32, AttnGroup: 4}, 32, 256, 2049, 2049 + 513},
		{"exactly attnMaxChunks", 32 * attnMaxChunks, 132, Tuning{AttnChunk: 32}, 32, 32, attnMaxChunks, attnMaxChunks},
		{"splits knob", 4176, 132, Tuning{AttnChunk: 64, AttnSplits: 7}, 7, 64, 66, 66},
		{"tiny cache", 20, 132, Tuning{AttnChunk: 32}, 1, 32, 1, 1},
		{"groups of 4: their columns follow the chunks'", 4176, 132, Tuning{AttnChunk: 32, AttnGroup: 4}, 32, 32, 131, 131 + 33},
		{"groups of a short cache", 528, 132, Tuning{AttnChunk: 32, AttnGroup: 4}, 17, 32, 17, 17 + 5},
		{"groups with the split by length: none", 4176, 132, Tuning{AttnGroup: 4}, 32, 0, 0, 32},
	}
	for _, c := range cases {
		p := newAttnPlan(llama, c.slots, c.sms, c.tune)
		if p.S != c.S || p.chunk != c.ch || p.np != c.np || p.cols() != c.cols {
			t.Errorf("%s: got S=%d chunk=%d np=%d cols=%d, want %d %d %d %d", c.name, p.S, p.chunk, p.np, p.cols(), c.S, c.ch, c.np, c.cols)
		}
		if want := map[bool]string{true: "attn_128_2_kb_len", false: "attn_128_2_kb"}[p.chunk == 0]; p.kernel("attn_128_2_kb", 5, false) != want {
			t.Errorf("%s: kernel %q, want %q", c.name, p.kernel("attn_128_2_kb", 5, false), want)
		}
		if p.chunk > 0 && (p.np*p.chunk < c.slots || p.np > attnMaxChunks || p.chunk%32 != 0) {
			t.Errorf("%s: %d chunks of %d do not cover %d slots within %d chunks", c.name, p.np, p.chunk, c.slots, attnMaxChunks)
		}
	}
}

// The one-token twin (_t1) only for steps of one token, the chain twin
// (_ch) only for steps of more than one the caller says are a chain; each
// only with fixed chunks and its knob on.
func TestAttnPlanKernelOne(t *testing.T) {
	llama := model.Config{Heads: 32, KVHeads: 8, HeadDim: 128}
	cases := []struct {
		name  string
		tune  Tuning
		T     int
		chain bool
		want  string
	}{
		{"decode", Tuning{AttnChunk: 32, AttnOne: true}, 1, false, "attn_128_1_kb_t1"},
		{"verify", Tuning{AttnChunk: 32, AttnOne: true}, 5, false, "attn_128_1_kb"},
		{"knob off", Tuning{AttnChunk: 32}, 1, false, "attn_128_1_kb"},
		{"split by length", Tuning{AttnOne: true}, 1, false, "attn_128_1_kb_len"},
		{"chain verify", Tuning{AttnChunk: 32, AttnOne: true, AttnChain: true}, 5, true, "attn_128_1_kb_ch"},
		{"chain decode", Tuning{AttnChunk: 32, AttnOne: true, AttnChain: true}, 1, true, "attn_128_1_kb_t1"},
		{"tree verify", Tuning{AttnChunk: 32, AttnOne: true, AttnChain: true}, 5, false, "attn_128_1_kb"},
		{"chain knob off", Tuning{AttnChunk: 32, AttnOne: true}, 5, true, "attn_128_1_kb"},
		{"chain, split by length", Tuning{AttnChain: true}, 5, true, "attn_128_1_kb_len"},
	}
	for _, c := range cases {
		if got := newAttnPlan(llama, 528, 132, c.tune).kernel("attn_128_1_kb", c.T, c.chain); got != c.want {
			t.Errorf("%s: kernel %q, want %q", c.name, got, c.want)
		}
	}
}
