// Package model is the Llama-family decoder: config, weights (possibly one
// tensor-parallel shard of them), a position-indexed KV cache that can be
// rewound, and the forward pass over a batch of tokens (prefill, decode,
// chain or tree verification). The code follows the paper's order: embed,
// then per layer RMSNorm → attention (GQA, RoPE) → residual → RMSNorm →
// SiLU-gated MLP → residual, then the final norm and the output projection.
// A mixture of experts (moe.go) takes the MLP's place in its layers, and
// multi-head latent attention (mla.go) the attention's.
package model
