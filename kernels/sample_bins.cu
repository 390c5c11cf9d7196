// rigscope CUDA kernels: sample_row_bins, sample_row (sample.cu) with the
// radix descent's per-digit counts and weights kept per thread in shared
// memory instead of registers (no 16-way cumulative loop per entry, no
// spills, a cheap reduction), 256 threads, and the boundary's ties found
// with one scan. Same arguments, same result to the bit (both compute
// engine/sample's probabilities exactly: sample.cu says how).

#define SMB_THREADS 256
#define SMB_WARPS (SMB_THREADS / 32)

struct SmbShared {
  smp_u64 bw[SMP_DIGITS][SMB_THREADS];   // per digit and thread: weight of its entries with that digit
  unsigned short bc[SMP_DIGITS][SMB_THREADS];  // and their count
  smp_u64 wsum[SMP_DIGITS];
  int csum[SMP_DIGITS];
  smp_u64 lred[SMB_WARPS], hred[SMB_WARPS];
  float fred[SMB_WARPS];
  int ired[SMB_WARPS];
  unsigned prefix;
  int cntAbove, group, cut;
  smp_u64 wAbove;
};

// The block reductions are sample.cu's (smp_max, smp_sum128, smp_imin,
// smp_imax, smp_exclusive_scan) over SmbShared's per-warp scratch.

// smb_scan_int is smp_exclusive_scan for ints.
__device__ __forceinline__ int smb_scan_int(int v, SmbShared& s) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  int x = v;
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  __syncthreads();
  if (lane == 31) s.ired[w] = x;
  __syncthreads();
  int before = 0;
  for (int i = 0; i < w; i++) before += s.ired[i];
  return before + x - v;
}

extern "C" __global__ void __launch_bounds__(SMB_THREADS)
    sample_row_bins(int* out, int* info, const float* logits, float* prob, int vocab, float temp, int topk, float topp,
                    double u) {
  __shared__ SmbShared s;
  const int tid = threadIdx.x, lane = tid & 31;
  // Contiguous slices (the inverse CDF and the ties' scan go in index order).
  const int per = (vocab + SMB_THREADS - 1) / SMB_THREADS, lo_i = min(vocab, tid * per), hi_i = min(vocab, lo_i + per);

  // 1. softmax of logits / T, as engine/sample.Probs computes it.
  float m = -INFINITY;
  for (int i = tid; i < vocab; i += SMB_THREADS) m = fmaxf(m, logits[i]);
  m = smp_max(m, s);
  const float inv = __fdiv_rn(1.f, temp);
  smp_u64 hi = 0, lo = 0;
  for (int i = tid; i < vocab; i += SMB_THREADS) {
    const float q = (float)smp_exp((double)__fmul_rn(__fsub_rn(logits[i], m), inv));
    prob[i] = q;
    smp_add128(&hi, &lo, 0, smp_fixed63(q));
  }
  smp_sum128(&hi, &lo, s);
  const double norm =
      __dmul_rn(__dadd_rn(__dmul_rn(__ull2double_rn(hi), SMP_UNIT64), __ull2double_rn(lo)), 1.0 / SMP_UNIT63);
  for (int i = tid; i < vocab; i += SMB_THREADS) prob[i] = (float)__ddiv_rn((double)prob[i], norm);

  const bool useK = topk > 0 && topk < vocab, useP = topp > 0.f && topp < 1.f;
  if (useK || useP) {
    // 2. The radix descent (sample.cu's), digit by digit: each thread adds
    // its entries of the group into its own column of bw/bc.
    const int keepK = useK ? topk : vocab;
    const smp_u64 target = useP ? (smp_u64)__double2ull_ru(__dmul_rn((double)topp, SMP_UNIT60)) : ~0ull;
    if (tid == 0) { s.prefix = 0; s.cntAbove = 0; s.wAbove = 0; s.group = vocab; }
    for (int shift = 32 - SMP_BITS; shift >= 0; shift -= SMP_BITS) {
#pragma unroll
      for (int j = 0; j < SMP_DIGITS; j++) { s.bw[j][tid] = 0; s.bc[j][tid] = 0; }
      __syncthreads();
      const unsigned hmask = shift + SMP_BITS >= 32 ? 0u : ~0u << (shift + SMP_BITS), prefix = s.prefix;
      for (int i = tid; i < vocab; i += SMB_THREADS) {
        const float p = prob[i];
        const unsigned key = __float_as_uint(p);
        if ((key & hmask) != prefix) continue;
        const int d = (key >> shift) & (SMP_DIGITS - 1);
        s.bw[d][tid] += smp_fixed(p);
        s.bc[d][tid]++;
      }
      __syncthreads();
      {  // digit j = tid / 16 summed over 16 slices of 16 threads, then over the slices
        const int j = tid >> 4, k = tid & 15;
        smp_u64 x = 0;
        int c = 0;
#pragma unroll 4
        for (int t = 0; t < 16; t++) { x += s.bw[j][k * 16 + t]; c += s.bc[j][k * 16 + t]; }
        for (int o = 8; o; o >>= 1) {
          x += __shfl_xor_sync(0xffffffffu, x, o);
          c += __shfl_xor_sync(0xffffffffu, c, o);
        }
        if (k == 0) { s.wsum[j] = x; s.csum[j] = c; }
      }
      __syncthreads();
      if (tid == 0) {
        // Entries at or above digit j: suffix sums; the highest digit whose
        // entries reach the cut (digit 0 always does).
        smp_u64 wge[SMP_DIGITS];
        int cge[SMP_DIGITS];
        smp_u64 wacc = 0;
        int cacc = 0;
        for (int j = SMP_DIGITS - 1; j >= 0; j--) {
          wacc += s.wsum[j];
          cacc += s.csum[j];
          wge[j] = wacc;
          cge[j] = cacc;
        }
        int pick = 0;
        for (int j = SMP_DIGITS - 1; j > 0; j--)
          if (s.cntAbove + cge[j] >= keepK || s.wAbove + wge[j] >= target) { pick = j; break; }
        const int above = pick + 1 < SMP_DIGITS ? cge[pick + 1] : 0;
        const smp_u64 aboveW = pick + 1 < SMP_DIGITS ? wge[pick + 1] : 0;
        s.cntAbove += above;
        s.wAbove += aboveW;
        s.group = cge[pick] - above;
        s.prefix = prefix | ((unsigned)pick << shift);
      }
      __syncthreads();
    }
    const unsigned kstar = s.prefix;
    const smp_u64 wstar = smp_fixed(__uint_as_float(kstar)), wAbove = s.wAbove;
    const int above = s.cntAbove, group = s.group;
    int n = max(1, min(group, keepK - above));
    if (useP && wstar > 0 && wAbove < target) n = max(1, (int)min((smp_u64)n, (target - wAbove + wstar - 1) / wstar));
    const double mass = __dmul_rn(__ull2double_rn(wAbove + (smp_u64)n * wstar), 1.0 / SMP_UNIT60);
    int cut = vocab;  // ties with index <= cut are kept
    if (n < group) {  // the n-th tie in index order: ties counted per slice, scanned
      int mine = 0;
      for (int i = lo_i; i < hi_i; i++) mine += __float_as_uint(prob[i]) == kstar;
      const int before = smb_scan_int(mine, s);
      if (before < n && before + mine >= n) {
        int seen = before;
        for (int i = lo_i; i < hi_i; i++)
          if (__float_as_uint(prob[i]) == kstar && ++seen == n) { s.cut = i; break; }
      }
      __syncthreads();
      cut = s.cut;
    }
    for (int i = tid; i < vocab; i += SMB_THREADS) {
      const float p = prob[i];
      const unsigned key = __float_as_uint(p);
      prob[i] = key > kstar || key == kstar && i <= cut ? (float)__ddiv_rn((double)p, mass) : 0.f;
    }
  }

  // 3. Inverse CDF in index order over the contiguous slices.
  __syncthreads();
  const smp_u64 U = u > 0 ? __double2ull_rz(__dmul_rn(fmin(u, 1.0), SMP_UNIT60)) : 0;
  smp_u64 local = 0;
  int nz = 0;
  for (int i = lo_i; i < hi_i; i++) {
    const float p = prob[i];
    local += smp_fixed(p);
    nz += p > 0.f;
  }
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
    for (int o = 16; o; o >>= 1) nz += __shfl_xor_sync(0xffffffffu, nz, o);
    __syncthreads();
    if (lane == 0) s.ired[tid >> 5] = nz;
    __syncthreads();
    if (tid == 0) {
      for (int q = 1; q < SMB_WARPS; q++) nz += s.ired[q];
      info[0] = nz;
    }
  }
  if (tid == 0) out[0] = first != 0x7fffffff ? first : max(last, 0);
}
