// Package tensor describes weights as they lie in model files: the storage
// dtypes (F32, F16, BF16, Q8_0, Q4_0, ...), their conversions, and Tensor, a
// read-only view (usually of a memory-mapped file) with row-major shape,
// stride, and row/column slicing for tensor-parallel shards. Activations are
// plain float32 slices; kernels live in tensor/cpu and gpu/cuda.
package tensor
