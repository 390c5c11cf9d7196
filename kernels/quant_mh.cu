// Q4_K products on fp16 tensor cores (Q5_K's too: MhQ5K), then Q6_K's
// (MhQ6K), Q8_0's (MhQ80) and Q4_0's (MhQ40) (included after
// quant_mma.cu, whose loads they share): on the product path with
// RIGSCOPE_CUDA_MH=8|16 (gpu/cuda/quant_mh.go: every T, so verify rows
// stay bitwise decode rows; experimental, off by default); cuda-check
// -checks quant -parts mh checks and times them; TestMHModel,
// TestMH6Model and TestMHG4Model check their fragments and
// scales in exact arithmetic. The int8 kernels of quant_mma.cu pay a
// float combination per (row, token, 32-element sub-block) outside the
// tensor core, about 75 instructions an mma; here the weights are
// dequantized to fp16 in registers, w = q*fp16(d*sc) + fp16(-dmin*m) (one
// rounding, hfma2), and mma.sync m16n8k16 sums them against fp16 x in
// float32 over the whole K range a warp takes, so a product's cost hardly
// depends on T (up to 8 tokens: one n-tile).
//
// x arrives as mh_x writes it: each token's row scaled by a power of two
// (xs[t], so |x/xs| <= 1024 and the scaling is exact) and rounded to fp16,
// each aligned quad of elements stored as (e0, e2, e1, e3). A lane's word
// of 4 quant bytes holds elements e0..e3 of a sub-block (low nibbles; the
// high nibbles: of the next sub-block); masking bytes 0 and 2, then 1 and
// 3, gives the fp16 pairs (e0, e2) and (e1, e3) (1024 + q, the exponent
// trick), which are the A fragment's k slots (2j, 2j+1) and (2j+8, 2j+9);
// the permuted x makes one 8-byte load the matching B fragment. Every
// (row, token) is summed by the tensor core alone and the warps' partial
// sums are added in warp order, so a row's result is bitwise the same for
// every T.
__device__ __forceinline__ void mma_f16(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                        unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned h2u(__half2 h) { return *reinterpret_cast<unsigned*>(&h); }
// bits_f16<M>: (u & M) | 0x64006400 in one LOP3 (C's & then | with two
// immediates compiles to two): the fp16 pair (1024 + v) of the bits M
// selects in halves 0 and 1 (v < 1024).
template <unsigned M>
__device__ __forceinline__ unsigned bits_f16(unsigned u) {
  unsigned v;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(v) : "r"(u), "n"(M), "n"(0x64006400));
  return v;
}
// nib_f16: bytes 0 and 2's low nibbles as the fp16 pair (1024 + q);
// nib_f16<true>: their high nibbles, (1024 + 16q) without a shift.
template <bool HI = false>
__device__ __forceinline__ unsigned nib_f16(unsigned u) {
  return bits_f16<(HI ? 0x00f000f0u : 0x000f000fu)>(u);
}
__device__ __forceinline__ __half2 u2h(unsigned u) { return *reinterpret_cast<__half2*>(&u); }

// mh_x's block: a token's row, an aligned quad of elements (a float4) a
// thread at a time, the first MHX_CACHE quads of each thread held in
// registers (K up to 16384 read once; longer rows read their rest again).
#define MHX_THREADS 1024
#define MHX_CACHE 4

// mh_reduce<MAX>: v summed (MAX: its maximum) over a block of MHX_THREADS,
// in the same order in every block.
template <bool MAX>
__device__ __forceinline__ float mh_reduce(float v) {
  __shared__ float red[MHX_THREADS / 32];
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = MAX ? fmaxf(v, u) : v + u;
  }
  if (lane == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[lane];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = MAX ? fmaxf(v, u) : v + u;
  }
  __syncthreads();  // red is read before a later call writes it
  return v;
}

// mh_x_body: xh (T, K) fp16 and xs (T) of y (T, K) as the fp16 products
// read them (above), y = x, or with NORM rmsnorm(x)*g (cb_prep's formula:
// x * rsqrt(mean(x^2) + eps) * g); with odd16, the elements of odd
// 32-element sub-blocks divided by 16 as well (exact), for the kernels
// that take a high nibble as 16q (mhq*e). Grid: a block of MHX_THREADS
// per token, so a token's row is the same for every T; K a multiple of 4.
// A quad (e0, e1, e2, e3) is stored as the fp16 pairs (e0, e2), (e1, e3):
// one 8-byte store.
template <bool NORM>
__device__ __forceinline__ void mh_x_body(const float* __restrict__ x, __half* __restrict__ xh, float* __restrict__ xs,
                                          int K, int odd16, const float* __restrict__ g, float eps) {
  pdl_wait();
  const int t = blockIdx.x, K4 = K / 4;
  const float4* xr = reinterpret_cast<const float4*>(x + (long)t * K);
  float4 v[MHX_CACHE];
  float r = 1.f;
  if (NORM) {
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < MHX_CACHE; c++) {
      const int k4 = threadIdx.x + c * MHX_THREADS;
      v[c] = k4 < K4 ? xr[k4] : make_float4(0.f, 0.f, 0.f, 0.f);
      ss = fmaf(v[c].x, v[c].x, fmaf(v[c].y, v[c].y, fmaf(v[c].z, v[c].z, fmaf(v[c].w, v[c].w, ss))));
    }
    for (int k4 = threadIdx.x + MHX_CACHE * MHX_THREADS; k4 < K4; k4 += MHX_THREADS) {
      const float4 a = xr[k4];
      ss = fmaf(a.x, a.x, fmaf(a.y, a.y, fmaf(a.z, a.z, fmaf(a.w, a.w, ss))));
    }
    r = rsqrtf(mh_reduce<false>(ss) / K + eps);
  } else {
#pragma unroll
    for (int c = 0; c < MHX_CACHE; c++) {
      const int k4 = threadIdx.x + c * MHX_THREADS;
      v[c] = k4 < K4 ? xr[k4] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  const float4* g4 = reinterpret_cast<const float4*>(g);
  auto y = [&](float4 a, int k4) {  // quad k4 of y
    if (!NORM) return a;
    const float4 w = g4[k4];
    return make_float4(a.x * r * w.x, a.y * r * w.y, a.z * r * w.z, a.w * r * w.w);
  };
  auto amax = [](float m, float4 a) { return fmaxf(fmaxf(m, fmaxf(fabsf(a.x), fabsf(a.y))), fmaxf(fabsf(a.z), fabsf(a.w))); };
  float m = 0.f;
#pragma unroll
  for (int c = 0; c < MHX_CACHE; c++) {
    const int k4 = threadIdx.x + c * MHX_THREADS;
    if (k4 < K4) v[c] = y(v[c], k4);
    m = amax(m, v[c]);  // 0 past the row
  }
  for (int k4 = threadIdx.x + MHX_CACHE * MHX_THREADS; k4 < K4; k4 += MHX_THREADS) m = amax(m, y(xr[k4], k4));
  m = mh_reduce<true>(m);
  pdl_trigger();
  int e = 0;
  frexpf(m, &e);  // m < 2^e (0 for m = 0)
  const float s = m > 0.f ? ldexpf(1.f, e - 10) : 1.f, inv = 1.f / s;  // powers of two: y*inv is exact
  if (threadIdx.x == 0) xs[t] = s;
  uint2* out = reinterpret_cast<uint2*>(xh + (long)t * K);
  auto put = [&](float4 a, int k4) {
    const float f = odd16 && (k4 & 8) ? inv * 0.0625f : inv;  // element 4*k4 in an odd sub-block
    out[k4] = make_uint2(h2u(__floats2half2_rn(a.x * f, a.z * f)), h2u(__floats2half2_rn(a.y * f, a.w * f)));
  };
#pragma unroll
  for (int c = 0; c < MHX_CACHE; c++) {
    const int k4 = threadIdx.x + c * MHX_THREADS;
    if (k4 < K4) put(v[c], k4);
  }
  for (int k4 = threadIdx.x + MHX_CACHE * MHX_THREADS; k4 < K4; k4 += MHX_THREADS) put(y(xr[k4], k4), k4);
}
extern "C" __global__ void __launch_bounds__(MHX_THREADS) mh_x(const float* __restrict__ x, __half* __restrict__ xh,
                                                               float* __restrict__ xs, int K, int odd16) {
  mh_x_body<false>(x, xh, xs, K, odd16, nullptr, 0.f);
}
extern "C" __global__ void __launch_bounds__(MHX_THREADS) mh_xn(const float* __restrict__ x, __half* __restrict__ xh,
                                                                float* __restrict__ xs, int K, int odd16,
                                                                const float* __restrict__ g, float eps) {
  mh_x_body<true>(x, xh, xs, K, odd16, g, eps);
}

// MhTile is what a lane of a warp over a block's 16 rows needs: g =
// lane/4 (its rows row0+g and row0+g+8, clamped to N-1 for the loads;
// token g of the B operand), j = lane%4, the rows' bytes (rb a row) and
// token g's row of xh (tok: g < T; else its B fragment is 0).
struct MhTile {
  int g, j;
  const uint8_t* rp[2];
  const uint2* xr;
  bool tok;
};
__device__ __forceinline__ MhTile mh_tile(const __half* xh, const void* w, int N, int K, int T, long rb) {
  MhTile m;
  const int lane = threadIdx.x & 31, row0 = blockIdx.x * 16;
  m.g = lane >> 2;
  m.j = lane & 3;
#pragma unroll
  for (int r = 0; r < 2; r++) m.rp[r] = static_cast<const uint8_t*>(w) + (long)min(row0 + m.g + 8 * r, N - 1) * rb;
  m.xr = reinterpret_cast<const uint2*>(xh + (long)m.g * K);
  m.tok = m.g < T;
  return m;
}

// mh_finish: the block's 16 rows of out (T, ldo) from the warps' C
// fragments c, added in warp order, times xs[t]: stored (mode 0) or added
// (mode 1); with GLU, warps [0, W/2) summed gate and [W/2, W) up, and out
// is act(gate) * up (act 1: gelu_tanh, 0: SiLU, finish_out's formula).
template <int W, bool GLU>
__device__ __forceinline__ void mh_finish(const float (&c)[4], float* __restrict__ out, int ldo,
                                          const float* __restrict__ xs, int N, int T, int mode, int act) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, j = lane & 3;
  const int row0 = blockIdx.x * 16;
  pdl_trigger();
  __shared__ float red[W][16][8];
  red[warp][g][2 * j] = c[0];
  red[warp][g][2 * j + 1] = c[1];
  red[warp][g + 8][2 * j] = c[2];
  red[warp][g + 8][2 * j + 1] = c[3];
  __syncthreads();
  for (int i = threadIdx.x; i < 16 * 8; i += blockDim.x) {
    const int r = i >> 3, t = i & 7;
    if (t >= T || row0 + r >= N) continue;
    constexpr int NS = GLU ? W / 2 : W;  // the warps of one matrix
    float v = 0.f, u = 0.f;
#pragma unroll
    for (int s = 0; s < NS; s++) v += red[s][r][t];
    v *= xs[t];
    if (GLU) {
#pragma unroll
      for (int s = NS; s < W; s++) u += red[s][r][t];
      u *= xs[t];
      v = act ? gelu_tanh(v) * u : v / (1.f + expf(-v)) * u;
    }
    float* o = out + (long)t * ldo + row0 + r;
    if (mode == 1) *o += v; else *o = v;
  }
}

// MhQ4K<HI16>::acc: c += the lane's C fragment of w's 16 rows (Q4_K) .
// xh^T over super-blocks ws, ws + WS, ... HI16: a high nibble taken as 16q
// (no shift), its sub-block's weights as 16w (-16*dmin*m), against x/16
// (mh_x odd16). MhQ4K<false, true> is Q5_K (MhQ5K): the same head and
// nibbles (at byte 48), each with bit s of qh[l] (l its element in
// sub-block s) as its bit 4 (lane j's 8 qh bytes at 16 + 8j: the same l
// as its quant bytes), a 5-bit q as fp16 1024 + q.
template <bool HI16, bool Q5 = false>
struct MhQ4K {
  static_assert(!(HI16 && Q5), "Q5_K's fifth bit goes to the shifted nibble");
  static constexpr int BB = Q5 ? 176 : 144, QS = Q5 ? 48 : 16;  // a super-block's bytes, its quants' offset
  static __device__ __forceinline__ long rb(int K) { return (long)(K / 256) * BB; }
  template <int WS>
  static __device__ __forceinline__ void acc(float (&c)[4], const MhTile& m, int ws, int K) {
    const int j = m.j, nsb = K / 256;
    const unsigned bias = 0x64006400u;  // fp16 (1024, 1024)
    for (int sb = ws; sb < nsb; sb += WS) {
      uint4 hd[2];
      uint2 q[2][4], qh[2];
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const uint8_t* bp = m.rp[r] + (long)sb * BB;
        hd[r] = ld_stream(bp);
#pragma unroll
        for (int p = 0; p < 4; p++) q[r][p] = ld8_stream(bp + QS + 32 * p + 8 * j);
        if (Q5) qh[r] = ld8_stream(bp + 16 + 8 * j);
      }
#pragma unroll
      for (int p = 0; p < 4; p++) {
        unsigned sc[2][2], mn[2][2];  // [row][h]: fp16x2 (d*sc, d*sc) and (-dmin*m, -dmin*m) of sub-block 2p+h
#pragma unroll
        for (int r = 0; r < 2; r++) {
          // scale_min_pair's bytes: sc and m of sub-blocks 2p, 2p+1 in bytes 0 and 1
          const int sh = 16 * (p & 1);
          const unsigned a = hd[r].y >> sh, b = hd[r].z >> sh, cc = hd[r].w >> sh;
          const unsigned s6 = p < 2 ? a & 0x3f3fu : (cc & 0x0f0fu) | ((a >> 2) & 0x3030u);
          const unsigned m6 = p < 2 ? b & 0x3f3fu : ((cc >> 4) & 0x0f0fu) | ((b >> 2) & 0x3030u);
          // (sc0, sc1) and (m0, m1) as fp16 (1024 + v, less 1024: exact), times d and -dmin: one
          // rounding each, as __float2half_rn(float(d) * sc) rounds
          const __half2 dd = u2h(hd[r].x);
          const __half2 sp = __hmul2(__hsub2(u2h(__byte_perm(s6, 0u, 0x4140) | bias), u2h(bias)), __low2half2(dd));
          __half2 dm2 = __hneg2(__high2half2(dd));  // (-dmin, -dmin), or (-dmin, -16 dmin)
          if (HI16) dm2 = __hmul2(dm2, __floats2half2_rn(1.f, 16.f));
          const __half2 mp = __hmul2(__hsub2(u2h(__byte_perm(m6, 0u, 0x4140) | bias), u2h(bias)), dm2);
          sc[r][0] = h2u(__low2half2(sp));
          sc[r][1] = h2u(__high2half2(sp));
          mn[r][0] = h2u(__low2half2(mp));
          mn[r][1] = h2u(__high2half2(mp));
        }
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
          for (int e = 0; e < 2; e++) {
            const uint2 xb =
                m.tok ? __ldg(m.xr + (32 * (sb * 8 + 2 * p + h) + 8 * j + 4 * e) / 4) : make_uint2(0u, 0u);
            unsigned a[4];
#pragma unroll
            for (int r = 0; r < 2; r++) {
              unsigned u = (e ? q[r][p].y : q[r][p].x) >> (HI16 ? 0 : 4 * h);
              if (Q5) {  // bit s of each qh byte to bit 4 (s = 2p + h, a constant)
                const int s = 2 * p + h;
                const unsigned b = e ? qh[r].y : qh[r].x;
                u = (u & 0x0f0f0f0fu) | ((s <= 4 ? b << (4 - s) : b >> (s - 4)) & 0x10101010u);
              }
              const __half2 lo = __hsub2(
                  u2h(Q5 ? bits_f16<0x001f001fu>(u) : HI16 && h ? nib_f16<true>(u) : nib_f16(u)), u2h(bias));
              const __half2 hi = __hsub2(
                  u2h(Q5 ? bits_f16<0x001f001fu>(u >> 8) : HI16 && h ? nib_f16<true>(u >> 8) : nib_f16(u >> 8)),
                  u2h(bias));
              a[r] = h2u(__hfma2(lo, u2h(sc[r][h]), u2h(mn[r][h])));
              a[2 + r] = h2u(__hfma2(hi, u2h(sc[r][h]), u2h(mn[r][h])));
            }
            mma_f16(c, a[0], a[1], a[2], a[3], xb.x, xb.y);
          }
      }
    }
  }
};

typedef MhQ4K<false, true> MhQ5K;

// MhQ6K::acc: MhQ4K's for Q6_K w (mh_x's plain x). Block: ql[128],
// qh[64], int8 scales[16], f16 d; element 128n + 32c + l (n < 2, c < 4,
// l < 32) is ql[64n + 32(c%2) + l] nibble c/2 with bits 2c, 2c+1 of
// qh[32n + l] as its bits 4, 5, less 32, times d*scales[8n + 2c + l/16].
// The order of k within an mma is free (each weight carries its scale),
// so lane j takes the 16 ql bytes [64n + 16j, +16) and the 16 qh bytes of
// the same l (l in [16(j%2), +16)): quarters j/2 (low nibbles) and 2 + j/2
// (high), one scale each. Both windows lie at the block's offset mod 16
// (210-byte blocks), read as the dp4a kernels read them (win, extract). A
// word's bytes 0 and 2, then 1 and 3, are the fp16 pairs (1024 + v), less
// 1056: q exactly; w = q * fp16(d*sc) (hmul2).
struct MhQ6K {
  static __device__ __forceinline__ long rb(int K) { return (long)(K / 256) * 210; }
  template <int WS>
  static __device__ __forceinline__ void acc(float (&c)[4], const MhTile& m, int ws, int K) {
    const int j = m.j, nsb = K / 256, cl = j >> 1, l0 = 16 * (j & 1);
    const unsigned b1056 = 0x64206420u;  // fp16 (1056, 1056)
    for (int sb = ws; sb < nsb; sb += WS) {
      unsigned ql[2][2][4], qh[2][2][4];  // [row][n][word]
      __half2 S[2][2][2];                 // [row][n][h]: (d*sc, d*sc) of quarter cl (h 0) and 2 + cl (h 1)
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const uint8_t* bp = m.rp[r] + (long)sb * 210;
        const int off = reinterpret_cast<uintptr_t>(bp) & 15;
        const __half d = __ushort_as_half(__ldg(reinterpret_cast<const unsigned short*>(bp + 208)));
#pragma unroll
        for (int n = 0; n < 2; n++) {
          unsigned wl[8], wh[8];
          win<2>(bp + 64 * n + 16 * j, wl);
          win<2>(bp + 128 + 32 * n + l0, wh);
          extract(wl, off, ql[r][n]);
          extract(wh, off, qh[r][n]);
          const int8_t* sc = reinterpret_cast<const int8_t*>(bp + 192 + 8 * n + 2 * cl + (j & 1));
#pragma unroll
          for (int h = 0; h < 2; h++) S[r][n][h] = __half2half2(__hmul(d, __int2half_rn(__ldg(sc + 4 * h))));
        }
      }
#pragma unroll
      for (int n = 0; n < 2; n++)
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int qc = h ? 2 + cl : cl;  // the quarter
            const uint2 xb =
                m.tok ? __ldg(m.xr + (256 * sb + 128 * n + 32 * qc + l0 + 4 * e) / 4) : make_uint2(0u, 0u);
            unsigned a[4];
#pragma unroll
            for (int r = 0; r < 2; r++) {
              // bits 2qc, 2qc+1 of each qh byte to bits 4, 5: left by 4 - 2cl (h 0), right by 2cl (h 1)
              const unsigned v = h ? ((ql[r][n][e] >> 4) & 0x0f0f0f0fu) | ((qh[r][n][e] >> (2 * cl)) & 0x30303030u)
                                   : (ql[r][n][e] & 0x0f0f0f0fu) | ((qh[r][n][e] << (4 - 2 * cl)) & 0x30303030u);
              const __half2 lo = __hsub2(u2h(bits_f16<0x003f003fu>(v)), u2h(b1056));
              const __half2 hi = __hsub2(u2h(bits_f16<0x003f003fu>(v >> 8)), u2h(b1056));
              a[r] = h2u(__hmul2(lo, S[r][n][h]));
              a[2 + r] = h2u(__hmul2(hi, S[r][n][h]));
            }
            mma_f16(c, a[0], a[1], a[2], a[3], xb.x, xb.y);
          }
    }
  }
};

// MhG4<Q8>::acc: MhQ4K's for Q8_0 (MhQ80) or Q4_0 w (MhQ40) (mh_x's
// plain x; K a multiple of 128). A block is f16 d, then Q8_0's int8
// qs[32] (w = d*q) or Q4_0's qs[16] (element i < 16 is qs[i]'s low nibble,
// 16 + i its high one; w = d*(q - 8)). The order of k within an mma is
// free (each weight carries its scale), so in each group of 4 blocks of a
// row lane j takes block j whole, through a 16-byte window (34- and
// 18-byte blocks: any even offset), and mma i (i < 8) its elements
// 4i..4i+3: Q8_0's word i, Q4_0's word i%4, its low nibbles for i < 4,
// else its high ones. A word's bytes 0 and 2, then 1 and 3, become the
// fp16 pairs 1024 + v: Q8_0's v = q + 128 (the sign bit flipped, 0x64 as
// the high byte), less 1152; Q4_0's v = q (nib_f16), less 1032; both
// exact; w = that times d (hmul2: one rounding).
template <bool Q8>
struct MhG4 {
  static constexpr int BB = Q8 ? 34 : 18, NQ = Q8 ? 8 : 4;  // a block's bytes, its quant words
  static __device__ __forceinline__ long rb(int K) { return (long)(K / 32) * BB; }
  template <int WS>
  static __device__ __forceinline__ void acc(float (&c)[4], const MhTile& m, int ws, int K) {
    const int j = m.j, ngr = K / 128;
    const unsigned bias = Q8 ? 0x64806480u : 0x64086408u;  // fp16 (1152, 1152), (1032, 1032)
    for (int gr = ws; gr < ngr; gr += WS) {
      unsigned q[2][NQ];  // [row]: the quants of block 4gr + j
      __half2 dd[2];
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const uint8_t* bp = m.rp[r] + (long)(4 * gr + j) * BB;
        unsigned wq[4 * (NQ / 4 + 1)];
        win<NQ / 4 + 1>(bp + 2, wq);
        extract(wq, int(reinterpret_cast<uintptr_t>(bp + 2) & 15), q[r]);
        dd[r] = __half2half2(__ushort_as_half(__ldg(reinterpret_cast<const unsigned short*>(bp))));
      }
#pragma unroll
      for (int i = 0; i < 8; i++) {
        const uint2 xb = m.tok ? __ldg(m.xr + (128 * gr + 32 * j + 4 * i) / 4) : make_uint2(0u, 0u);
        unsigned a[4];
#pragma unroll
        for (int r = 0; r < 2; r++) {
          const unsigned w = q[r][i % NQ], u = Q8 ? w ^ 0x80808080u : w >> (4 * (i / 4));
          const unsigned l = Q8 ? __byte_perm(u, 0x64646464u, 0x4240) : nib_f16(u);
          const unsigned h = Q8 ? __byte_perm(u, 0x64646464u, 0x4341) : nib_f16(u >> 8);
          a[r] = h2u(__hmul2(__hsub2(u2h(l), u2h(bias)), dd[r]));
          a[2 + r] = h2u(__hmul2(__hsub2(u2h(h), u2h(bias)), dd[r]));
        }
        mma_f16(c, a[0], a[1], a[2], a[3], xb.x, xb.y);
      }
    }
  }
};
typedef MhG4<true> MhQ80;
typedef MhG4<false> MhQ40;

// mhq: out (T, ldo) [+]= xs[t] * (xh . w^T) (mode 0 store, 1 add) for w
// (N, K) of Q's type, T <= 8: a block of W warps per 16 rows, warp s
// taking units s, s + W, ...
template <int W, class Q>
__device__ __forceinline__ void mhq(float* out, int ldo, const __half* xh, const float* xs, const void* w, int N, int K,
                                    int T, int mode) {
  const MhTile m = mh_tile(xh, w, N, K, T, Q::rb(K));
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  pdl_wait();
  Q::template acc<W>(c, m, threadIdx.x >> 5, K);
  mh_finish<W, false>(c, out, ldo, xs, N, T, mode, 0);
}

// mhg: the GLU, out (T, ldo) = act(xs[t] * (xh . wg^T)) * xs[t] * (xh .
// wu^T) for gate and up (N, K) of Q's type, T <= 8: warps [0, W/2) of a
// block take gate's 16 rows, [W/2, W) up's (each over every unit, in
// steps of W/2).
template <int W, class Q>
__device__ __forceinline__ void mhg(float* out, int ldo, const __half* xh, const float* xs, const void* wg,
                                    const void* wu, int N, int K, int T, int act) {
  const int warp = threadIdx.x >> 5;
  const MhTile m = mh_tile(xh, warp < W / 2 ? wg : wu, N, K, T, Q::rb(K));
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  pdl_wait();
  Q::template acc<W / 2>(c, m, warp % (W / 2), K);
  mh_finish<W, true>(c, out, ldo, xs, N, T, 0, act);
}

// mhq_TYPE_wW[SUF] (grid: a block per 16 rows); mhq_q4k_wWe: the HI16
// Q4_K. MHG_KERNEL adds mhg_TYPE_wW, the GLU.
#define MH_KERNEL(TYPE, W, SUF, Q)                                                                               \
  extern "C" __global__ void __launch_bounds__(W * 32) mhq_##TYPE##_w##W##SUF(                                   \
      float* out, int ldo, const __half* xh, const float* xs, const void* w, int N, int K, int T, int mode) {     \
    mhq<W, Q>(out, ldo, xh, xs, w, N, K, T, mode);                                                               \
  }
#define MHG_KERNEL(TYPE, W, Q)                                                                                   \
  MH_KERNEL(TYPE, W, , Q)                                                                                        \
  extern "C" __global__ void __launch_bounds__(W * 32)                                                           \
      mhg_##TYPE##_w##W(float* out, int ldo, const __half* xh, const float* xs, const void* wg, const void* wu,  \
                        int N, int K, int T, int act) {                                                          \
    mhg<W, Q>(out, ldo, xh, xs, wg, wu, N, K, T, act);                                                           \
  }
MH_KERNEL(q4k, 4, , MhQ4K<false>)
MH_KERNEL(q4k, 4, e, MhQ4K<true>)
MH_KERNEL(q4k, 8, e, MhQ4K<true>)
MH_KERNEL(q4k, 16, e, MhQ4K<true>)
MHG_KERNEL(q4k, 8, MhQ4K<false>)
MHG_KERNEL(q4k, 16, MhQ4K<false>)
MHG_KERNEL(q6k, 8, MhQ6K)
MHG_KERNEL(q6k, 16, MhQ6K)
MHG_KERNEL(q80, 8, MhQ80)
MHG_KERNEL(q80, 16, MhQ80)
MHG_KERNEL(q40, 8, MhQ40)
MHG_KERNEL(q40, 16, MhQ40)
MHG_KERNEL(q5k, 8, MhQ5K)
MHG_KERNEL(q5k, 16, MhQ5K)
