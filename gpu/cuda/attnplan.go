package cuda

import "rigscope/engine/model"

// attnMaxChunks bounds the partial columns of the batch-invariant
// attention (attnPlan.np): a longer cache gets longer chunks, so that the
// partials stay a small share of memory (llama-8b at 128K positions:
// 2049 chunks of 64 and their groups, 0.7 GB beside a 16 GB bf16 cache)
// and the merge short. Longer chunks leave blocks idle at short
// positions (a decode at 500 with chunks of 64: 8 blocks per KV head).
const attnMaxChunks = 4096

// attnPlan is how the attention kernel divides a cache of a target (or
// an EAGLE head): S blocks per KV head and row group (grid y, fixed per
// CUDA graph) and, with chunk > 0, fixed chunks of chunk slots at
// multiples of chunk, np of them at most (kernels/attn_fixed.cu: a row
// at position p then gets the same bits in a decode step as in a verify;
// Tuning.AttnChunk); chunk 0 is the earlier split by the step's length
// (attn_body; RIGSCOPE_CUDA_ATTCHUNK=0, for comparisons).
//
// With group 4 the chunks are combined in groups of 4 at multiples of 4
// (a fixed tree) and the merge runs over the groups: with more chunks
// than blocks each block takes whole groups and writes their partials,
// so the last block merges about S of them instead of every chunk's
// (Tuning.AttnGroup; 1: the merge over chunks).
//
// With one set, a step of one token runs the fixed chunks' _t1 twin,
// compiled for T = 1 (Tuning.AttnOne), and with chain set a step the
// caller vouches is a chain their _ch twin (Tuning.AttnChain): the same
// bits, less code.
type attnPlan struct {
	S, chunk, np, group int
	one, chain          bool
}

// newAttnPlan is the plan for a cache of slots slots on a GPU of sms SMs.
func newAttnPlan(cfg model.Config, slots, sms int, tune Tuning) attnPlan {
	p := attnPlan{S: attnSplits(cfg, slots, sms)}
	if tune.AttnSplits > 0 {
		p.S = tune.AttnSplits
	}
	if tune.AttnChunk > 0 {
		p.chunk = tune.AttnChunk
		for (slots+p.chunk-1)/p.chunk > attnMaxChunks {
			p.chunk *= 2
		}
		p.np = (slots + p.chunk - 1) / p.chunk
		p.group = max(1, tune.AttnGroup)
		p.one = tune.AttnOne
		p.chain = tune.AttnChain
	}
	return p
}

// kernel is the attention kernel name (attn_128_2, attnx_64_1_kb) for
// this plan and a step of T tokens: the same name runs the fixed chunks,
// with _t1 appended their one-token twin, with _ch their twin for a step
// known to be a chain (positions base+t, the causal mask: a speculative
// cycle's verify), with _len appended the split by length (all
// instantiated at the end of kernels/attention.cu).
func (p attnPlan) kernel(name string, T int, chain bool) string {
	switch {
	case p.chunk == 0:
		return name + "_len"
	case p.one && T == 1:
		return name + "_t1"
	case p.chain && chain && T > 1:
		return name + "_ch"
	}
	return name
}

// cols is the partial columns the attention scratch (pm, pl, pacc) holds
// per query row: a split's (S) or a chunk's (np).
func (p attnPlan) cols() int {
	n := p.np
	if p.group > 1 {
		n += (p.np + p.group - 1) / p.group // the groups' columns follow the chunks'
	}
	return max(p.S, n)
}

// attnSplits is how many parts the attention kernel splits the cache into
// (grid (hk, S, row groups)): about two blocks per SM at most, at most 32,
// and no more than 32-slot chunks in the cache.
func attnSplits(cfg model.Config, slots, sms int) int {
	s := (2*sms + cfg.KVHeads - 1) / cfg.KVHeads
	return max(1, min(s, 32, (slots+31)/32))
}
