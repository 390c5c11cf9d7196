// rigscope CUDA kernels: sampling a token on the device (included at the
// end of kernels.cu; gpu/cuda/sample.go launches it after a step).
//
// engine/sample is the specification, and sample_row follows it step by
// step over one logits row (vocab entries), with the uniform number u the
// host's seeded generator drew (sample.Sampler.Uniform):
//
//   1. m = max(logits); e_i = exp((double)((l_i - m) * (1/T))) with the
//      float32 subtract and multiply of the host; p_i = (float)e_i;
//      sum = sum e_i in double; p_i = (float)((double)p_i / sum).
//   2. When top-k or top-p is on: order the p_i by value descending, index
//      ascending on ties; keep the first min(k, V) of them, cut to the
//      shortest prefix whose mass reaches top-p; renormalize the kept
//      ones, p_i = (float)((double)p_i / kept mass), the others 0. (Both
//      off: no renormalization, as the host.)
//   3. The inverse CDF in index order: the first i whose running double sum
//      of the p_i > 0 exceeds u, or the last i with p_i > 0 when rounding
//      left the sum under u.
//
// Step 2 finds the boundary of the kept set without sorting: a radix
// descent over the bits of the p_i (non-negative floats order as their bit
// patterns), 4 bits a pass, counting and weighing the entries at or above
// each candidate digit, then the ties at the boundary value taken in index
// order. Counts are exact, so top-k matches the host's cut exactly; the
// host sums the top-p mass sequentially in float32 in sorted order, this
// kernel in per-thread float32 partials added in double, so the top-p cut
// can differ by an entry when the mass lands within float32 rounding of
// top-p (cuda-check's sample check counts how often ids differ).
//
// One block of SMP_THREADS threads per row; logits and prob may alias
// (gpu/cuda overwrites the step's logits row with the probabilities).
// out[0] = the id; info (nullable) gets info[0] = the number of entries
// left with mass (the host's nonzero probabilities), for cuda-check.

#define SMP_THREADS 1024
#define SMP_WARPS (SMP_THREADS / 32)
#define SMP_BITS 4
#define SMP_DIGITS (1 << SMP_BITS)

struct SmpShared {
  double d[SMP_WARPS][SMP_DIGITS];
  int c[SMP_WARPS][SMP_DIGITS];
  double dsum[SMP_DIGITS];
  int csum[SMP_DIGITS];
  double red[SMP_WARPS];
  float fred[SMP_WARPS];
  int ired[SMP_WARPS];
  unsigned prefix;
  int cntAbove, group, cut, found;
  double massAbove;
};

// Block-wide reductions: every thread gets the result, summed in a fixed
// order (so a run repeats to the bit).
__device__ __forceinline__ float smp_max(float v, SmpShared& s) {
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) s.fred[threadIdx.x >> 5] = v;
  __syncthreads();
  v = s.fred[0];
  for (int w = 1; w < SMP_WARPS; w++) v = fmaxf(v, s.fred[w]);
  return v;
}
__device__ __forceinline__ double smp_sum(double v, SmpShared& s) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) s.red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = s.red[0];
  for (int w = 1; w < SMP_WARPS; w++) v += s.red[w];
  return v;
}
__device__ __forceinline__ int smp_imin(int v, SmpShared& s) {
  for (int o = 16; o; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) s.ired[threadIdx.x >> 5] = v;
  __syncthreads();
  v = s.ired[0];
  for (int w = 1; w < SMP_WARPS; w++) v = min(v, s.ired[w]);
  return v;
}
__device__ __forceinline__ int smp_imax(int v, SmpShared& s) {
  for (int o = 16; o; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) s.ired[threadIdx.x >> 5] = v;
  __syncthreads();
  v = s.ired[0];
  for (int w = 1; w < SMP_WARPS; w++) v = max(v, s.ired[w]);
  return v;
}

// smp_exclusive_scan returns the sum of v over the threads before this one
// (thread order), and the block's total in *total.
__device__ __forceinline__ double smp_exclusive_scan(double v, SmpShared& s, double* total) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  double x = v;
  for (int o = 1; o < 32; o <<= 1) {
    double y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  __syncthreads();
  if (lane == 31) s.red[w] = x;
  __syncthreads();
  double before = 0, all = 0;
  for (int i = 0; i < SMP_WARPS; i++) {
    if (i < w) before += s.red[i];
    all += s.red[i];
  }
  *total = all;
  double ex = __shfl_up_sync(0xffffffffu, x, 1);  // the lanes before this one
  return before + (lane == 0 ? 0.0 : ex);
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
  const float inv = 1.f / temp;
  double part = 0;
  for (int i = tid; i < vocab; i += SMP_THREADS) {
    double e = exp((double)__fmul_rn(__fsub_rn(logits[i], m), inv));
    prob[i] = (float)e;
    part += e;
  }
  const double sum = smp_sum(part, s);
  for (int i = tid; i < vocab; i += SMP_THREADS) prob[i] = (float)__ddiv_rn((double)prob[i], sum);

  const bool useK = topk > 0 && topk < vocab, useP = topp > 0.f && topp < 1.f;
  if (useK || useP) {
    // 2. The kept set's boundary: the largest value K* (as bits) such that
    // the entries >= K* number at least keepK or weigh at least top-p.
    const int keepK = useK ? topk : vocab;
    if (tid == 0) { s.prefix = 0; s.cntAbove = 0; s.massAbove = 0; s.group = vocab; }
    __syncthreads();
    for (int shift = 32 - SMP_BITS; shift >= 0; shift -= SMP_BITS) {
      const unsigned hi = shift + SMP_BITS >= 32 ? 0u : ~0u << (shift + SMP_BITS), prefix = s.prefix;
      int cnt[SMP_DIGITS];
      float mass[SMP_DIGITS];
#pragma unroll
      for (int j = 0; j < SMP_DIGITS; j++) { cnt[j] = 0; mass[j] = 0.f; }
      for (int i = tid; i < vocab; i += SMP_THREADS) {
        const float p = prob[i];
        const unsigned key = __float_as_uint(p);
        if ((key & hi) != prefix) continue;
        const int d = (key >> shift) & (SMP_DIGITS - 1);
#pragma unroll
        for (int j = 0; j < SMP_DIGITS; j++)
          if (d >= j) { cnt[j]++; mass[j] += p; }  // entries with digit >= j
      }
#pragma unroll
      for (int j = 0; j < SMP_DIGITS; j++) {
        double dm = mass[j];
        int c = cnt[j];
        for (int o = 16; o; o >>= 1) {
          dm += __shfl_xor_sync(0xffffffffu, dm, o);
          c += __shfl_xor_sync(0xffffffffu, c, o);
        }
        if (lane == 0) { s.d[w][j] = dm; s.c[w][j] = c; }
      }
      __syncthreads();
      if (tid < SMP_DIGITS) {
        double dm = 0;
        int c = 0;
        for (int i = 0; i < SMP_WARPS; i++) { dm += s.d[i][tid]; c += s.c[i][tid]; }
        s.dsum[tid] = dm;
        s.csum[tid] = c;
      }
      __syncthreads();
      if (tid == 0) {
        // The highest digit whose entries at or above it reach the cut;
        // when float rounding leaves none (the group's mass summed a bit
        // under the last pass's), the group's lowest digit present.
        int pick = -1, lowest = 0;
        for (int j = SMP_DIGITS - 1; j >= 0; j--) {
          if (s.csum[j] == s.csum[0] && lowest == 0) lowest = j;
          if (pick < 0 && (s.cntAbove + s.csum[j] >= keepK || useP && s.massAbove + s.dsum[j] >= (double)topp)) pick = j;
        }
        if (pick < 0) pick = lowest;
        const int above = pick + 1 < SMP_DIGITS ? s.csum[pick + 1] : 0;
        const double aboveMass = pick + 1 < SMP_DIGITS ? s.dsum[pick + 1] : 0.0;
        s.cntAbove += above;
        s.massAbove += aboveMass;
        s.group = s.csum[pick] - above;
        s.prefix = prefix | ((unsigned)pick << shift);
      }
      __syncthreads();
    }
    // The boundary value's ties in index order: n of its group entries.
    const unsigned kstar = s.prefix;
    const float vstar = __uint_as_float(kstar);
    const int above = s.cntAbove, group = s.group;
    // The host adds the ties one by one to its float32 mass: so does
    // thread 0, from the mass above (exact when no entry is above, e.g.
    // all logits equal). It stops at top-k, or at the whole group when
    // rounding keeps the float32 sum under top-p (the descent's double
    // sums said the cut falls in this group).
    int n = max(1, min(group, keepK - above));
    if (useP && vstar > 0.f) {
      if (tid == 0) {
        float mass = (float)s.massAbove;
        int j = 0;
        while (j < n) {
          j++;
          mass = __fadd_rn(mass, vstar);
          if (mass >= topp) break;
        }
        s.cut = j;
      }
      __syncthreads();
      n = s.cut;
      __syncthreads();
    }
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
    double kept = 0;
    for (int i = tid; i < vocab; i += SMP_THREADS) {
      const unsigned key = __float_as_uint(prob[i]);
      if (key > kstar || key == kstar && i <= cut) kept += prob[i];
    }
    kept = smp_sum(kept, s);
    for (int i = tid; i < vocab; i += SMP_THREADS) {
      const float p = prob[i];
      const unsigned key = __float_as_uint(p);
      prob[i] = key > kstar || key == kstar && i <= cut ? (float)__ddiv_rn((double)p, kept) : 0.f;
    }
    __syncthreads();
  }

  // 3. Inverse CDF in index order over contiguous slices per thread (which
  // read entries other threads wrote: the barrier makes them visible).
  __syncthreads();
  const int per = (vocab + SMP_THREADS - 1) / SMP_THREADS, lo = min(vocab, tid * per), hi = min(vocab, lo + per);
  double local = 0;
  for (int i = lo; i < hi; i++)
    if (prob[i] > 0.f) local += (double)prob[i];
  double total;
  double acc = smp_exclusive_scan(local, s, &total);
  int first = 0x7fffffff, last = -1;
  for (int i = lo; i < hi; i++) {
    const float p = prob[i];
    if (p <= 0.f) continue;
    acc += (double)p;
    last = i;
    if (u < acc) { first = i; break; }
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
