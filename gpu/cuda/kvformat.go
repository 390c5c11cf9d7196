package cuda

import "fmt"

// kvFormat is the element type of the GPU KV cache (Tuning.KV): float32,
// or bf16 (half the bytes, so twice the context in the same memory;
// rounded to nearest even when the attention or pf_kv stores a slot,
// widened to float32 when a kernel reads it: every sum stays float32).
type kvFormat string

const (
	kvF32  kvFormat = "f32"
	kvBF16 kvFormat = "bf16"
)

// defaultKV is the cache without RIGSCOPE_CUDA_KV: bf16, since the
// attention is batch-invariant (kernels/attn_fixed.cu): a verify's rows
// and stored slots equal decode's bit for bit with either format, so a
// bf16 cache no longer turns float32-level differences into bf16 steps
// and speculative decoding gives plain greedy's tokens (H200: gocoder-14m
// and the llama-8b shape, cuda-check -checks kv,kvbench; decode as fast
// as float32). RIGSCOPE_CUDA_KV=f32 keeps float32.
const defaultKV = kvBF16

// parseKV reads RIGSCOPE_CUDA_KV ("" for the default).
func parseKV(v string) (kvFormat, error) {
	switch v {
	case "":
		return defaultKV, nil
	case "f32", "float32":
		return kvF32, nil
	case "bf16":
		return kvBF16, nil
	}
	return "", fmt.Errorf("cuda: RIGSCOPE_CUDA_KV=%q: want f32 or bf16", v)
}

// elemBytes is the bytes of one cached value.
func (f kvFormat) elemBytes() int {
	if f == kvBF16 {
		return 2
	}
	return 4
}

// kernel is the name of the cache-reading kernel name (attn_128_2,
// attnx_64_1, pf_kv, pf_attn_128, pf_fa_64) built for this format: the
// bf16 twins carry the suffix _kb (kernels/attention.cu).
func (f kvFormat) kernel(name string) string {
	if f == kvBF16 {
		return name + "_kb"
	}
	return name
}

// String names the format in messages ("float32", "bf16").
func (f kvFormat) String() string {
	if f == kvBF16 {
		return "bf16"
	}
	return "float32"
}
