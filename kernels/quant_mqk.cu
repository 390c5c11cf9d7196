// Q4_K and Q6_K products with Q8_K activations on the int8 tensor cores
// (included after quant_mma.cu; the product path launches them under
// RIGSCOPE_CUDA_MQK, experimental: gpu/cuda/quant_mqk.go; cuda-check
// -checks quant -parts mqk checks them against float64 and times them beside
// the dp4a kernels).
//
// Why: the dp4a products (mq_body) and mqm (quant_mma.cu) combine every
// 32-weight sub-block in float, per (row, token), because the activation
// has a float scale per 32 (qx): that combination grows with T and is why
// a verify of 5 costs about twice a decode step (bench/cuda/results/s27
// m4). With the activation in Q8_K (one float scale per 256, as the CPU's
// k-quant products and llama.cpp's CPU kernels quantize it), a Q4_K block
// of a row and a token is
//
//   dx * (d * sum_s sc_s * (q_s . x_s) - dmin * sum_s m_s * sum(x_s))
//
// over its 8 sub-blocks s, and both sums are integers: the tensor core
// gives q_s . x_s for 16 rows and 8 tokens in one instruction, sc_s * dot
// is one integer multiply-add, the mins' sum four dp2a, and the float
// work is a handful of instructions per 256 weights instead of per 32.
// Integers are exact, so each (row, token) result depends on neither T
// nor the order of the integer sums: rows are bitwise the same for every
// T, and a block's float is formed as the CPU's dotQ4KGo forms it.

// qk_x quantizes x (T, K) to Q8_K (engine/tensor/cpu kquant.go
// quantizeRowQ8KGo, bitwise): for each 256-block, d = max|x| / 127, q =
// rn(x * (1/d)) (0 where d is 0), and the sums of each 32 and each 16 q.
// With g, x is first rmsnorm(x) * g: the row's sum of squares is summed
// in every block in the same order (each block reads the whole row from
// L2), so no second launch. Grid (K/256, T), block 256: xq (T, K) int8 in
// the order the lanes read it (qk_at), xd (T, K/256) float, xs (T, K/32)
// and xs16 (T, K/16) int16.
__device__ __forceinline__ long qk_at(int nb, int t, int b, int e) {
  // element e of 256-block b of token t: lanes of quad index j read
  // elements 32s + 8j .. 32s + 8j + 7 of every sub-block s as 64
  // consecutive bytes.
  return ((long)t * nb + b) * 256 + ((e >> 3) & 3) * 64 + (e >> 5) * 8 + (e & 7);
}
extern "C" __global__ void __launch_bounds__(256) qk_x(const float* __restrict__ x, int K, int8_t* __restrict__ xq,
                                                       float* __restrict__ xd, short* __restrict__ xs,
                                                       short* __restrict__ xs16, const float* __restrict__ g,
                                                       float eps) {
  pdl_wait();
  const int b = blockIdx.x, t = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nb = K / 256;
  const float* xr = x + (long)t * K;
  float v = xr[256 * b + threadIdx.x];
  __shared__ float red[8];
  if (g) {
    float ss = 0.f;
    for (int k = threadIdx.x; k < K; k += 256) ss = fmaf(xr[k], xr[k], ss);
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (lane == 0) red[warp] = ss;
    __syncthreads();
    ss = 0.f;
#pragma unroll
    for (int i = 0; i < 8; i++) ss += red[i];
    __syncthreads();
    v = __fmul_rn(__fmul_rn(v, rsqrtf(ss / K + eps)), g[256 * b + threadIdx.x]);
  }
  float a = fabsf(v);
  for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  if (lane == 0) red[warp] = a;
  __syncthreads();
  float amax = red[0];
#pragma unroll
  for (int i = 1; i < 8; i++) amax = fmaxf(amax, red[i]);
  const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
  const int q = __float2int_rn(__fmul_rn(v, id));
  xq[qk_at(nb, t, b, threadIdx.x)] = (int8_t)q;
  int s = q;
  for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const long row = (long)t * nb + b;
  if ((lane & 15) == 0) xs16[row * 16 + 2 * warp + (lane >> 4)] = (short)s;
  s += __shfl_xor_sync(0xffffffffu, s, 16);
  if (threadIdx.x == 0) xd[row] = d;
  if (lane == 0) xs[row * 8 + warp] = (short)s;
  pdl_trigger();
}

// mqk_x loads token 8n+g's bytes 8j..8j+7 of every sub-block of
// super-block sb (xv[p]: sub-blocks 2p, 2p+1), zeros past T.
template <int NTL>
__device__ __forceinline__ void mqk_x(uint4 (&xv)[NTL][4], const int8_t* __restrict__ xq, int nsb, int sb, int g, int j,
                                      int T) {
#pragma unroll
  for (int n = 0; n < NTL; n++) {
    const uint4* xp = reinterpret_cast<const uint4*>(xq + ((long)(8 * n + g) * nsb + sb) * 256 + 64 * j);
#pragma unroll
    for (int p = 0; p < 4; p++) xv[n][p] = 8 * n + g < T ? __ldg(xp + p) : make_uint4(0u, 0u, 0u, 0u);
  }
}

// mqk_loop is a Q8_K product's super-block loop: warp s takes super-blocks
// s, s + W, ..., U at a time; load(sb0) issues the loads of those from sb0
// (the first before pdl_wait: weights are never written by a kernel), and
// step(u, sb, xv) adds super-block sb, loaded in slot u, with the
// activation's bytes xv (mqk_x).
template <int W, int NTL, int U, typename Load, typename Step>
__device__ __forceinline__ void mqk_loop(const int8_t* __restrict__ xq, int nsb, int T, Load load, Step step) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, j = lane & 3;
  load(warp);
  pdl_wait();
  for (int sb0 = warp; sb0 < nsb; sb0 += U * W) {
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int sb = sb0 + u * W;
      if (sb >= nsb) break;
      uint4 xv[NTL][4];
      mqk_x<NTL>(xv, xq, nsb, sb, g, j, T);
      step(u, sb, xv);
    }
    if (sb0 + U * W < nsb) load(sb0 + U * W);
  }
  pdl_trigger();
}

// q4k_scale_words unpacks a Q4_K block's 12 scale bytes (header words y,
// z, v: bytes 4..15) to bytes: sc[i] byte s%4 is sub-block 4i + s's 6-bit
// scale, mn[i] its min (ggml's get_scale_min_k4). q4k_msum is the mins'
// integer sum_s m_s * sum(x_s) with bs the activation's 8 sums per 32 of
// the super-block. mqk_body and its one-token twin (quant_mqk1.cu) use both.
__device__ __forceinline__ void q4k_scale_words(unsigned y, unsigned z, unsigned v, unsigned (&sc)[2], unsigned (&mn)[2]) {
  sc[0] = y & 0x3f3f3f3fu;
  mn[0] = z & 0x3f3f3f3fu;
  sc[1] = (v & 0x0f0f0f0fu) | ((y >> 2) & 0x30303030u);
  mn[1] = ((v >> 4) & 0x0f0f0f0fu) | ((z >> 2) & 0x30303030u);
}
__device__ __forceinline__ int q4k_msum(int4 bs, const unsigned (&mn)[2]) {
  int msum = __dp2a_lo(bs.x, (int)mn[0], 0);
  msum = __dp2a_hi(bs.y, (int)mn[0], msum);
  msum = __dp2a_lo(bs.z, (int)mn[1], msum);
  return __dp2a_hi(bs.w, (int)mn[1], msum);
}

// mqk_body: out (T, N) = w (N, K) Q4_K . x, x in Q8_K (qk_x), mode 0
// stores, 1 adds; with NW = 2 the GLU, act(w . x) * (w2 . x). NTL tiles of
// 8 tokens (T <= 8 NTL). The block (W warps) owns 16 rows; warp s takes
// super-blocks s, s + W, ... (U of them loaded before any is used), and
// mq_tile_finish adds the warps' partial sums in warp order (U is 1 or 2).
// Lane l (g = l/4, j = l%4) holds rows g and g+8 of the A operand, token
// g of the B operand, and the sums of rows g, g+8 and tokens 2j, 2j+1
// (mqm_body's layout: k slot 4j+i is element 8j+i of the sub-block,
// 16+4j+i element 8j+4+i, so lane j reads 8 consecutive quant bytes of a
// row and 8 consecutive activation bytes). The high nibbles go in as
// q & 0xf0 = 16 q (no shift), and the low sub-block's scale as 16 sc, so
// isum is 16x the CPU's: shifted back before it is converted.
template <int W, int NTL, int U, int NW>
__device__ __forceinline__ void mqk_body(float* __restrict__ out, int ldo, const int8_t* __restrict__ xq,
                                         const float* __restrict__ xd, const short* __restrict__ xs, const void* w,
                                         const void* w2, int N, int K, int T, int mode, int act) {
  const int lane = threadIdx.x & 31, g = lane >> 2, j = lane & 3;
  const int row0 = blockIdx.x * 16, nsb = K / 256;
  const long rb = (long)nsb * 144;
  const uint8_t* rp[NW][2];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < 2; r++)
      rp[m][r] = static_cast<const uint8_t*>(m ? w2 : w) + (long)min(row0 + g + 8 * r, N - 1) * rb;
  float acc[NW][2][NTL][2];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
      for (int n = 0; n < NTL; n++) acc[m][r][n][0] = acc[m][r][n][1] = 0.f;
  uint4 hd[U][NW][2];     // [u][m][row]: d, dmin and the 12 scale bytes
  uint2 qs[U][NW][2][4];  // [u][m][row][p]: the row's bytes 8j..8j+7 of qs chunk p
  auto load = [&](int sb0) { q4k_tile_load<U, NW, W>(rp, sb0, nsb, j, hd, qs); };
  mqk_loop<W, NTL, U>(xq, nsb, T, load, [&](int u, int sb, const uint4 (&xv)[NTL][4]) {
#pragma unroll
    for (int m = 0; m < NW; m++) {
      unsigned sc[2][2], mn[2][2];  // [row][s/4]: byte s%4 is sub-block s's scale (min)
#pragma unroll
      for (int r = 0; r < 2; r++) {
        q4k_scale_words(hd[u][m][r].y, hd[u][m][r].z, hd[u][m][r].w, sc[r], mn[r]);
      }
      int isum[2][NTL][2];
#pragma unroll
      for (int r = 0; r < 2; r++)
#pragma unroll
        for (int n = 0; n < NTL; n++) isum[r][n][0] = isum[r][n][1] = 0;
#pragma unroll
      for (int p = 0; p < 4; p++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int s = 2 * p + h;
          const unsigned mask = h ? 0xf0f0f0f0u : 0x0f0f0f0fu;
          const unsigned a0 = qs[u][m][0][p].x & mask, a1 = qs[u][m][1][p].x & mask;
          const unsigned a2 = qs[u][m][0][p].y & mask, a3 = qs[u][m][1][p].y & mask;
          int scs[2];
#pragma unroll
          for (int r = 0; r < 2; r++) scs[r] = (int)((sc[r][s >> 2] >> (8 * (s & 3))) & 0xffu) << (h ? 0 : 4);
#pragma unroll
          for (int n = 0; n < NTL; n++) {
            if (n > 0 && 8 * n >= T) continue;
            int c[4] = {0, 0, 0, 0};
            mma_u8s8(c, a0, a1, a2, a3, h ? xv[n][p].z : xv[n][p].x, h ? xv[n][p].w : xv[n][p].y);
#pragma unroll
            for (int r = 0; r < 2; r++) {
              isum[r][n][0] += scs[r] * c[2 * r];
              isum[r][n][1] += scs[r] * c[2 * r + 1];
            }
          }
        }
      }
      float dm[2][2];  // [row]: d, dmin
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&hd[u][m][r].x));
        dm[r][0] = f.x;
        dm[r][1] = f.y;
      }
#pragma unroll
      for (int n = 0; n < NTL; n++)
#pragma unroll
        for (int tt = 0; tt < 2; tt++) {
          const int t = 8 * n + 2 * j + tt;
          if (t >= T) continue;
          const int4 bs = __ldg(reinterpret_cast<const int4*>(xs + ((long)t * nsb + sb) * 8));
          const float dx = __ldg(xd + (long)t * nsb + sb);
#pragma unroll
          for (int r = 0; r < 2; r++) {
            const int msum = q4k_msum(bs, mn[r]);
            const float v =
                __fsub_rn(__fmul_rn(dm[r][0], (float)(isum[r][n][tt] >> 4)), __fmul_rn(dm[r][1], (float)msum));
            acc[m][r][n][tt] = __fadd_rn(acc[m][r][n][tt], __fmul_rn(dx, v));
          }
        }
    }
  });
  mq_tile_finish<NW, W, NTL, false, NW == 2>(out, ldo, acc, row0, N, T, mode, [](int) { return 0.f; }, 0, 0.f, act);
}

// mqk6_load loads super-block bp of a Q6_K row (210 bytes, 2-byte
// aligned) for lane j of the row's 4 lanes (lanes 4g .. 4g + 3): ql bytes
// 32c + 8j .. + 7 (c < 4), qh bytes 128 + 32n + 8j .. (n < 2), the 16
// scales and d (each 8 bytes read from a 2-byte aligned place). The 4
// lanes load the block's aligned 8-byte words once (lane j: words j, j +
// 4, ..., 27 words from bp rounded down to 8), so a row costs 7 loads, not
// 21; a lane's 8 bytes straddle its word and the next, which a width-4
// shuffle brings from lane j + 1 (lane 0's next word for lane 3). The
// last word reads up to 6 bytes past the block: a matrix is followed by
// zero bytes (gpu/cuda quant_layout.go quantPad).
__device__ __forceinline__ void mqk6_load(const uint8_t* bp, int j, uint2 (&ql)[4], uint2 (&qh)[2], uint4& sc,
                                          unsigned short& d) {
  const int off = (int)(reinterpret_cast<uintptr_t>(bp) & 7), sh = 8 * (off & 3);
  const uint2* wp = reinterpret_cast<const uint2*>(bp - off);
  uint2 v[7];  // words j + 4m
#pragma unroll
  for (int m = 0; m < 7; m++) v[m] = m < 6 || j < 3 ? ld8_stream(wp + j + 4 * m) : make_uint2(0u, 0u);
  // the 8 bytes from byte off of word a, then b
  auto cat = [&](uint2 a, uint2 b) {
    const unsigned x0 = off >= 4 ? a.y : a.x, x1 = off >= 4 ? b.x : a.y, x2 = off >= 4 ? b.y : b.x;
    return make_uint2(__funnelshift_r(x0, x1, sh), __funnelshift_r(x1, x2, sh));
  };
  // word 4m + j + 1: lane j + 1's v[m], or lane 0's v[m + 1]
  auto next = [&](int m) {
    const uint2 s = j == 0 ? v[m + 1] : v[m];
    return make_uint2(__shfl_sync(0xffffffffu, s.x, (j + 1) & 3, 4), __shfl_sync(0xffffffffu, s.y, (j + 1) & 3, 4));
  };
#pragma unroll
  for (int c = 0; c < 4; c++) ql[c] = cat(v[c], next(c));
#pragma unroll
  for (int n = 0; n < 2; n++) qh[n] = cat(v[4 + n], next(4 + n));
  // bytes 192 .. 209: words 24, 25, 26 (lanes 0, 1, 2's v[6])
  uint2 w[3];
#pragma unroll
  for (int i = 0; i < 3; i++) w[i] = make_uint2(__shfl_sync(0xffffffffu, v[6].x, i, 4), __shfl_sync(0xffffffffu, v[6].y, i, 4));
  const uint2 lo = cat(w[0], w[1]), hi = cat(w[1], w[2]);
  sc = make_uint4(lo.x, lo.y, hi.x, hi.y);
  d = (unsigned short)((off >= 4 ? w[2].y : w[2].x) >> sh);
}

// sbyte is byte i of w as a signed int.
__device__ __forceinline__ int sbyte(unsigned w, int i) { return (int)(w << (24 - 8 * i)) >> 24; }

// mqk6_body is mqk_body for Q6_K weights (store or add): weight = d *
// sc_g * (q - 32), q 6 bits, sc_g an int8 per 16, so a block of a row and
// a token is dx * d * (sum_g sc_g * (q_g . x_g) - 32 sum_g sc_g * sum(x_g))
// (dotQ6KGo). Sub-block s = 4n + k (half n, quarter k) of 32 weights: the
// low 4 bits are nibble k/2 of ql bytes 64n + 32(k%2) + l, the high 2 bits
// 2k..2k+1 of qh byte 128 + 32n + l. The tensor core sums a whole sub-block
// and its two scale groups are lanes j < 2 and j >= 2 of the layout above,
// so each sub-block takes two mma, each with the other group's lanes'
// weights zeroed.
template <int W, int NTL, int U>
__device__ __forceinline__ void mqk6_body(float* __restrict__ out, int ldo, const int8_t* __restrict__ xq,
                                          const float* __restrict__ xd, const short* __restrict__ xs16, const void* w,
                                          int N, int K, int T, int mode) {
  const int lane = threadIdx.x & 31, g = lane >> 2, j = lane & 3;
  const int row0 = blockIdx.x * 16, nsb = K / 256;
  const long rb = (long)nsb * 210;
  const unsigned g0 = j < 2 ? 0xffffffffu : 0u;  // this lane's weights are scale group 2s (else 2s+1)
  const uint8_t* rp[2];
#pragma unroll
  for (int r = 0; r < 2; r++) rp[r] = static_cast<const uint8_t*>(w) + (long)min(row0 + g + 8 * r, N - 1) * rb;
  float acc[1][2][NTL][2];
#pragma unroll
  for (int r = 0; r < 2; r++)
#pragma unroll
    for (int n = 0; n < NTL; n++) acc[0][r][n][0] = acc[0][r][n][1] = 0.f;
  uint2 ql[U][2][4], qh[U][2][2];  // [u][row][2n + k%2], [u][row][n]: bytes 8j..8j+7 of each chunk
  uint4 sc[U][2];                  // [u][row]: the 16 int8 scales
  unsigned short dh[U][2];         // [u][row]: d
  auto load = [&](int sb0) {
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (sb0 + u * W >= nsb) continue;
#pragma unroll
      for (int r = 0; r < 2; r++) mqk6_load(rp[r] + (long)(sb0 + u * W) * 210, j, ql[u][r], qh[u][r], sc[u][r], dh[u][r]);
    }
  };
  mqk_loop<W, NTL, U>(xq, nsb, T, load, [&](int u, int sb, const uint4 (&xv)[NTL][4]) {
    int isum[2][NTL][2];
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
      for (int n = 0; n < NTL; n++) isum[r][n][0] = isum[r][n][1] = 0;
#pragma unroll
    for (int s = 0; s < 8; s++) {
      const int n6 = s >> 2, k = s & 3;
      unsigned a[2][2];  // [row][word]: q of this lane's 8 weights
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const uint2 l = ql[u][r][2 * n6 + (k & 1)], hh = qh[u][r][n6];
        const int ls = 4 * (k >> 1), hs = 2 * k;
        a[r][0] = ((l.x >> ls) & 0x0f0f0f0fu) | (((hh.x >> hs) & 0x03030303u) << 4);
        a[r][1] = ((l.y >> ls) & 0x0f0f0f0fu) | (((hh.y >> hs) & 0x03030303u) << 4);
      }
      int scg[2][2];  // [row][group]: scales of groups 2s, 2s+1
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const unsigned word = (&sc[u][r].x)[s >> 1];
        scg[r][0] = sbyte(word, 2 * (s & 1));
        scg[r][1] = sbyte(word, 2 * (s & 1) + 1);
      }
#pragma unroll
      for (int n = 0; n < NTL; n++) {
        if (n > 0 && 8 * n >= T) continue;
        const int p = s >> 1, h = s & 1;
        const unsigned b0 = h ? xv[n][p].z : xv[n][p].x, b1 = h ? xv[n][p].w : xv[n][p].y;
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
          const unsigned mk = gi ? ~g0 : g0;
          int c[4] = {0, 0, 0, 0};
          mma_u8s8(c, a[0][0] & mk, a[1][0] & mk, a[0][1] & mk, a[1][1] & mk, b0, b1);
#pragma unroll
          for (int r = 0; r < 2; r++) {
            isum[r][n][0] += scg[r][gi] * c[2 * r];
            isum[r][n][1] += scg[r][gi] * c[2 * r + 1];
          }
        }
      }
    }
#pragma unroll
    for (int n = 0; n < NTL; n++)
#pragma unroll
      for (int tt = 0; tt < 2; tt++) {
        const int t = 8 * n + 2 * j + tt;
        if (t >= T) continue;
        const int4* bp = reinterpret_cast<const int4*>(xs16 + ((long)t * nsb + sb) * 16);
        const int4 b0 = __ldg(bp), b1 = __ldg(bp + 1);
        const float dx = __ldg(xd + (long)t * nsb + sb);
#pragma unroll
        for (int r = 0; r < 2; r++) {
          const uint4 q = sc[u][r];
          int cs = __dp2a_lo(b0.x, (int)q.x, 0);
          cs = __dp2a_hi(b0.y, (int)q.x, cs);
          cs = __dp2a_lo(b0.z, (int)q.y, cs);
          cs = __dp2a_hi(b0.w, (int)q.y, cs);
          cs = __dp2a_lo(b1.x, (int)q.z, cs);
          cs = __dp2a_hi(b1.y, (int)q.z, cs);
          cs = __dp2a_lo(b1.z, (int)q.w, cs);
          cs = __dp2a_hi(b1.w, (int)q.w, cs);
          const float d = __half2float(__ushort_as_half(dh[u][r]));
          const float v = __fmul_rn(d, (float)(isum[r][n][tt] - 32 * cs));
          acc[0][r][n][tt] = __fadd_rn(acc[0][r][n][tt], __fmul_rn(dx, v));
        }
      }
  });
  mq_tile_finish<1, W, NTL, false, false>(out, ldo, acc, row0, N, T, mode, [](int) { return 0.f; }, 0, 0.f, 0);
}

// mqk_q4k_NT_wW_uU, mqk_q6k_NT_wW_uU (NT 8 or 16 tokens, W warps a
// block, U super-blocks a warp loads at a time) store or add; mqkg_q4k_NT_wW
// is the GLU (U = 1). Grid: a block per 16 rows. xs is the sums per 32
// (Q4_K) or per 16 (Q6_K).
#define MQK_INST(NT, W, U)                                                                                   \
  extern "C" __global__ void __launch_bounds__(W * 32) mqk_q4k_##NT##_w##W##_u##U(                            \
      float* out, int ldo, const int8_t* xq, const float* xd, const short* xs, const void* w, int N, int K,      \
      int T, int mode) {                                                                                       \
    mqk_body<W, NT / 8, U, 1>(out, ldo, xq, xd, xs, w, nullptr, N, K, T, mode, 0);                             \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(W * 32) mqk_q6k_##NT##_w##W##_u##U(                            \
      float* out, int ldo, const int8_t* xq, const float* xd, const short* xs, const void* w, int N, int K,      \
      int T, int mode) {                                                                                       \
    mqk6_body<W, NT / 8, U>(out, ldo, xq, xd, xs, w, N, K, T, mode);                                           \
  }
#define MQKG_INST(NT, W)                                                                                     \
  extern "C" __global__ void __launch_bounds__(W * 32) mqkg_q4k_##NT##_w##W(                                  \
      float* out, int ldo, const int8_t* xq, const float* xd, const short* xs, const void* w, const void* w2,   \
      int N, int K, int T, int act) {                                                                          \
    mqk_body<W, NT / 8, 1, 2>(out, ldo, xq, xd, xs, w, w2, N, K, T, 0, act);                                   \
  }
#define MQK_ALL(W) MQK_INST(8, W, 1) MQK_INST(16, W, 1) MQK_INST(8, W, 2) MQK_INST(16, W, 2) MQKG_INST(8, W) MQKG_INST(16, W)
MQK_ALL(4)
MQK_ALL(8)
MQK_ALL(16)
#include "quant_mqk1.cu"
