// rigscope CUDA kernels: allreduce over peer pointers (included by
// kernels.cu, so both compile into one PTX module).
// --------------------------------------------------------- allreduce
// One shot: out[i] = sum over ranks r (in rank order) of bufs[r][i].
__device__ __forceinline__ void oneshot_sum(float* out, const float* const* bufs, int nranks, long n) {
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
extern "C" __global__ void ar_oneshot(float* out, const float* const* bufs, int nranks, long n) {
  oneshot_sum(out, bufs, nranks, n);
}

// One shot across GPUs, synchronized in the kernel (as vLLM's custom
// allreduce): block b of every rank first tells each peer that its buffer is
// ready (a flag in the peer's signal block, through the peer pointer) and
// waits for every peer's flag, sums, then does the same again so that no
// rank reuses its buffer while a peer still reads it. No event barriers
// around it. flags count calls per block (same on every rank). Needs every
// rank on its own GPU (ranks sharing one could wait on a kernel that is not
// resident) and a grid of at most AR_MAXB blocks.
#define AR_MAXB 512
#define AR_MAXR 8
struct ArSignal {
  unsigned start[AR_MAXB][AR_MAXR];
  unsigned end[AR_MAXB][AR_MAXR];
  unsigned flag[AR_MAXB];
};
__device__ __forceinline__ void st_release_sys(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire_sys(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void ar_block_barrier(unsigned (*slots)[AR_MAXR], ArSignal* const* sigs, int me,
                                                 int nranks, unsigned flag, bool start) {
  if (threadIdx.x < nranks) {
    ArSignal* peer = sigs[threadIdx.x];
    st_release_sys(&(start ? peer->start : peer->end)[blockIdx.x][me], flag);
    while (ld_acquire_sys(&slots[blockIdx.x][threadIdx.x]) != flag) {
    }
  }
  __syncthreads();
}
extern "C" __global__ void ar_oneshot_sync(float* out, const float* const* bufs, ArSignal* const* sigs, int me,
                                           int nranks, long n) {
  ArSignal* self = sigs[me];
  const unsigned flag = self->flag[blockIdx.x] + 1;
  ar_block_barrier(self->start, sigs, me, nranks, flag, true);
  oneshot_sum(out, bufs, nranks, n);
  __syncthreads();
  ar_block_barrier(self->end, sigs, me, nranks, flag, false);
  if (threadIdx.x == 0) self->flag[blockIdx.x] = flag;
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


// Spin for ns nanoseconds: queued on every rank before a timed allreduce, it
// keeps the GPUs busy while the host enqueues the call, so the time is the
// devices' and not the host's launch latency (gpu/cuda: Group.AllReduce).
extern "C" __global__ void spin_ns(long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < (unsigned long long)ns);
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

// ------------------------------------------- allreduce inside a forward step
// The tensor-parallel ranks of a Target that share one GPU join their
// row-parallel partial sums with these (gpu/cuda/stepcomm.go), each rank on
// its own stream: every rank r holds its replicated activations x_r and
// adds the sum of all ranks' partials, in rank order (the same bits for
// every backend and for TP 1's single partial). Each call is timed on the
// device: t0 = globaltimer when its first kernel's block 0 starts, t1 when
// its last kernel's last block ends (cnt counts that kernel's finished
// blocks and is left at 0 for the next call); t0/t1 null: not timed.
__device__ __forceinline__ unsigned long long ar_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void ar_start(unsigned long long* t0) {
  if (t0 && blockIdx.x == 0 && threadIdx.x == 0) *t0 = ar_now();
}
__device__ __forceinline__ void ar_end(unsigned long long* t1, unsigned* cnt) {
  if (!t1) return;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(cnt, 1u) == gridDim.x - 1) {
      *t1 = ar_now();
      *cnt = 0;
    }
  }
}

// oneshot (parts = every rank's partial sums, read in place) and host
// (parts = every rank's pinned host copy): x[i] += sum_r parts[r][i].
extern "C" __global__ void ars_add(float* x, const float* const* parts, int nranks, long n, unsigned long long* t0,
                                   unsigned long long* t1, unsigned* cnt) {
  pdl_wait();
  ar_start(t0);
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    float s = parts[0][i];
    for (int r = 1; r < nranks; r++) s += parts[r][i];
    x[i] += s;
  }
  ar_end(t1, cnt);
}

// twoshot, phase 1 (reduce-scatter): rank me sums its segment [lo, hi) of
// every rank's partials into its own partial buffer (bufs[me]), in place.
extern "C" __global__ void ars_reduce(const float* const* bufs, int nranks, int me, long lo, long hi,
                                      unsigned long long* t0) {
  pdl_wait();
  ar_start(t0);
  float* dst = const_cast<float*>(bufs[me]);
  for (long i = lo + blockIdx.x * (long)blockDim.x + threadIdx.x; i < hi; i += (long)gridDim.x * blockDim.x) {
    float s = bufs[0][i];
    for (int r = 1; r < nranks; r++) s += bufs[r][i];
    dst[i] = s;
  }
}

// twoshot, phase 2 (all-gather): x[i] += bufs[owner(i)][i], the owner of i
// being the rank whose segment [n*r/R, n*(r+1)/R) holds it.
extern "C" __global__ void ars_gather_add(float* x, const float* const* bufs, int nranks, long n,
                                          unsigned long long* t1, unsigned* cnt) {
  pdl_wait();
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    int r = (int)((i * nranks) / n);
    while (r > 0 && n * r / nranks > i) r--;
    while (r < nranks - 1 && n * (r + 1) / nranks <= i) r++;
    x[i] += bufs[r][i];
  }
  ar_end(t1, cnt);
}

// host, phase 1: rank me copies its partials into its pinned host buffer
// (dst, mapped into the device's address space).
extern "C" __global__ void ars_put(float* dst, const float* src, long n, unsigned long long* t0) {
  pdl_wait();
  ar_start(t0);
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) dst[i] = src[i];
}
