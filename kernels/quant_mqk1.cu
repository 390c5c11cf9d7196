// The Q8_K products' one-token twins on dp4a (included at the end of
// quant_mqk.cu; gpu/cuda launches them under RIGSCOPE_CUDA_MQK for T = 1
// unless RIGSCOPE_CUDA_MQK1=0): mqk1_q4k_wW, mqkg1_q4k_wW and mqk1_q6k_wW
// give every row bitwise what mqk_q4k_*_wW, mqkg_q4k_*_wW and
// mqk_q6k_*_wW give it at any T, so a process may decode on them and
// verify on the tensor cores.
//
// What has to match: per super-block sb of a row, the integers (Q4_K:
// isum = sum_s sc_s * (q_s . x_s) and msum = sum_s m_s * sum(x_s); Q6_K:
// sum_g sc_g * (q_g . x_g - 32 sum(x_g))) are exact, so any order of
// them gives the same value; the float chain is not: warp s of an mqk
// block adds v(sb) = dx * (d * isum - dmin * msum) for sb = s, s + W, ...
// in that order, and finish_out adds the W warps' sums in warp order.
//
// Session 29's twins (bench/cuda/results/s30, rejected) kept mqk's
// geometry, a lane per row and half super-block, so a warp's loads touched
// 16 rows at once and the products ran 10-140% slower than the dp4a
// default. Here the lanes take consecutive 32-weight units of one row, as
// mq_body's do (QQ4K::load / QQ6K::load, the same load instructions): 8
// lanes a super-block, 4 super-blocks a warp a step. Lane group g = l/8
// meets super-blocks sb = 4i + g, so it keeps the chains of classes
// sb mod W = g, g + 4, ... (W/4 of them: step i adds to class slot i mod
// W/4); the 8 lanes' integer parts meet by three xor-shuffles; the
// classes' chains go to shared memory as the warps' partials of mqk, and
// mq_red_finish adds them as mq_tile_finish does. A block of W warps owns
// 16 rows, 16/W a warp, their loads for the next step issued after the
// current step's arithmetic (mq_body's BOTTOM).

// mqk1_x is token 0's Q8_K bytes for the 16 elements 16h + i (i < 16) of
// sub-blocks s and s2 of super-block sb (qk_at's order): lo[k] elements
// i = 4k.. of s (k < 2) and 8 + 4(k-2).. (k >= 2), hi likewise for s2.
__device__ __forceinline__ void mqk1_x(const int8_t* __restrict__ xq, int sb, int h, int s, int s2, uint4& lo, uint4& hi) {
  const int8_t* b = xq + (long)sb * 256 + 128 * h;
  const uint2 a0 = __ldg(reinterpret_cast<const uint2*>(b + 8 * s)), a1 = __ldg(reinterpret_cast<const uint2*>(b + 64 + 8 * s));
  const uint2 b0 = __ldg(reinterpret_cast<const uint2*>(b + 8 * s2)), b1 = __ldg(reinterpret_cast<const uint2*>(b + 64 + 8 * s2));
  lo = make_uint4(a0.x, a0.y, a1.x, a1.y);
  hi = make_uint4(b0.x, b0.y, b1.x, b1.y);
}

__device__ __forceinline__ int dot16(uint4 q, uint4 x) {
  int d = __dp4a((int)q.x, (int)x.x, 0);
  d = __dp4a((int)q.y, (int)x.y, d);
  d = __dp4a((int)q.z, (int)x.z, d);
  return __dp4a((int)q.w, (int)x.w, d);
}

// sum8 is v summed over the lane's group of 8 (every lane gets it).
__device__ __forceinline__ int sum8(int v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v + __shfl_xor_sync(0xffffffffu, v, 4);
}

// mqk1_run is the twins' loop for a QT (QQ4K or QQ6K) product: warp w of
// the block owns rows row0 + w R .. + R - 1 (R = 16 / W) of w (and w2, NW
// = 2); step(raw, m, sb, c) is super-block sb's float term of the lane's
// group for matrix m, from the lane's unit c (its raw bytes); the class
// chains end in red[class][m][row][0].
template <class QT, int W, int NW, typename Step>
__device__ __forceinline__ void mqk1_run(float (&red)[W][NW][16][1], const void* w, const void* w2, int N, int K,
                                         Step step) {
  constexpr int R = 16 / W, KW = W / 4;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 3, c = lane & 7;
  const int row0 = blockIdx.x * 16 + warp * R, nsb = K / 256;
  const long rb = (long)nsb * QT::BB;
  const uint8_t* rp[NW][R];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++) rp[m][r] = static_cast<const uint8_t*>(m ? w2 : w) + (long)min(row0 + r, N - 1) * rb;
  float acc[NW][R][KW];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int k = 0; k < KW; k++) acc[m][r][k] = 0.f;
  typename QT::Raw cur[NW][R];
  if (g < nsb)
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++) QT::load(rp[m][r], 8 * g + c, cur[m][r]);  // weights: before pdl_wait
  pdl_wait();
  for (int i0 = 0; 4 * i0 < nsb; i0 += KW) {
#pragma unroll
    for (int k = 0; k < KW; k++) {
      const int sb = 4 * (i0 + k) + g;
      if (4 * (i0 + k) >= nsb) break;  // uniform over the warp: the shuffles stay converged
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < R; r++) {
          const float v = step(cur[m][r], m, sb < nsb ? sb : nsb - 1, c);
          if (sb < nsb) acc[m][r][k] = __fadd_rn(acc[m][r][k], v);
        }
      if (sb + 4 < nsb)
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < R; r++) QT::load(rp[m][r], 8 * (sb + 4) + c, cur[m][r]);
    }
  }
  pdl_trigger();
  if (c == 0)
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int k = 0; k < KW; k++) red[4 * k + g][m][warp * R + r][0] = acc[m][r][k];
  __syncthreads();
}

// mqk1_body: mqk_body (Q4_K; NW = 2: the GLU) at one token. Unit c of a
// super-block is qs bytes 16c..16c+15: low nibbles elements 16(c%2) + i of
// sub-block 2(c/2), high nibbles those of sub-block 2(c/2) + 1.
template <int W, int NW>
__device__ __forceinline__ void mqk1_body(float* __restrict__ out, int ldo, const int8_t* __restrict__ xq,
                                          const float* __restrict__ xd, const short* __restrict__ xs, const void* w,
                                          const void* w2, int N, int K, int mode, int act) {
  __shared__ float red[W][NW][16][1];
  mqk1_run<QQ4K, W, NW>(red, w, w2, N, K, [&](const QQ4K::Raw& raw, int, int sb, int c) {
    const int p = c >> 1;
    unsigned sc[2], mn[2];
    q4k_scale_words(raw.h.y, raw.h.z, raw.h.w, sc, mn);
    const unsigned scw = p < 2 ? sc[0] : sc[1];
    uint4 xl, xh;
    mqk1_x(xq, sb, c & 1, 2 * p, 2 * p + 1, xl, xh);
    const uint4 ql = nib(raw.q, 0), qh = nib(raw.q, 1);
    const int sh = 16 * (p & 1);
    int isum = (int)((scw >> sh) & 0xffu) * dot16(ql, xl) + (int)((scw >> (sh + 8)) & 0xffu) * dot16(qh, xh);
    isum = sum8(isum);
    const int msum = q4k_msum(__ldg(reinterpret_cast<const int4*>(xs + (long)sb * 8)), mn);
    const float2 dm = __half22float2(*reinterpret_cast<const __half2*>(&raw.h.x));
    const float vv = __fsub_rn(__fmul_rn(dm.x, (float)isum), __fmul_rn(dm.y, (float)msum));
    return __fmul_rn(__ldg(xd + sb), vv);
  });
  mq_red_finish<NW, W, 1, false, NW == 2>(out, ldo, red, blockIdx.x * 16, N, 1, mode, [](int) { return 0.f; }, 0, 0.f, act);
}

// mqk1q6_body: mqk6_body (Q6_K) at one token. Unit c = 4n + 2kk + h is
// QQ6K's: elements 16h + i of sub-blocks 4n + kk (low nibbles, scale group
// 2(4n + kk) + h) and 4n + kk + 2 (high nibbles, group + 4).
template <int W>
__device__ __forceinline__ void mqk1q6_body(float* __restrict__ out, int ldo, const int8_t* __restrict__ xq,
                                            const float* __restrict__ xd, const short* __restrict__ xs16,
                                            const void* w, int N, int K, int mode) {
  __shared__ float red[W][1][16][1];
  mqk1_run<QQ6K, W, 1>(red, w, nullptr, N, K, [&](const QQ6K::Raw& raw, int, int sb, int c) {
    const int n = c >> 2, kk = (c >> 1) & 1, h = c & 1, s = 4 * n + kk;
    QU q;  // the unit's 6-bit weights as mq_body decodes them (its float scales go unused)
    QQ6K::dec(raw, c, q);
    const uint4 a = make_uint4(q.q[0][0], q.q[0][1], q.q[0][2], q.q[0][3]), b = make_uint4(q.q[1][0], q.q[1][1], q.q[1][2], q.q[1][3]);
    uint4 xa, xb;
    mqk1_x(xq, sb, h, s, s + 2, xa, xb);
    const short* bs = xs16 + (long)sb * 16;
    const int g0 = 2 * s + h;
    int v = (int)raw.s0 * (dot16(a, xa) - 32 * (int)__ldg(bs + g0)) + (int)raw.s1 * (dot16(b, xb) - 32 * (int)__ldg(bs + g0 + 4));
    v = sum8(v);
    return __fmul_rn(__ldg(xd + sb), __fmul_rn(__half2float(__ushort_as_half(raw.d)), (float)v));
  });
  mq_red_finish<1, W, 1, false, false>(out, ldo, red, blockIdx.x * 16, N, 1, mode, [](int) { return 0.f; }, 0, 0.f, 0);
}

// mqk1_q4k_wW, mqkg1_q4k_wW, mqk1_q6k_wW: the one-token products, with
// mqk_q4k_*_wW's, mqkg_q4k_*_wW's and mqk_q6k_*_wW's arguments and grid
// (a block of W warps per 16 rows; T is 1; xs the sums per 16 for Q6_K).
#define MQK1_INST(W)                                                                                           \
  extern "C" __global__ void __launch_bounds__(W * 32) mqk1_q4k_w##W(float* out, int ldo, const int8_t* xq,     \
                                                                      const float* xd, const short* xs,       \
                                                                      const void* w, int N, int K, int T,     \
                                                                      int mode) {                             \
    mqk1_body<W, 1>(out, ldo, xq, xd, xs, w, nullptr, N, K, mode, 0);                                          \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(W * 32) mqk1_q6k_w##W(float* out, int ldo, const int8_t* xq,     \
                                                                      const float* xd, const short* xs,       \
                                                                      const void* w, int N, int K, int T,     \
                                                                      int mode) {                             \
    mqk1q6_body<W>(out, ldo, xq, xd, xs, w, N, K, mode);                                                       \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(W * 32) mqkg1_q4k_w##W(                                        \
      float* out, int ldo, const int8_t* xq, const float* xd, const short* xs, const void* w, const void* w2,   \
      int N, int K, int T, int act) {                                                                          \
    mqk1_body<W, 2>(out, ldo, xq, xd, xs, w, w2, N, K, 0, act);                                                \
  }
MQK1_INST(4)
MQK1_INST(8)
MQK1_INST(16)
