// rigscope CUDA kernels: sampling a token on the device (included at the
// end of kernels.cu; gpu/cuda/sample.go launches it after a step's graph,
// before the ids copy).
//
// engine/sample is the specification, and sample_row computes exactly what
// sample.Sampler.Probs and sample.DrawU compute over one logits row (vocab
// entries), with the uniform number u the host's seeded generator drew
// (sample.Sampler.Uniform): the same probabilities to the bit, so the same
// id. Every sum that decides something is exact there (integer counts of
// fixed-point units), so the order in which threads add does not matter:
//
//   1. m = max(logits); q_i = (float)Exp((double)((l_i - m) * (1/T))) with
//      the float32 subtract, multiply and divide of the host and its Exp
//      (sample.Exp, smp_exp: the same bits on every machine); the
//      normalizer is the exact sum of floor(q_i * 2^63) (128 bits) as
//      double, times 2^-63; p_i = (float)((double)q_i / normalizer).
//   2. When top-k or top-p is on: ordered by p descending (index ascending
//      on ties), the first min(k, V) kept, cut at the first whose running
//      mass sum floor(p * 2^60) reaches ceil(top-p * 2^60); the kept ones
//      renormalized by their mass (as double, times 2^-60), the others 0.
//   3. The inverse CDF in index order: the first i whose running sum of
//      floor(p_i * 2^60) exceeds floor(u * 2^60), or the last i with
//      p_i > 0 when truncation left the sum at or under it.
//
// Step 2 finds the cut without sorting: a radix descent over the bits of
// the p_i (non-negative floats order as their bit patterns), 4 bits a
// pass, counting and weighing (exactly) the entries at or above each
// candidate digit; the boundary value's ties then taken in index order.
//
// One block of SMP_THREADS threads per row; logits and prob may alias
// (gpu/cuda overwrites the step's logits row with the probabilities).
// out[0] = the id; info (nullable) gets info[0] = the number of entries
// left with mass (the host's nonzero probabilities), for cuda-check.

#define SMP_THREADS 1024
#define SMP_WARPS (SMP_THREADS / 32)
#define SMP_BITS 4
#define SMP_DIGITS (1 << SMP_BITS)
#define SMP_UNIT60 1152921504606846976.0            // 2^60
#define SMP_UNIT63 9223372036854775808.0            // 2^63
#define SMP_UNIT64 18446744073709551616.0           // 2^64

typedef unsigned long long smp_u64;

struct SmpShared {
  smp_u64 w[SMP_WARPS][SMP_DIGITS];
  int c[SMP_WARPS][SMP_DIGITS];
  smp_u64 wsum[SMP_DIGITS];
  int csum[SMP_DIGITS];
  smp_u64 lred[SMP_WARPS], hred[SMP_WARPS];
  float fred[SMP_WARPS];
  int ired[SMP_WARPS];
  unsigned prefix;
  int cntAbove, group, cut, found;
  smp_u64 wAbove;
};

// smp_exp is sample.Exp: e**x by the same operations in the same order,
// each rounded on its own (no contraction), so its bits are the host's.
__device__ __forceinline__ double smp_exp(double x) {
  const double ln2Hi = 6.93147180369123816490e-01, ln2Lo = 1.90821492927058770002e-10,
               log2e = 1.44269504088896338700e+00, overflow = 7.09782712893383973096e+02,
               underflow = -7.45133219101941108420e+02, nearZero = 1.0 / (1 << 28);
  const double p1 = 1.66666666666666657415e-01, p2 = -2.77777777770155933842e-03, p3 = 6.61375632143793436117e-05,
               p4 = -1.65339022054652515390e-06, p5 = 4.13813679705723846039e-08;
  if (isnan(x) || x == INFINITY) return x;
  if (x == -INFINITY || x < underflow) return 0.0;
  if (x > overflow) return INFINITY;
  if (-nearZero < x && x < nearZero) return __dadd_rn(1.0, x);
  int k = 0;
  if (x < 0) k = __double2int_rz(__dsub_rn(__dmul_rn(log2e, x), 0.5));
  else if (x > 0) k = __double2int_rz(__dadd_rn(__dmul_rn(log2e, x), 0.5));
  const double hi = __dsub_rn(x, __dmul_rn((double)k, ln2Hi)), lo = __dmul_rn((double)k, ln2Lo);
  const double r = __dsub_rn(hi, lo), t = __dmul_rn(r, r);
  const double poly =
      __dadd_rn(p1, __dmul_rn(t, __dadd_rn(p2, __dmul_rn(t, __dadd_rn(p3, __dmul_rn(t, __dadd_rn(p4, __dmul_rn(t, p5))))))));
  const double c = __dsub_rn(r, __dmul_rn(t, poly));
  const double y = __dsub_rn(1.0, __dsub_rn(__dsub_rn(lo, __ddiv_rn(__dmul_rn(r, c), __dsub_rn(2.0, c))), hi));
  return scalbn(y, k);
}

// smp_fixed is sample.Fixed: p in units of 2^-60, truncated.
__device__ __forceinline__ smp_u64 smp_fixed(float p) {
  if (!(p > 0.f)) return 0;
  if (p >= 1.f) return 1ull << 60;
  return __double2ull_rz(__dmul_rn((double)p, SMP_UNIT60));
}

// smp_fixed63 is sample's fixed63: q in units of 2^-63, truncated.
__device__ __forceinline__ smp_u64 smp_fixed63(float q) {
  if (!(q > 0.f)) return 0;
  if (q >= 1.f) return 1ull << 63;
  return __double2ull_rz(__dmul_rn((double)q, SMP_UNIT63));
}

// Block-wide reductions: every thread gets the result. S is the kernel's
// shared struct (SmpShared, SmbShared in sample_bins.cu), whose per-warp
// scratch arrays fred, hred/lred and ired have one entry per warp of the
// block: smp_warps<S> is the block's warp count.
template <class S> __host__ __device__ constexpr int smp_warps() { return sizeof(S::fred) / sizeof(float); }

template <class S> __device__ __forceinline__ float smp_max(float v, S& s) {
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) s.fred[threadIdx.x >> 5] = v;
  __syncthreads();
  v = s.fred[0];
  for (int w = 1; w < smp_warps<S>(); w++) v = fmaxf(v, s.fred[w]);
  return v;
}

// smp_add128 adds (bh, bl) to (*ah, *al), exactly (mod 2^128).
__device__ __forceinline__ void smp_add128(smp_u64* ah, smp_u64* al, smp_u64 bh, smp_u64 bl) {
  const smp_u64 l = *al + bl;
  *ah += bh + (l < bl ? 1ull : 0ull);
  *al = l;
}

// smp_sum128 is the exact block sum of (hi, lo): sample.Sum128.
template <class S> __device__ __forceinline__ void smp_sum128(smp_u64* hi, smp_u64* lo, S& s) {
  for (int o = 16; o; o >>= 1) {
    const smp_u64 oh = __shfl_xor_sync(0xffffffffu, *hi, o), ol = __shfl_xor_sync(0xffffffffu, *lo, o);
    smp_add128(hi, lo, oh, ol);
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) { s.hred[threadIdx.x >> 5] = *hi; s.lred[threadIdx.x >> 5] = *lo; }
  __syncthreads();
  smp_u64 h = 0, l = 0;
  for (int w = 0; w < smp_warps<S>(); w++) smp_add128(&h, &l, s.hred[w], s.lred[w]);
  *hi = h;
  *lo = l;
}

template <class S> __device__ __forceinline__ int smp_imin(int v, S& s) {
  for (int o = 16; o; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) s.ired[threadIdx.x >> 5] = v;
  __syncthreads();
  v = s.ired[0];
  for (int w = 1; w < smp_warps<S>(); w++) v = min(v, s.ired[w]);
  return v;
}
template <class S> __device__ __forceinline__ int smp_imax(int v, S& s) {
  for (int o = 16; o; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) s.ired[threadIdx.x >> 5] = v;
  __syncthreads();
  v = s.ired[0];
  for (int w = 1; w < smp_warps<S>(); w++) v = max(v, s.ired[w]);
  return v;
}

// smp_exclusive_scan returns the (exact) sum of v over the threads before
// this one, in thread order.
template <class S> __device__ __forceinline__ smp_u64 smp_exclusive_scan(smp_u64 v, S& s) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  smp_u64 x = v;
  for (int o = 1; o < 32; o <<= 1) {
    const smp_u64 y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  __syncthreads();
  if (lane == 31) s.lred[w] = x;
  __syncthreads();
  smp_u64 before = 0;
  for (int i = 0; i < w; i++) before += s.lred[i];
  return before + x - v;
}

extern "C" __global__ void __launch_bounds__(SMP_THREADS)
    sample_row(int* out, int* info, const float* logits, float* prob, int vocab, float temp, int topk, float topp,
               double u) {
  __shared__ SmpShared s;
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;

  // 1. softmax of logits / T, as engine/sample.Probs computes it.
  float m = -INFINITY;
  for (int i = tid; i < vocab; i += SMP_THREADS) m = fmaxf(m, logits[i]);
  m = smp_max(m, s);
  const float inv = __fdiv_rn(1.f, temp);
  smp_u64 hi = 0, lo = 0;
  for (int i = tid; i < vocab; i += SMP_THREADS) {
    const float q = (float)smp_exp((double)__fmul_rn(__fsub_rn(logits[i], m), inv));
    prob[i] = q;
    smp_add128(&hi, &lo, 0, smp_fixed63(q));
  }
  smp_sum128(&hi, &lo, s);
  const double norm =
      __dmul_rn(__dadd_rn(__dmul_rn(__ull2double_rn(hi), SMP_UNIT64), __ull2double_rn(lo)), 1.0 / SMP_UNIT63);
  for (int i = tid; i < vocab; i += SMP_THREADS) prob[i] = (float)__ddiv_rn((double)prob[i], norm);

  const bool useK = topk > 0 && topk < vocab, useP = topp > 0.f && topp < 1.f;
  if (useK || useP) {
    // 2. The cut: the first entry (in sorted order) where the count
    // reaches keepK or the exact mass reaches target. The descent finds
    // the boundary value: the largest K* (as bits) such that the entries
    // >= K* number at least keepK or weigh at least target.
    const int keepK = useK ? topk : vocab;
    const smp_u64 target = useP ? (smp_u64)__double2ull_ru(__dmul_rn((double)topp, SMP_UNIT60)) : ~0ull;
    if (tid == 0) { s.prefix = 0; s.cntAbove = 0; s.wAbove = 0; s.group = vocab; }
    __syncthreads();
    for (int shift = 32 - SMP_BITS; shift >= 0; shift -= SMP_BITS) {
      const unsigned hmask = shift + SMP_BITS >= 32 ? 0u : ~0u << (shift + SMP_BITS), prefix = s.prefix;
      int cnt[SMP_DIGITS];
      smp_u64 wt[SMP_DIGITS];
#pragma unroll
      for (int j = 0; j < SMP_DIGITS; j++) { cnt[j] = 0; wt[j] = 0; }
      for (int i = tid; i < vocab; i += SMP_THREADS) {
        const float p = prob[i];
        const unsigned key = __float_as_uint(p);
        if ((key & hmask) != prefix) continue;
        const int d = (key >> shift) & (SMP_DIGITS - 1);
        const smp_u64 x = smp_fixed(p);
#pragma unroll
        for (int j = 0; j < SMP_DIGITS; j++)
          if (d >= j) { cnt[j]++; wt[j] += x; }  // entries with digit >= j
      }
#pragma unroll
      for (int j = 0; j < SMP_DIGITS; j++) {
        smp_u64 x = wt[j];
        int c = cnt[j];
        for (int o = 16; o; o >>= 1) {
          x += __shfl_xor_sync(0xffffffffu, x, o);
          c += __shfl_xor_sync(0xffffffffu, c, o);
        }
        if (lane == 0) { s.w[w][j] = x; s.c[w][j] = c; }
      }
      __syncthreads();
      if (tid < SMP_DIGITS) {
        smp_u64 x = 0;
        int c = 0;
        for (int i = 0; i < SMP_WARPS; i++) { x += s.w[i][tid]; c += s.c[i][tid]; }
        s.wsum[tid] = x;
        s.csum[tid] = c;
      }
      __syncthreads();
      if (tid == 0) {
        // The highest digit whose entries at or above it reach the cut
        // (digit 0 always does: the group reached it in the last pass).
        int pick = 0;
        for (int j = SMP_DIGITS - 1; j > 0; j--)
          if (s.cntAbove + s.csum[j] >= keepK || s.wAbove + s.wsum[j] >= target) { pick = j; break; }
        const int above = pick + 1 < SMP_DIGITS ? s.csum[pick + 1] : 0;
        const smp_u64 aboveW = pick + 1 < SMP_DIGITS ? s.wsum[pick + 1] : 0;
        s.cntAbove += above;
        s.wAbove += aboveW;
        s.group = s.csum[pick] - above;
        s.prefix = prefix | ((unsigned)pick << shift);
      }
      __syncthreads();
    }
    // The boundary value's group: its first n entries in index order are
    // kept, n the first count that reaches keepK or the target.
    const unsigned kstar = s.prefix;
    const smp_u64 wstar = smp_fixed(__uint_as_float(kstar)), wAbove = s.wAbove;
    const int above = s.cntAbove, group = s.group;
    int n = max(1, min(group, keepK - above));
    if (useP && wstar > 0 && wAbove < target) n = max(1, (int)min((smp_u64)n, (target - wAbove + wstar - 1) / wstar));
    const double mass = __dmul_rn(__ull2double_rn(wAbove + (smp_u64)n * wstar), 1.0 / SMP_UNIT60);
    int cut = vocab;  // ties with index <= cut are kept
    if (n < group) {
      if (tid == 0) s.found = 0;
      __syncthreads();
      int seen = 0;
      for (int base = 0; base < vocab; base += SMP_THREADS) {
        const int i = base + tid;
        const bool tie = i < vocab && __float_as_uint(prob[i]) == kstar;
        const unsigned bal = __ballot_sync(0xffffffffu, tie);
        __syncthreads();
        if (lane == 0) s.ired[w] = __popc(bal);
        __syncthreads();
        int before = seen, all = 0;
        for (int q = 0; q < SMP_WARPS; q++) {
          if (q < w) before += s.ired[q];
          all += s.ired[q];
        }
        before += __popc(bal & ((1u << lane) - 1));
        if (tie && before == n - 1) { s.cut = i; s.found = 1; }
        seen += all;
        __syncthreads();
        if (s.found) break;
      }
      cut = s.cut;
    }
    for (int i = tid; i < vocab; i += SMP_THREADS) {
      const float p = prob[i];
      const unsigned key = __float_as_uint(p);
      prob[i] = key > kstar || key == kstar && i <= cut ? (float)__ddiv_rn((double)p, mass) : 0.f;
    }
  }

  // 3. Inverse CDF in index order over contiguous slices per thread (which
  // read entries other threads wrote: the barrier makes them visible).
  __syncthreads();
  const smp_u64 U = u > 0 ? __double2ull_rz(__dmul_rn(fmin(u, 1.0), SMP_UNIT60)) : 0;
  const int per = (vocab + SMP_THREADS - 1) / SMP_THREADS, lo_i = min(vocab, tid * per), hi_i = min(vocab, lo_i + per);
  smp_u64 local = 0;
  for (int i = lo_i; i < hi_i; i++) local += smp_fixed(prob[i]);
  smp_u64 acc = smp_exclusive_scan(local, s);
  int first = 0x7fffffff, last = -1;
  for (int i = lo_i; i < hi_i; i++) {
    const float p = prob[i];
    if (!(p > 0.f)) continue;
    acc += smp_fixed(p);
    last = i;
    if (U < acc) { first = i; break; }
  }
  first = smp_imin(first, s);
  last = smp_imax(last, s);
  if (info) {  // the check's diagnostic: entries left with mass
    int nz = 0;
    for (int i = tid; i < vocab; i += SMP_THREADS) nz += prob[i] > 0.f;
    for (int o = 16; o; o >>= 1) nz += __shfl_xor_sync(0xffffffffu, nz, o);
    __syncthreads();
    if (lane == 0) s.ired[w] = nz;
    __syncthreads();
    if (tid == 0) {
      for (int q = 1; q < SMP_WARPS; q++) nz += s.ired[q];
      info[0] = nz;
    }
  }
  if (tid == 0) out[0] = first != 0x7fffffff ? first : max(last, 0);
}
