// rigscope CUDA kernels: the small steps of the architectures' blocks
// beyond Llama's (included at the end of kernels.cu; gpu/cuda/arch.go).
// Launched with programmatic dependent launch like every step kernel.

// Gemma 3's embedding scale: x (n floats) *= s (sqrt(dim) as a float32,
// as the CPU engine). grid-stride.
extern "C" __global__ void scale_inplace(float* x, float s, long n) {
  pdl_wait();
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) x[i] *= s;
  pdl_trigger();
}

// Gemma 3's post-attention and post-MLP norms with the residual add:
// x[t] += rmsnorm(o[t]) * w for the T rows of dim (the CPU's RMSNorm,
// o * (1/rms) * w, then the add); with clear, o is zeroed as it is read
// (at TP > 1 o is where the allreduce adds the ranks' partial sums).
// grid T, block 256.
extern "C" __global__ void add_rmsnorm(float* x, float* o, const float* w, int dim, float eps, int clear) {
  pdl_wait();
  const long r = (long)blockIdx.x * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) ss = fmaf(o[r + i], o[r + i], ss);
  const float inv = 1.f / sqrtf(block_sum2(ss, 0.f).x / dim + eps);
  pdl_trigger();
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    x[r + i] += o[r + i] * inv * w[i];
    if (clear) o[r + i] = 0.f;
  }
}
