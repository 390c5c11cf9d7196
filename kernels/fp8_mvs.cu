// mf8*_Ts, mf8*_Tsw: FP8 products at T = 2..8 tokens exactly (included
// after fp8_mv.cu; gpu/cuda F8MV s or sw): mf8_body's sums, rebuilt for
// the verify of a speculative step. mf at several tokens (NT the bucket,
// R 2, loads at the top, 4 warps a block) ran at 4.4x its one-token time
// on the H200 (s18: latency bound, 191 registers, a lane's next chunk
// requested only after the tokens of this one).
//
// The same lane -> chunk mapping (chunks 32s + l, 32(s + ks) + l, ... of
// the group's warp s, ks by shape as at one token), the same per-chunk
// sums (16 fmas in element order from 0, then one fma by the scale), the
// chunks in the lane's order, the same xor-tree, the ks warps in order
// (finish_out with MV_WARPS slots), so every row is bitwise mf's at T=1.
// What differs:
// - NT = T exactly: no tokens masked off, no accumulators for them.
// - Each chunk decoded once (mf8_dec) into registers, and right after, the
//   lane's next chunk requested into the raw registers just freed, so its
//   DRAM round trip overlaps this chunk's T token products; the chunk after
//   it is prefetched into L2.
// - The block is blockDim.x/32 warps (gpu/cuda: 8 unless w4 or w16), gpb groups of
//   ks warps: the groups of a block walk the same chunks at the same time,
//   so x (T*K floats, through L1) is read once from L2 for more rows.
// - R rows a group: s R 2 (GLU 1), sw R 4 (GLU 2), so R*NW (rows one x
//   load serves) is 2 or 4.
template <int NT, bool GLU, bool NORM, int R>
__device__ __forceinline__ void mf8s_body(float* __restrict__ out, int ldo, const float* __restrict__ x, const void* w,
                                          const void* ws, const void* w2, const void* ws2, int N, int K, int mode,
                                          const float* __restrict__ g, float eps, int ks, int act) {
  constexpr int NW = GLU ? 2 : 1;
  constexpr int MAXW = 16;  // warps a block at most (s: __launch_bounds__ 512)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int grp = warp / ks, sl = warp - grp * ks;
  const int gpb = (int)(blockDim.x >> 5) / ks;
  const int chunks = K / 16;
  const int row0 = (blockIdx.x * gpb + grp) * R;
  const uint4* rp[NW][R];
  const float* sp[NW][R];
  int cs[NW];
#pragma unroll
  for (int m = 0; m < NW; m++) {
    const int* h = static_cast<const int*>(m ? ws2 : ws);
    const int rs = __ldg(h), gc = __ldg(h + 2);
    cs[m] = __ldg(h + 1);
#pragma unroll
    for (int r = 0; r < R; r++) {
      const long row = min(row0 + r, N - 1);
      rp[m][r] = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(m ? w2 : w) + row * K);
      sp[m][r] = static_cast<const float*>(m ? ws2 : ws) + 4 + (row >> rs) * gc;
    }
  }
  const int S = ks * 32, c0 = sl * 32 + lane;
  uint4 cur[NW][R];
  float sc[NW][R];
  if (c0 < chunks) mf8_load<NW, R>(rp, sp, cs, c0, cur, sc);  // the weights: never written by the kernels before
  if (c0 + S < chunks)
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++) prefetch_l2(rp[m][r] + c0 + S);
  pdl_wait();
  float acc[NW][R][NT], ss[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) {
    ss[t] = 0.f;
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++) acc[m][r][t] = 0.f;
  }
  for (int c = c0; c < chunks; c += S) {
    float wf[NW][R][16], scl[NW][R];
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++) {
        mf8_dec(cur[m][r], wf[m][r]);
        scl[m][r] = sc[m][r];
      }
    if (c + S < chunks) {
      mf8_load<NW, R>(rp, sp, cs, c + S, cur, sc);
      if (c + 2 * S < chunks)
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < R; r++) prefetch_l2(rp[m][r] + c + 2 * S);
    }
    float gv[16];
    if (NORM) {
      const float4* gp = reinterpret_cast<const float4*>(g) + 4 * c;
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const float4 f = __ldg(gp + i);
        gv[4 * i] = f.x; gv[4 * i + 1] = f.y; gv[4 * i + 2] = f.z; gv[4 * i + 3] = f.w;
      }
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
      float xv[16];
      const float4* xp = reinterpret_cast<const float4*>(x + (long)t * K) + 4 * c;
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const float4 f = __ldg(xp + i);
        xv[4 * i] = f.x; xv[4 * i + 1] = f.y; xv[4 * i + 2] = f.z; xv[4 * i + 3] = f.w;
      }
      if (NORM) {
#pragma unroll
        for (int i = 0; i < 16; i++) {
          ss[t] = fmaf(xv[i], xv[i], ss[t]);
          xv[i] = __fmul_rn(xv[i], gv[i]);
        }
      }
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[m][r][t] = fmaf(mf8_dotf(wf[m][r], xv), scl[m][r], acc[m][r][t]);
    }
  }
  pdl_trigger();
  __shared__ float red[MAXW][NW][R][NT];
  __shared__ float red_ss[MAXW][NT];
  mf8_finish<NW, R, NT, MAXW, NORM, GLU>(acc, ss, red, red_ss, ks, warp, lane, sl, NT, N, row0, out, ldo, mode, K, eps,
                                         act);
}

// MF8S_INST(NT, SUF, R, MAXT, MINB): mf8_NT SUF, mf8n_, mf8g_ (mf8_1's
// arguments; T unused, it is NT) with R rows a group (GLU R/2), at most
// MAXT threads a block and MINB such blocks an SM (s: 512 and 1, so at
// most 128 registers; sw: 256 and 1).
#define MF8S_INST(NT, SUF, R, MAXT, MINB)                                                                                 \
  extern "C" __global__ void __launch_bounds__(MAXT, MINB) mf8_##NT##SUF(                                            \
      float* out, int ldo, const float* x, const void* w, const void* ws, int N, int K, int T, int mode, int ks) {  \
    mf8s_body<NT, false, false, R>(out, ldo, x, w, ws, 0, 0, N, K, mode, 0, 0.f, ks, 0);                          \
  }                                                                                                                 \
  extern "C" __global__ void __launch_bounds__(MAXT, MINB) mf8n_##NT##SUF(                                           \
      float* out, int ldo, const float* x, const void* w, const void* ws, int N, int K, int T, const float* g,     \
      float eps, int ks) {                                                                                          \
    mf8s_body<NT, false, true, R>(out, ldo, x, w, ws, 0, 0, N, K, 0, g, eps, ks, 0);                              \
  }                                                                                                                 \
  extern "C" __global__ void __launch_bounds__(MAXT, MINB) mf8g_##NT##SUF(                                           \
      float* out, int ldo, const float* x, const void* w, const void* ws, const void* w2, const void* ws2, int N,  \
      int K, int T, const float* g, float eps, int act, int ks) {                                                   \
    mf8s_body<NT, true, true, R / 2>(out, ldo, x, w, ws, w2, ws2, N, K, 0, g, eps, ks, act);                      \
  }
#define MF8S_T(NT) MF8S_INST(NT, s, 2, 512, 1) MF8S_INST(NT, sw, 4, 256, 1)
MF8S_T(2)
MF8S_T(3)
MF8S_T(4)
MF8S_T(5)
MF8S_T(6)
MF8S_T(7)
MF8S_T(8)
