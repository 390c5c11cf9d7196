// Package eagle3 runs EAGLE-3 draft heads: the one-layer drafters that
// SGLang and vLLM deploy, loaded from the same checkpoint directories
// (config.json with architectures LlamaForCausalLMEagle3 or
// Eagle3LlamaForCausalLM, model.safetensors with fc, midlayer.*, norm,
// lm_head, d2t, t2d).
//
// The head reads the target's residual stream after three of its layers
// (the loop turns capture on for FeatureLayers and hands each forward's
// features to Observe). Each drafting round it first "extends" its own KV
// cache with one row per newly verified position t: the input is
//
//	cat(input_layernorm(embed(token[t+1])), hidden_norm(fc(cat(f0[t], f1[t], f2[t]))))
//
// at RoPE position t, through one Llama decoder layer whose residual is the
// fused feature. The last row's output h gives the first draft's logits
// (lm_head(norm(h)), over the draft vocabulary, mapped to target ids by
// d2t); each further draft step feeds (embed(draft), h) at the next
// position and appends to the cache. Draft-step rows are discarded after
// verification; the accepted positions are extended with the target's
// fresh features at the next round.
//
// Trees grow as the model drafter's do: per depth, the Branch best
// (parent, token) pairs by cumulative log-probability; every node attends
// to the extended prefix and its own ancestors.
//
// The head runs unsharded on the calling goroutine even when the target is
// tensor-parallel: the features it reads are the residual stream, which is
// replicated on every rank after each allreduce, so rank 0's copy is
// enough, and the head is small (one layer).
package eagle3
