// rigscope CUDA kernels: the dp4a products with quantized weights (mq_body
// and the mq*, mqn*, mqg* kernels), included at the end of quant.cu, whose
// types (QQ4K ...), activation quantization (qx) and comment they use.

// ------------------------------------------------------- the products
// Token buckets (gpu/cuda: mqBucket): 1, 2, 4, 5 (a chain verify of k =
// 4), 8 and 16 tokens, the accumulators of each for its T only. Rows per
// group (gpu/cuda: mqRows): 4 up to 4 tokens, 2 from 5 on: fewer registers
// a thread, more blocks an SM (mqg_q4k_8 168 registers at 4 rows, 115 at
// 2; mqg_q4k_5 96 at 2). Measured on an H100 (bench/cuda/results/s27, m2:
// llama-8b, the verify of 5 against a decode step): Q4_K_M 2.80 at bucket
// 8 and 4 rows, 2.32 at bucket 5 and 4 rows, 2.55 at bucket 8 and 2 rows,
// 2.05 at bucket 5 and 2 rows; Q8_0 2.32 -> 1.83; the decode step the
// same. The one-token variants at the end of this file set their own rows
// (gpu/cuda: mqvEntries). The split of a row over the threads depends on
// neither, so every T keeps T=1's bits.
#define MQ_ROWS(NT) ((NT) <= 4 ? 4 : 2)
// The unit loop is not unrolled: unrolled by 2 (ptxas sm_90) nvcc issued
// the second unit's loads after the first's arithmetic anyway, for 15
// more registers.

// mq_load issues the loads of unit u's raw bytes for every row.
template <class QT, int NW, int R>
__device__ __forceinline__ void mq_load(const uint8_t* const (&rp)[NW][R], int u, typename QT::Raw (&w)[NW][R]) {
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++) QT::load(rp[m][r], u, w[m][r]);
}
// mq_xload loads token t's activation for a unit whose groups are g0 and
// g0 + GS (qx's layout: xq (T, G) int4, xm (T, G) float2).
template <class QT>
__device__ __forceinline__ void mq_xload(const int8_t* __restrict__ xq, const float2* __restrict__ xm, int G, int g0,
                                         int t, int4& x0, int4& x1, float4& mm) {
  const int4* xr = reinterpret_cast<const int4*>(xq) + (long)t * G + g0;
  x0 = __ldg(xr);
  x1 = __ldg(xr + QT::GS);
  if (QT::GS == 1) {  // adjacent: one 16-byte load (g0 even)
    mm = __ldg(reinterpret_cast<const float4*>(xm + (long)t * G + g0));
  } else {
    const float2 m0 = __ldg(xm + (long)t * G + g0), m1 = __ldg(xm + (long)t * G + g0 + QT::GS);
    mm = make_float4(m0.x, m0.y, m1.x, m1.y);
  }
}
// mq_sumsq adds to ss[t] the sum of x[t]^2 (qx's per-32-block sums ssp,
// (T, units)) for every token t < T: lane i takes blocks i, i+32, ...,
// then an xor-tree, so every lane has the same sums in the same order.
template <int NT>
__device__ __forceinline__ void mq_sumsq(float (&ss)[NT], const float* __restrict__ ssp, int units, int T, int lane) {
#pragma unroll
  for (int t = 0; t < NT; t++) {
    if (t < T) {
      for (int i = lane; i < units; i += 32) ss[t] += __ldg(ssp + (long)t * units + i);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) ss[t] += __shfl_xor_sync(0xffffffffu, ss[t], o);
    }
  }
}

// mq_body: out (T, ldo) [+]= x (T, K) . W(N, K)^T as mv_body (mode, GLU,
// NORM), x given quantized by qx (xq, xm; with NORM, ssp: rmsnorm(x).w =
// rsqrt(sum(x*x)/K + eps) * ((x*g).w), qx having applied g).
// The block's MV_WARPS warps form MV_WARPS/ks groups of ks warps; a group
// owns R rows and its ks warps split their units (lane l of warp s takes
// units 32s + l, 32(s + ks) + l, ...); every lane keeps R rows' sums for
// all tokens. ks (1, 2 or 4) is chosen per matrix shape by gpu/cuda
// (mqSplit), never per T, so every T sums a row in the same order: lane
// order within a unit stride, xor-tree over the lanes, then the ks warps in
// order. Several units per lane (ks 1 on the wide matrices) amortize the
// per-thread address setup and reduction that a unit per thread (K = 4096
// over 128 threads) paid for every 32 weights.
// RV, BV: the variants of the one-token products (gpu/cuda Tuning.MQV,
// RIGSCOPE_CUDA_MQV): RV rows per group instead of MQ_ROWS(NT) (0: that),
// BV 1/0 BOTTOM loading on/off instead of QT::BOTTOM's rule (-1: that).
// WB: warps per block (MV_WARPS but in the wide one-token variants, whose
// blocks own a whole 32-row group: gpu/cuda Tuning.MQW); a row's sums do
// not depend on it (finish_out adds the group's ks warps in order).
// XP: XPRE may apply (below); off in the mixed stacks (mqn2), where the
// Q6_K part's registers would be the Q4_K part's too.
template <class QT, int NT, bool GLU, bool NORM, int RV = 0, int BV = -1, int WB = MV_WARPS, bool XP = true>
__device__ __forceinline__ void mq_body(float* __restrict__ out, int ldo, const int8_t* __restrict__ xq,
                                        const float2* __restrict__ xm, const float* __restrict__ ssp, const void* w,
                                        const void* w2, int N, int K, int T, int mode, float eps, int ks, int act,
                                        int8_t* qo, const float* qg, unsigned* qcnt, int bid) {
  constexpr int R = RV > 0 ? RV : MQ_ROWS(NT);
  constexpr int NW = GLU ? 2 : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int grp = warp / ks, sl = warp - grp * ks;
  const int row0 = (bid * (WB / ks) + grp) * R;
  const long rb = (long)(K / QT::BS) * QT::BB;
  const int units = K / 32, G = K / 16;
  const uint8_t* rp[NW][R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const long row = min(row0 + r, N - 1);
    rp[0][r] = static_cast<const uint8_t*>(w) + row * rb;
    if (GLU) rp[NW - 1][r] = static_cast<const uint8_t*>(w2) + row * rb;
  }
  float acc[NW][R][NT];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int t = 0; t < NT; t++) acc[m][r][t] = 0.f;
  // BOTTOM (one token): the loads of the lane's next unit for all
  // rows are issued together at the bottom of the loop, after the current
  // unit's arithmetic (and the first unit's before pdl_wait: the weights
  // are never written by the kernels before). Loaded at the top of the
  // iteration that uses them, ptxas sank each row's loads to just before
  // their use (48 registers for mq_q4k_1): a lane waited for DRAM once per
  // row, R*NW times per unit. At the bottom they are loop-carried, so they
  // cannot sink past the back edge.
  // Where the type allows it (QT::BOTTOM: 2 every product, 1 not the GLU,
  // 0 none): measured on the H200 (bench/cuda/results/s16/q), BOTTOM
  // made every Q6_K product faster (gate_up 59.7 -> 47.4 us) and Q4_K's
  // but for the GLU (25.5 -> 26.5 us), and every Q8_0 product but its
  // output slower (gate_up 37.8 -> 41.2 us). A second register set loaded
  // at the loop's top instead (a build measured in the same call) was
  // slower still: Q4_K_M's products 2608 against 2342 us a step.
  constexpr bool BOTTOM = BV >= 0 ? (NT == 1 && BV == 1) : NT == 1 && (QT::BOTTOM == 2 || (QT::BOTTOM == 1 && !GLU));
  const int S = ks * 32;
  int u = sl * 32 + lane;
  typename QT::Raw cur[NW][R];
  if (BOTTOM && u < units) mq_load<QT, NW, R>(rp, u, cur);
  // Before pdl_wait: the lane's weight bytes into L2 (prefetch_l2; unit
  // u's 32 weights lie about 32*BB/BS bytes into the row at u*32*BB/BS,
  // and the lanes' units are consecutive, so every line is touched).
  if (l2_prefetch) {
    for (int v = sl * 32 + lane; v < units; v += ks * 32)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < R; r++) prefetch_l2(rp[m][r] + (long)v * (32 * QT::BB / QT::BS));
  }
  pdl_wait();
  // NORM: sum(x*x) of each token, from qx's per-32-block sums, in a fixed
  // order; up to 2 tokens before the unit loop, its latency under the
  // weights' (at 8, ptxas gave mqg_q4k_8 212 registers instead of 166).
  float ss[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) ss[t] = 0.f;
  if (NORM && NT <= 2) mq_sumsq<NT>(ss, ssp, units, T, lane);
  for (; u < units; u += S) {
    const int g0 = QT::grp(u);  // the unit's groups: slots g0 and g0 + GS (plain order)
    QU wu[NW][R];
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++) {
        if (!BOTTOM) QT::load(rp[m][r], u, cur[m][r]);  // row by row, as before BOTTOM
        QT::dec(cur[m][r], u, wu[m][r]);
      }
    // XPRE (the types with QT::XPRE, 2 to 5 tokens): every token's activation unit
    // is loaded before the arithmetic (tokens past T load T-1's and are not
    // summed), so the NT tokens' loads are in flight together; otherwise
    // each token's loads wait behind its guard, an L1 round trip a token.
    // Measured on an H100 (bench/cuda/results/s40, v1: T=5 with PDL, us):
    // Q8_0 gate_up 88.0 -> 72.6, down 42.1 -> 37.5, output 357 -> 261;
    // Q6_K gate_up 92.5 -> 73.8, down 40.3 -> 36.1, output 300 -> 278; wo
    // about 1-3 us slower on both. Q4_K lost (gate_up 58.1 -> 66.9 at 145
    // registers against 96), so it keeps the guarded loads, and so do the
    // mixed stacks (mq_body's XP) and buckets 8 and 16 (150-255 registers,
    // spilling at 16). cuda-bench (v3): a Q8_0 verify k=4 1.69x a decode
    // step against 1.85x, Q4_K_M unchanged (2.02x), the decode the same.
    constexpr bool PRE = XP && QT::XPRE && NT > 1 && NT <= 5;
    int4 xa[PRE ? NT : 1], xb[PRE ? NT : 1];
    float4 xmv[PRE ? NT : 1];
    if constexpr (PRE) {
#pragma unroll
      for (int t = 0; t < NT; t++) mq_xload<QT>(xq, xm, G, g0, min(t, T - 1), xa[t], xb[t], xmv[t]);
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
      if (t < T) {
        int4 x0, x1;
        float4 mm;
        if constexpr (PRE) {
          x0 = xa[t]; x1 = xb[t]; mm = xmv[t];
        } else {
          mq_xload<QT>(xq, xm, G, g0, t, x0, x1, mm);
        }
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < R; r++) {
            const QU& q = wu[m][r];
            // The dots start from i2f's bias (0x4B400000): i2f_biased
            // then needs only the float subtraction.
            float a = acc[m][r][t];
            if (QT::BS == 32) {  // Q8_0, Q4_0: both groups in one 32-block, one dx
              int d = __dp4a(q.q[0][0], x0.x, QT::HI16 ? 0 : 0x4B400000);
              d = __dp4a(q.q[0][1], x0.y, d);
              d = __dp4a(q.q[0][2], x0.z, d);
              d = __dp4a(q.q[0][3], x0.w, d);
              if (QT::HI16) {  // Q4_0: 16 * (low dot) + (high dot, as 16q), a[1] = d/16
                d = 16 * d + 0x4B400000;
                d = dp4a_us(q.q[1][0], x1.x, d);
                d = dp4a_us(q.q[1][1], x1.y, d);
                d = dp4a_us(q.q[1][2], x1.z, d);
                d = dp4a_us(q.q[1][3], x1.w, d);
              } else {
                d = __dp4a(q.q[1][0], x1.x, d);
                d = __dp4a(q.q[1][1], x1.y, d);
                d = __dp4a(q.q[1][2], x1.z, d);
                d = __dp4a(q.q[1][3], x1.w, d);
              }
              a = fmaf(i2f_biased(d), __fmul_rn(q.a[QT::HI16 ? 1 : 0], mm.x), a);
              if (QT::MIN) a = fmaf(-q.b[0], mm.y + mm.w, a);
            } else {
              int d0 = __dp4a(q.q[0][0], x0.x, 0x4B400000);
              d0 = __dp4a(q.q[0][1], x0.y, d0);
              d0 = __dp4a(q.q[0][2], x0.z, d0);
              d0 = __dp4a(q.q[0][3], x0.w, d0);
              int d1;
              if (QT::HI16) {
                d1 = dp4a_us(q.q[1][0], x1.x, 0x4B400000);
                d1 = dp4a_us(q.q[1][1], x1.y, d1);
                d1 = dp4a_us(q.q[1][2], x1.z, d1);
                d1 = dp4a_us(q.q[1][3], x1.w, d1);
              } else {
                d1 = __dp4a(q.q[1][0], x1.x, 0x4B400000);
                d1 = __dp4a(q.q[1][1], x1.y, d1);
                d1 = __dp4a(q.q[1][2], x1.z, d1);
                d1 = __dp4a(q.q[1][3], x1.w, d1);
              }
              a = fmaf(i2f_biased(d0), __fmul_rn(q.a[0], mm.x), a);
              if (QT::MIN) a = fmaf(-q.b[0], mm.y, a);
              a = fmaf(i2f_biased(d1), __fmul_rn(q.a[1], mm.z), a);
              if (QT::MIN) a = fmaf(-q.b[1], mm.w, a);
            }
            acc[m][r][t] = a;
          }
      }
    }
    if (BOTTOM && u + S < units) mq_load<QT, NW, R>(rp, u + S, cur);
  }
  pdl_trigger();
  // Each warp: xor-trees over its lanes (every lane gets the same sums).
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int t = 0; t < NT; t++)
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[m][r][t] += __shfl_xor_sync(0xffffffffu, acc[m][r][t], o);
  if (NORM && NT > 2) mq_sumsq<NT>(ss, ssp, units, T, lane);
  __shared__ float red[WB][NW][R][NT];
  if (ks > 1) {  // the group's ks warps, in order
    if (lane == 0)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
          for (int t = 0; t < NT; t++) red[warp][m][r][t] = acc[m][r][t];
    __syncthreads();
  }
  if (sl == 0) {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int t = 0; t < NT; t++) {
        if (lane != ((r * NT + t) & 31) || t >= T || row0 + r >= N) continue;
        finish_out<NW, MV_WARPS, NORM, GLU>(
            out + (long)t * ldo + row0 + r, mode,
            [&](int q, int m) { return ks == 1 ? (q == 0 ? acc[m][r][t] : 0.f) : (q < ks ? red[warp + q][m][r][t] : 0.f); },
            [&](int q) { return q == 0 ? ss[t] : 0.f; }, K, eps, act);
      }
  }
  if (!qo) return;
  if ((WB / ks) * R == 32) {  // the block's rows are one whole 32-row group
    mq_quant_own(out, ldo, qo, qg, N, T, bid, WB);
  } else {
    mq_quant_out(out, ldo, qo, qg, qcnt, N, T, (WB / ks) * R);
  }
}

// mq_*: plain product (mode store/add); mqn_*: of rmsnorm(x, g) (qx applied
// g, ssp its sums of squares); mqg_*: act(rmsnorm(x, g).gate) * (... .up),
// act 0 SiLU, 1 GELU-tanh (Gemma 3). mq_* and mqg_* quantize their output
// into qo when it is set (mq_quant_out: times qg, counted in qcnt).
// MQ_MQ, MQ_MQN, MQ_MQG: one kernel each, named mq[n|g]_NAME_NT then SUF
// (empty for the default; the variants' suffixes: gpu/cuda mqVariants).
#define MQ_MQ(NAME, QT, NT, SUF, RV, BV, WB)                                                                        \
  extern "C" __global__ void __launch_bounds__(WB * 32) mq_##NAME##_##NT##SUF(                                      \
      float* out, int ldo, const int8_t* xq, const float2* xm, const void* w, int N, int K, int T, int mode,        \
      int ks, int8_t* qo, const float* qg, unsigned* qcnt) {                                                        \
    mq_body<QT, NT, false, false, RV, BV, WB>(out, ldo, xq, xm, 0, w, 0, N, K,                                      \
                                              T, mode, 0.f, ks, 0, qo, qg, qcnt, blockIdx.x);                       \
  }
#define MQ_MQN(NAME, QT, NT, SUF, RV, BV, WB)                                                                       \
  extern "C" __global__ void __launch_bounds__(WB * 32) mqn_##NAME##_##NT##SUF(                                     \
      float* out, int ldo, const int8_t* xq, const float2* xm, const float* ssp, const void* w, int N, int K,       \
      int T, float eps, int ks) {                                                                                   \
    mq_body<QT, NT, false, true, RV, BV, WB>(out, ldo, xq, xm, ssp, w, 0, N, K, T, 0, eps, ks, 0, nullptr, nullptr, \
                                             nullptr, blockIdx.x);                                                  \
  }
#define MQ_MQG(NAME, QT, NT, SUF, RV, BV, WB)                                                                       \
  extern "C" __global__ void __launch_bounds__(WB * 32) mqg_##NAME##_##NT##SUF(                                     \
      float* out, int ldo, const int8_t* xq, const float2* xm, const float* ssp, const void* w, const void* w2,     \
      int N, int K, int T, float eps, int ks, int act, int8_t* qo, const float* qg, unsigned* qcnt) {               \
    mq_body<QT, NT, true, true, RV, BV, WB>(out, ldo, xq, xm, ssp, w, w2, N, K,                                     \
                                            T, 0, eps, ks, act, qo, qg, qcnt, blockIdx.x);                          \
  }
#define MQ_INST(NAME, QT, NT) \
  MQ_MQ(NAME, QT, NT, , 0, -1, MV_WARPS) MQ_MQN(NAME, QT, NT, , 0, -1, MV_WARPS) MQ_MQG(NAME, QT, NT, , 0, -1, MV_WARPS)
#define MQ_ALL(NAME, QT) \
  MQ_INST(NAME, QT, 1) MQ_INST(NAME, QT, 2) MQ_INST(NAME, QT, 4) MQ_INST(NAME, QT, 5) MQ_INST(NAME, QT, 8) MQ_INST(NAME, QT, 16)
MQ_ALL(q4k, QQ4K)
MQ_ALL(q5k, QQ5K)
MQ_ALL(q6k, QQ6K)
MQ_ALL(q40, QQ40)
MQ_ALL(q80, QQ80)
// The one-token variants (RIGSCOPE_CUDA_MQV, gpu/cuda mqvEntries and its
// defaultMQV; suffix r<R>b: R rows per group with BOTTOM loading; a row's
// sums are those of the default kernels, whose split of a row does not
// depend on R or on the loading): those measured faster on the H200
// (bench/cuda/results/s17/qglu; the others measured there, Q4_K's GLU and
// norm products at 1, 2 or 4 rows, Q6_K's add products at 2, Q8_0 at 2
// rows without BOTTOM, were slower and are gone).
MQ_MQ(q4k, QQ4K, 1, r2b, 2, 1, MV_WARPS)
MQ_MQN(q6k, QQ6K, 1, r2b, 2, 1, MV_WARPS)
MQ_MQG(q6k, QQ6K, 1, r2b, 2, 1, MV_WARPS)
MQ_MQ(q80, QQ80, 1, r2b, 2, 1, MV_WARPS)
MQ_MQN(q80, QQ80, 1, r2b, 2, 1, MV_WARPS)
MQ_MQG(q80, QQ80, 1, r2b, 2, 1, MV_WARPS)
// The wide one-token variants (RIGSCOPE_CUDA_MQW, gpu/cuda mqwEntries;
// suffix w<WB>: WB warps a block) of the products that quantize their
// output: at the K split the H200 takes for the llama-8b shapes (gate/up
// 1; wo, down 2) a block owns one whole 32-row group and quantizes it
// itself (mq_quant_own), with no fence, no atomic and no wait for the
// group's other blocks; the sums are the default kernels', bit for bit.
// Measured on the H200 (bench/cuda/results/s21/s4), T=1 with PDL: Q4_K wo
// 6.8 -> 5.6 us, gate/up 25.1 -> 23.4, down 14.0 -> 11.4; the GLUs of Q6_K
// and Q8_0 at 16 warps (128 and 103 registers: one block an SM) were
// slower (38.5 -> 46.2, 37.6 -> 43.2 us plain) and are gone.
MQ_MQG(q4k, QQ4K, 1, w8, 0, -1, 8)
MQ_MQ(q4k, QQ4K, 1, r2bw32, 2, 1, 32)
MQ_MQ(q80, QQ80, 1, r2bw32, 2, 1, 32)
MQ_MQG(q40, QQ40, 1, w8, 0, -1, 8)
MQ_MQ(q40, QQ40, 1, w16, 0, -1, 16)
// Not measured yet (not in defaultMQW): Q6_K's wo and down.
MQ_MQ(q6k, QQ6K, 1, w16, 0, -1, 16)

// mqn2_A_B_NT: a norm product over a stack of two types in one launch (a
// Q4_K_M or Q5_K_M layer's qkv whose attn_v is Q6_K; gpu/cuda qmatvec).
// Blocks [0, nba) run mqn_A_NT's body on rows [0, Na), the others mqn_B_NT's
// on rows [Na, Na + Nb), each with its own K split (ksa, ksb), rows per
// group and loading (RVx, BVx: the variant its own T=1 launch takes), so
// every row sums bitwise as its part's own launch sums it; one launch
// instead of two saves the second's ramp and its wait on the first.
#define MQ_MQN2(NA, QA, NB, QB, NT, RVA, BVA, RVB, BVB)                                                          \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mqn2_##NA##_##NB##_##NT(                          \
      float* out, int ldo, const int8_t* xq, const float2* xm, const float* ssp, const void* wa, int Na, int ksa,  \
      int nba, const void* wb, int Nb, int ksb, int K, int T, float eps) {                                      \
    if ((int)blockIdx.x < nba)                                                                                   \
      mq_body<QA, NT, false, true, RVA, BVA, MV_WARPS, false>(out, ldo, xq, xm, ssp, wa, 0, Na, K, T, 0, eps,     \
                                                             ksa, 0, nullptr, nullptr, nullptr, blockIdx.x);    \
    else                                                                                                         \
      mq_body<QB, NT, false, true, RVB, BVB, MV_WARPS, false>(out + Na, ldo, xq, xm, ssp, wb, 0, Nb, K, T, 0,     \
                                                             eps, ksb, 0, nullptr, nullptr, nullptr,            \
                                                             blockIdx.x - nba);                                  \
  }
// The pairs, at T=1 with the default variants (gpu/cuda defaultMQV: Q6_K's
// norm product on a slice of <= 2048 rows r2b, the others none).
#define MQ_MQN2_ALL(NA, QA)                                                               \
  MQ_MQN2(NA, QA, q6k, QQ6K, 1, 0, -1, 2, 1) MQ_MQN2(NA, QA, q6k, QQ6K, 2, 0, -1, 0, -1)  \
  MQ_MQN2(NA, QA, q6k, QQ6K, 4, 0, -1, 0, -1) MQ_MQN2(NA, QA, q6k, QQ6K, 5, 0, -1, 0, -1) \
  MQ_MQN2(NA, QA, q6k, QQ6K, 8, 0, -1, 0, -1) \
  MQ_MQN2(NA, QA, q6k, QQ6K, 16, 0, -1, 0, -1)
MQ_MQN2_ALL(q4k, QQ4K)
MQ_MQN2_ALL(q5k, QQ5K)

