// rigscope CUDA kernels: allreduce over peer pointers (included by
// kernels.cu, so both compile into one PTX module).
// --------------------------------------------------------- allreduce
// One shot: out[i] = sum over ranks r (in rank order) of bufs[r][i].
extern "C" __global__ void ar_oneshot(float* out, const float* const* bufs, int nranks, long n) {
  long n4 = n / 4;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 s = reinterpret_cast<const float4*>(bufs[0])[i];
    for (int r = 1; r < nranks; r++) {
      float4 v = reinterpret_cast<const float4*>(bufs[r])[i];
      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    reinterpret_cast<float4*>(out)[i] = s;
  }
  for (long i = n4 * 4 + blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    float s = bufs[0][i];
    for (int r = 1; r < nranks; r++) s += bufs[r][i];
    out[i] = s;
  }
}

// Two shot, phase 1 (reduce-scatter): dst[i] = sum_r bufs[r][i] for i in [lo, hi).
extern "C" __global__ void ar_reduce_range(float* dst, const float* const* bufs, int nranks, long lo, long hi) {
  for (long i = lo + blockIdx.x * (long)blockDim.x + threadIdx.x; i < hi; i += (long)gridDim.x * blockDim.x) {
    float s = bufs[0][i];
    for (int r = 1; r < nranks; r++) s += bufs[r][i];
    dst[i] = s;
  }
}

// Two shot, phase 2 (all-gather): dst[i] = src_of_owner(i)[i], the owner of
// i being the rank whose segment [n*r/R, n*(r+1)/R) holds it; me's own
// segment is skipped.
extern "C" __global__ void ar_gather(float* dst, const float* const* bufs, int nranks, int me, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    int r = (int)((i * nranks + nranks - 1) / n);  // smallest r with n*(r+1)/R > i, approx
    while (r > 0 && n * r / nranks > i) r--;
    while (r < nranks - 1 && n * (r + 1) / nranks <= i) r++;
    if (r != me) dst[i] = bufs[r][i];
  }
}


// --------------------------------------------------------- P2P self-test
// The pattern word k of a (seed) block: the same hash in Go (gpu/cuda/p2p.go).
__device__ __forceinline__ unsigned p2p_word(unsigned seed, unsigned k) {
  unsigned x = seed * 0x9E3779B1u + k * 0x85EBCA77u + 0x27d4eb2fu;
  x ^= x >> 15; x *= 0x2C1B3C6Du; x ^= x >> 12; x *= 0x297A2D39u; x ^= x >> 15;
  return x;
}

// Run on GPU `me`: write the pattern of `seed` into a peer's memory through
// the peer pointer (peer_dst), and copy the peer's published pattern
// (peer_src) into local memory (local_dst); the host checks both.
extern "C" __global__ void p2p_probe(unsigned* peer_dst, const unsigned* peer_src, unsigned* local_dst, unsigned seed, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    peer_dst[i] = p2p_word(seed, (unsigned)i);
    local_dst[i] = peer_src[i];
  }
}

// x[i] += sum over ranks r (in rank order) of parts[r][i]: the residual add
// after a row-parallel product when tensor-parallel ranks share one GPU
// (oneshot: every rank's partial sums read where they are).
extern "C" __global__ void ar_add(float* x, const float* const* parts, int nranks, long n) {
  pdl_wait();
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    float s = parts[0][i];
    for (int r = 1; r < nranks; r++) s += parts[r][i];
    x[i] += s;
  }
}
