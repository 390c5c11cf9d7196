// Package cuda runs the Llama forward pass on an NVIDIA GPU through the
// CUDA driver API (gorgonia.org/cu plus a few cgo calls for stream capture,
// graphs and pinned host memory): weights uploaded once (bf16, f16, f32, or
// Q4_K, Q5_K, Q6_K, Q4_0, Q8_0 blocks as the GGUF file stores them, read by
// dp4a kernels against an int8-quantized activation; bf16 layer matrices
// tiled for the tensor cores), a position-indexed
// float32 KV cache, every decode and verify step captured as a CUDA graph
// (kernels chained by programmatic dependent launch on sm_90) and replayed,
// argmax or sampling on the device. A Target may split the model over
// tensor-parallel ranks that share one GPU or run one per GPU (rankdev.go:
// each rank's context, kernels, stream, weights and cache on its GPU, one
// step graph across them). The ranks join through one implementation of
// the GPU allreduce backends (oneshot, twoshot, host: arKernel in
// stepcomm.go; nccl across GPUs), inside the step and in cuda.Group for
// allreduce-bench, with a P2P self-test before peer access is trusted.
//
// The decoder itself is engine/model's Step, the one model definition
// both devices run: a Target implements its operations (model.Ops,
// step_ops.go) with the fused kernels, so the GPU's decode and verify
// steps follow the CPU's sequence by construction. The prefill path for
// long prompts (prefill.go: matrix-matrix kernels over chunks of up to
// PrefillChunk tokens) stays a fast path of its own, sequenced there and
// checked against the step (cuda-check -checks prefill).
//
// Besides Llama it runs the dense architectures' extensions as the CPU
// engine does (arch.go): RoPE scaling from the CPU's own tables, Qwen2's
// q/k/v biases, Qwen3's q/k head norms, Mistral's sliding window, Gemma 3;
// and softmax-routed mixtures of experts (Mixtral, Qwen3-MoE: moe.go, three
// kernels per layer that read only the chosen experts' rows); it refuses
// DeepSeek-V3's router and shared experts and latent attention by name.
//
// Everything except this file and the host-only ones (layout.go,
// arch_refuse.go, placement.go, tuning.go, gpucache.go) needs the `cuda` build tag (cuda.h and
// libcuda.so to build, an NVIDIA driver to run); builds without the tag
// contain none of it.
package cuda
