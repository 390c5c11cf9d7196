// FP8 (e4m3) products in quant_mv.cu's shape (mf8*; included at the end of
// fp8.cu, whose WF8 layout and scale grid they read): gpu/cuda's
// Tuning.F8MV (RIGSCOPE_CUDA_F8MV, fp8_mv.go) picks them instead of mv_f8.
// mv_body gave a lane 4 rows x K/2048 chunks (2 at K = 4096) and a block
// 4 rows, so a block's life was a DRAM round trip plus its reduction;
// here a group of ks warps owns R rows and its lanes take chunks
// 32s + l, 32(s + ks) + l, ... of them (ks 1: K/512 chunks a lane per
// row), each activation load serves R (GLU: 2R) rows, and at one token
// the next chunk's weights and scales are loaded at the bottom of the loop
// (quant_mv.cu's BOTTOM), loop-carried, so R*NW 16-byte loads are always
// in flight.
//
// Sums: a chunk's 16 exact e4m3 values times x by float32 fmas in element
// order from 0, the chunk's sum times its scale added by one fma (as
// mv_f8's Scaled), chunks in the lane's order, an xor-tree over the lanes,
// the ks warps in order (finish_out). ks is chosen per matrix shape
// (gpu/cuda mf8Split), never per T, and neither R nor the loading changes
// a row's order, so every T and every variant sums a row the same way.
//
// Decoding: cvt.rn.f16x2.e4m3x2 (one instruction for two values) and the
// f16 -> f32 conversions (HADD2.F32): 1.5 instructions a weight; exact bit
// operations straight to float32 take at least 2 (a shift and a LOP3 each,
// as the byte's sign and magnitude move by different amounts).

// Rows per group by token bucket: R1 at one token (the variant's), 2 up to
// 8 tokens, 1 at 16 (the decoded chunks of R*NW rows stay in registers
// over the tokens).
#define MF8_ROWS(NT, R1) ((NT) == 1 ? (R1) : (NT) <= 8 ? 2 : 1)

// mf8_dot: sum_i w_i * x_i over a chunk's 16 e4m3 values v (byte i element
// i), in order from 0, unscaled.
__device__ __forceinline__ float mf8_dot(const uint4& v, const float (&x)[16]) {
  const unsigned u[4] = {v.x, v.y, v.z, v.w};
  float p = 0.f;
#pragma unroll
  for (int j = 0; j < 4; j++) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
      __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(h ? u[j] >> 16 : u[j] & 0xffffu), __NV_E4M3);
      const float2 f = __half22float2(*reinterpret_cast<__half2*>(&r));
      p = fmaf(f.x, x[4 * j + 2 * h], p);
      p = fmaf(f.y, x[4 * j + 2 * h + 1], p);
    }
  }
  return p;
}

// mf8_dec: a chunk's 16 e4m3 values as float32 (exact), element i at o[i]:
// several tokens decode a chunk once (ptxas did not hoist mf8_dot's
// conversions out of the token loop: 2.5 instructions a weight a token).
__device__ __forceinline__ void mf8_dec(const uint4& v, float (&o)[16]) {
  const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; j++) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
      __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(h ? u[j] >> 16 : u[j] & 0xffffu), __NV_E4M3);
      const float2 f = __half22float2(*reinterpret_cast<__half2*>(&r));
      o[4 * j + 2 * h] = f.x;
      o[4 * j + 2 * h + 1] = f.y;
    }
  }
}
// mf8_dotf: mf8_dot of decoded values, the same fmas in the same order.
__device__ __forceinline__ float mf8_dotf(const float (&w)[16], const float (&x)[16]) {
  float p = 0.f;
#pragma unroll
  for (int i = 0; i < 16; i++) p = fmaf(w[i], x[i], p);
  return p;
}

// mf8_load: chunk c of every row and its scale.
template <int NW, int R>
__device__ __forceinline__ void mf8_load(const uint4* const (&rp)[NW][R], const float* const (&sp)[NW][R], const int (&cs)[NW], int c,
                                         uint4 (&v)[NW][R], float (&s)[NW][R]) {
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++) {
      v[m][r] = ld_stream(rp[m][r] + c);
      s[m][r] = __ldg(sp[m][r] + ((c << 4) >> cs[m]));
    }
}

// mf8_finish ends a row group of mf8_body and mf8s_body alike, so that a
// row's bits are the same in both: acc (and with NORM ss) summed over the
// warp's lanes; with ks > 1 the group's ks warps' sums passed through red
// and red_ss (MAXW warps of slots); then each (row, token) output finished
// in warp order (finish_out) by lane (r*NT + t) % 32 of the group's first
// warp (sl 0).
template <int NW, int R, int NT, int MAXW, bool NORM, bool GLU>
__device__ __forceinline__ void mf8_finish(float (&acc)[NW][R][NT], float (&ss)[NT], float (&red)[MAXW][NW][R][NT],
                                           float (&red_ss)[MAXW][NT], int ks, int warp, int lane, int sl, int T, int N,
                                           int row0, float* out, int ldo, int mode, int K, float eps, int act) {
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[m][r][t] += __shfl_xor_sync(0xffffffffu, acc[m][r][t], o);
    if (NORM)
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) ss[t] += __shfl_xor_sync(0xffffffffu, ss[t], o);
  }
  if (ks > 1) {  // the group's ks warps, in order
    if (lane == 0) {
#pragma unroll
      for (int t = 0; t < NT; t++) {
        red_ss[warp][t] = ss[t];
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < R; r++) red[warp][m][r][t] = acc[m][r][t];
      }
    }
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
            [&](int q) { return ks == 1 ? (q == 0 ? ss[t] : 0.f) : (q < ks ? red_ss[warp + q][t] : 0.f); }, K, eps, act);
      }
  }
}

// mf8_body: out (T, ldo) [+]= x (T, K) . W(N, K)^T as mv_body (mode, GLU,
// NORM; W FP8 with its scale grid ws), the block's MV_WARPS warps in
// MV_WARPS/ks groups of R rows. BOTTOM: the loads of the lane's next chunk
// at the bottom of the loop (the first before pdl_wait: the weights are
// never written by the kernels before); else at its top. P (persistent):
// the grid (gpu/cuda: the blocks that fit the SMs at once) strides over
// the row blocks, and with BOTTOM a lane's last chunk of one row block is
// followed by the loads of its first of the next, so they fly during the
// reduction; a row's sums do not change. H (several tokens): each chunk
// decoded once before the token loop (else in every token's dot: ptxas
// keeps the bytes, 1.5 more instructions a weight a token, fewer
// registers).
template <int NT, bool GLU, bool NORM, int R, bool BOTTOM, bool P = false, bool H = true>
__device__ __forceinline__ void mf8_body(float* __restrict__ out, int ldo, const float* __restrict__ x, const void* w,
                                         const void* ws, const void* w2, const void* ws2, int N, int K, int T, int mode,
                                         const float* __restrict__ g, float eps, int ks, int act) {
  constexpr int NW = GLU ? 2 : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int grp = warp / ks, sl = warp - grp * ks;
  const int gpb = MV_WARPS / ks, nblk = (N + gpb * R - 1) / (gpb * R);
  const int chunks = K / 16;
  const uint4* rp[NW][R];
  const float* sp[NW][R];
  int cs[NW], rs[NW], gc[NW];
#pragma unroll
  for (int m = 0; m < NW; m++) {
    const int* h = static_cast<const int*>(m ? ws2 : ws);
    rs[m] = __ldg(h), cs[m] = __ldg(h + 1), gc[m] = __ldg(h + 2);
  }
  // rows: the row pointers of row block b.
  auto rows = [&](int b) {
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++) {
        const long row = min((b * gpb + grp) * R + r, N - 1);
        rp[m][r] = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(m ? w2 : w) + row * K);
        sp[m][r] = static_cast<const float*>(m ? ws2 : ws) + 4 + (row >> rs[m]) * gc[m];
      }
  };
  const int S = ks * 32, c0 = sl * 32 + lane;
  int b = blockIdx.x;
  rows(b);
  uint4 cur[NW][R];
  float sc[NW][R];
  if (BOTTOM && c0 < chunks) mf8_load<NW, R>(rp, sp, cs, c0, cur, sc);
  if (l2_prefetch) {
    for (int v = c0; v < chunks; v += S)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < R; r++) prefetch_l2(rp[m][r] + v);
  }
  pdl_wait();
  __shared__ float red[MV_WARPS][NW][R][NT];
  __shared__ float red_ss[MV_WARPS][NT];
  while (true) {
    const int row0 = (b * gpb + grp) * R;
    const int bn = P ? b + (int)gridDim.x : nblk;  // the next row block
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
      if (!BOTTOM) mf8_load<NW, R>(rp, sp, cs, c, cur, sc);
      constexpr bool HD = NT > 1 && H;
      float wf[HD ? NW : 1][HD ? R : 1][16];
      if constexpr (HD) {
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < R; r++) mf8_dec(cur[m][r], wf[m][r]);
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
        if (t < T) {
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
            for (int r = 0; r < R; r++) {
              float p;
              if constexpr (HD) p = mf8_dotf(wf[m][r], xv);
              else p = mf8_dot(cur[m][r], xv);
              acc[m][r][t] = fmaf(p, sc[m][r], acc[m][r][t]);
            }
        }
      }
      if (BOTTOM) {
        if (c + S < chunks) {
          mf8_load<NW, R>(rp, sp, cs, c + S, cur, sc);
        } else if (P && bn < nblk) {
          rows(bn);
          mf8_load<NW, R>(rp, sp, cs, c0, cur, sc);
        }
      }
    }
    pdl_trigger();
    mf8_finish<NW, R, NT, MV_WARPS, NORM, GLU>(acc, ss, red, red_ss, ks, warp, lane, sl, T, N, row0, out, ldo, mode, K,
                                               eps, act);
    if (!P || bn >= nblk) break;
    b = bn;
    if (!BOTTOM || c0 >= chunks) rows(b);
    if (ks > 1) __syncthreads();  // red read before the next block's sums overwrite it
  }
}

// mf8_NT SUF: plain product (mode store/add); mf8n_: of rmsnorm(x, g);
// mf8g_: act(rmsnorm(x, g).gate) * (... .up). The arguments are mv_f8's,
// glu_f8's, mvn_f8's then ks. SUF (gpu/cuda mf8Kernel): empty for R1 4 with
// BOTTOM; r2: R1 2 with BOTTOM; t: R1 4, loaded at the top; p, r2p:
// persistent (P) with BOTTOM at R1 4, 2. Several tokens: loaded at the top,
// or (suffix b) at the bottom; l: at the top, decoded in every token's
// dot (not H).
#define MF8_INST(NT, SUF, R1, B) MF8_INSTP(NT, SUF, R1, B, false, true)
#define MF8_INSTP(NT, SUF, R1, B, P, H)                                                                                    \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mf8_##NT##SUF(                                        \
      float* out, int ldo, const float* x, const void* w, const void* ws, int N, int K, int T, int mode, int ks) {  \
    mf8_body<NT, false, false, MF8_ROWS(NT, R1), B, P, H>(out, ldo, x, w, ws, 0, 0, N, K, T, mode, 0, 0.f, ks, 0);        \
  }                                                                                                                 \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mf8n_##NT##SUF(                                       \
      float* out, int ldo, const float* x, const void* w, const void* ws, int N, int K, int T, const float* g,     \
      float eps, int ks) {                                                                                          \
    mf8_body<NT, false, true, MF8_ROWS(NT, R1), B, P, H>(out, ldo, x, w, ws, 0, 0, N, K, T, 0, g, eps, ks, 0);            \
  }                                                                                                                 \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mf8g_##NT##SUF(                                       \
      float* out, int ldo, const float* x, const void* w, const void* ws, const void* w2, const void* ws2, int N,  \
      int K, int T, const float* g, float eps, int act, int ks) {                                                   \
    mf8_body<NT, true, true, MF8_ROWS(NT, R1), B, P, H>(out, ldo, x, w, ws, w2, ws2, N, K, T, 0, g, eps, ks, act);        \
  }
MF8_INST(1, , 4, true)
MF8_INST(1, r2, 2, true)
MF8_INST(1, t, 4, false)
MF8_INSTP(1, p, 4, true, true, true)
MF8_INSTP(1, r2p, 2, true, true, true)
MF8_INST(2, , 4, false)
MF8_INST(4, , 4, false)
MF8_INST(8, , 4, false)
MF8_INST(16, , 4, false)
MF8_INST(2, b, 4, true)
MF8_INST(4, b, 4, true)
MF8_INST(8, b, 4, true)
MF8_INST(16, b, 4, true)
MF8_INSTP(2, l, 4, false, false, false)
MF8_INSTP(4, l, 4, false, false, false)
MF8_INSTP(8, l, 4, false, false, false)
MF8_INSTP(16, l, 4, false, false, false)
