// Q4_K products on int8 tensor cores (included after quant.cu; gpu/cuda
// launches them for Q4_K matrices with RIGSCOPE_CUDA_MQM=1|8|16,
// experimental, off by default; cuda-check -checks quant -parts mma checks
// and times them). Measured on the H200 (bench/cuda/results/s22/c1): flat
// in T, but twice the dp4a kernels' time at T=1, whatever the block size:
// the float combination per (row, token, sub-block) below costs about 75
// instructions an mma. The fp16 products (quant_mh.cu) move it
// into the tensor core. The dp4a products (mq_body) pay about one integer instruction per
// 4 weights per token, so verify's cost grows with T; mma.sync m16n8k32
// (u8 weights . s8 activation, int32 sums) takes 16 rows x 8 tokens x 32
// weights in one warp instruction.
//
// A warp owns 16 rows (lane l: g = l/4 its rows g and g+8 and token g of
// the B operand, j = l%4), and every W-th super-block of them (W warps a
// block: 4, 8 or 16, the knob's choice); it issues the loads of U
// super-blocks (U = 2 for the plain products of 8 warps or fewer, else 1)
// before it combines any.
// Within a 32-element sub-block (one scale, one min, one activation dx)
// the order of k is free (the integer dot is exact): k slot 4j+i is
// element 8j+i, slot 16+4j+i element 8j+4+i, so lane j reads 8
// consecutive quant bytes of each row (the low nibbles: sub-block 2p,
// the high: 2p+1) and 8 consecutive activation bytes: one 8-byte load
// each. The C fragment (rows g, g+8; tokens 2j, 2j+1) is combined per
// sub-block in float as mq_body does per group,
//   acc += i2f(dot) * (d*sc*dx) - dmin*m * (dx * sum q),
// each (row, token) by one lane in super-block order, whatever T is, and
// the warps' partial sums are added in warp order: a row's result is
// bitwise the same for every T (but not the dp4a kernels', so a step uses
// one family for every T: the knob is per process).

__device__ __forceinline__ void mma_u8s8(int (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint2 ld8_stream(const void* p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

// q4k_tile_load loads super-blocks sb0 + u*W (u < U; none past nsb) of a
// lane's Q4_K rows rp[m][r] (144 bytes a super-block) as the tensor-core
// lane layout reads them: hd the d, dmin and 12 scale bytes, qs the bytes
// 8j..8j+7 of each 32-byte qs chunk p (lane j of a quad). mqm_body and
// mqk_body load with it.
template <int U, int NW, int W>
__device__ __forceinline__ void q4k_tile_load(const uint8_t* (&rp)[NW][2], int sb0, int nsb, int j, uint4 (&hd)[U][NW][2],
                                              uint2 (&qs)[U][NW][2][4]) {
#pragma unroll
  for (int u = 0; u < U; u++) {
    if (sb0 + u * W >= nsb) continue;
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const uint8_t* bp = rp[m][r] + (long)(sb0 + u * W) * 144;
        hd[u][m][r] = ld_stream(bp);
#pragma unroll
        for (int p = 0; p < 4; p++) qs[u][m][r][p] = ld8_stream(bp + 16 + 32 * p + 8 * j);
      }
  }
}

// mq_red_finish stores out (T, ldo) for a block's 16 rows from the warps'
// partial sums red[warp][m][row][t], added in warp order by finish_out
// (mode 1 adds; GLU: act(gate) * up; NORM: with token t's sum of squares
// ss(t), summed by warp 0).
template <int NW, int W, int NTC, bool NORM, bool GLU, typename SS>
__device__ __forceinline__ void mq_red_finish(float* __restrict__ out, int ldo, const float (&red)[W][NW][16][NTC],
                                              int row0, int N, int T, int mode, SS ss, int K, float eps, int act) {
  for (int i = threadIdx.x; i < 16 * NTC; i += blockDim.x) {
    const int r = i / NTC, t = i % NTC;
    if (t >= T || row0 + r >= N) continue;
    finish_out<NW, W, NORM, GLU>(
        out + (long)t * ldo + row0 + r, mode, [&](int q, int m) { return red[q][m][r][t]; },
        [&](int q) { return q == 0 ? ss(t) : 0.f; }, K, eps, act);
  }
}

// mq_tile_finish is mq_red_finish from the tensor-core fragments acc
// (lane: rows g, g+8, tokens 2j, 2j+1 of each 8-token tile). mqm_body and
// the Q8_K products (quant_mqk.cu) end with it.
template <int NW, int W, int NTL, bool NORM, bool GLU, typename SS>
__device__ __forceinline__ void mq_tile_finish(float* __restrict__ out, int ldo, const float (&acc)[NW][2][NTL][2],
                                               int row0, int N, int T, int mode, SS ss, int K, float eps, int act) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, j = lane & 3;
  __shared__ float red[W][NW][16][8 * NTL];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
      for (int n = 0; n < NTL; n++)
#pragma unroll
        for (int tt = 0; tt < 2; tt++) red[warp][m][g + 8 * r][8 * n + 2 * j + tt] = acc[m][r][n][tt];
  __syncthreads();
  mq_red_finish<NW, W, 8 * NTL, NORM, GLU>(out, ldo, red, row0, N, T, mode, ss, K, eps, act);
}

// mqm_body: mq_body's products (mode, GLU, NORM, act, the fused output
// quantization qo) for Q4_K weights on the tensor cores, NTL tiles of 8
// tokens (T <= 8 NTL). The block (W warps) owns 16 rows; warp s takes
// super-blocks s, s + W, ...; the fused norm's sums of squares come from
// qx's ssp as mq_sumsq adds them (warp t%W for token t), and finish_out
// adds the warps' partial sums in warp order.
template <int W, int NTL, bool GLU, bool NORM>
__device__ __forceinline__ void mqm_body(float* __restrict__ out, int ldo, const int8_t* __restrict__ xq,
                                         const float2* __restrict__ xm, const float* __restrict__ ssp, const void* w,
                                         const void* w2, int N, int K, int T, int mode, float eps, int act, int8_t* qo,
                                         const float* qg, unsigned* qcnt) {
  constexpr int NW = GLU ? 2 : 1, U = (!GLU && W <= 8) ? 2 : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, j = lane & 3;
  const int row0 = blockIdx.x * 16;
  const long rb = (long)(K / 256) * 144;
  const uint8_t* rp[NW][2];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < 2; r++)
      rp[m][r] = static_cast<const uint8_t*>(m ? w2 : w) + (long)min(row0 + g + 8 * r, N - 1) * rb;
  const int G = K / 16, nsb = K / 256, units = K / 32;
  // Before pdl_wait: the warp's super-blocks into L2 (lane j touches
  // bytes 48j, j < 3, and 143 of each block of its rows).
  if (l2_prefetch) {
    for (int sb = warp; sb < nsb; sb += W)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < 2; r++) prefetch_l2(rp[m][r] + (long)sb * 144 + (j < 3 ? 48 * j : 143));
  }
  float acc[NW][2][NTL][2];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
      for (int n = 0; n < NTL; n++) acc[m][r][n][0] = acc[m][r][n][1] = 0.f;
  pdl_wait();
  __shared__ float ssum[8 * NTL];
  if (NORM)
    for (int t = warp; t < T; t += W) {
      float v[1] = {0.f};
      mq_sumsq<1>(v, ssp + (long)t * units, units, 1, lane);
      if (lane == 0) ssum[t] = v[0];
    }
  for (int sb0 = warp; sb0 < nsb; sb0 += U * W) {
    uint4 hdu[U][NW][2];
    uint2 qu[U][NW][2][4];
    q4k_tile_load<U, NW, W>(rp, sb0, nsb, j, hdu, qu);
#pragma unroll
    for (int u = 0; u < U; u++) {
    const int sb = sb0 + u * W;
    if (sb >= nsb) break;
    const auto& hd = hdu[u];
    const auto& q = qu[u];
#pragma unroll
    for (int p = 0; p < 4; p++) {
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int b = sb * 8 + 2 * p + h;  // the activation's 32-block
        uint2 xv[NTL];
#pragma unroll
        for (int n = 0; n < NTL; n++) {
          xv[n] = make_uint2(0u, 0u);
          if (8 * n + g < T) xv[n] = __ldg(reinterpret_cast<const uint2*>(xq + (long)(8 * n + g) * K + 32 * b + 8 * j));
        }
        float4 mm[NTL][2];
#pragma unroll
        for (int n = 0; n < NTL; n++)
#pragma unroll
          for (int tt = 0; tt < 2; tt++) {
            const int t = 8 * n + 2 * j + tt;
            mm[n][tt] = t < T ? __ldg(reinterpret_cast<const float4*>(xm + (long)t * G + 2 * b)) : make_float4(0.f, 0.f, 0.f, 0.f);
          }
        const unsigned s = 4 * h;
#pragma unroll
        for (int m = 0; m < NW; m++) {
          float a[2], bm[2];  // [row]: d*sc and dmin*m of sub-block 2p+h
#pragma unroll
          for (int r = 0; r < 2; r++) {
            const float2 dm = __half22float2(*reinterpret_cast<const __half2*>(&hd[m][r].x));
            float sc0, sc1, m0, m1;
            scale_min_pair(p, hd[m][r].y, hd[m][r].z, hd[m][r].w, sc0, sc1, m0, m1);
            a[r] = dm.x * (h ? sc1 : sc0);
            bm[r] = dm.y * (h ? m1 : m0);
          }
          const unsigned a0 = (q[m][0][p].x >> s) & 0x0f0f0f0fu, a1 = (q[m][1][p].x >> s) & 0x0f0f0f0fu;
          const unsigned a2 = (q[m][0][p].y >> s) & 0x0f0f0f0fu, a3 = (q[m][1][p].y >> s) & 0x0f0f0f0fu;
#pragma unroll
          for (int n = 0; n < NTL; n++) {
            if (8 * n >= T) continue;
            int c[4] = {0x4B400000, 0x4B400000, 0x4B400000, 0x4B400000};
            mma_u8s8(c, a0, a1, a2, a3, xv[n].x, xv[n].y);
#pragma unroll
            for (int tt = 0; tt < 2; tt++) {
              if (8 * n + 2 * j + tt >= T) continue;
              const float4 x4 = mm[n][tt];
              const float sum = x4.y + x4.w;
#pragma unroll
              for (int r = 0; r < 2; r++) {
                float v = acc[m][r][n][tt];
                v = fmaf(i2f_biased(c[2 * r + tt]), __fmul_rn(a[r], x4.x), v);
                v = fmaf(-bm[r], sum, v);
                acc[m][r][n][tt] = v;
              }
            }
          }
        }
      }
    }
    }
  }
  pdl_trigger();
  mq_tile_finish<NW, W, NTL, NORM, GLU>(out, ldo, acc, row0, N, T, mode, [&](int t) { return ssum[t]; }, K, eps, act);
  if (qo) mq_quant_out(out, ldo, qo, qg, qcnt, N, T, 16);
}

// mqm_q4k_NT_wW, mqmn_q4k_NT_wW, mqmg_q4k_NT_wW (NT 8 or 16 tokens, W warps
// a block): mq_q4k_*, mqn_q4k_*, mqg_q4k_* on the tensor cores, with
// their arguments (ks is not used; grid: a block per 16 rows).
#define MQM_INST(NT, W)                                                                                          \
  extern "C" __global__ void __launch_bounds__(W * 32) mqm_q4k_##NT##_w##W(                                      \
      float* out, int ldo, const int8_t* xq, const float2* xm, const void* w, int N, int K, int T, int mode,       \
      int ks, int8_t* qo, const float* qg, unsigned* qcnt) {                                                     \
    mqm_body<W, NT / 8, false, false>(out, ldo, xq, xm, 0, w, 0, N, K, T, mode, 0.f, 0, qo, qg, qcnt);           \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(W * 32) mqmn_q4k_##NT##_w##W(                                     \
      float* out, int ldo, const int8_t* xq, const float2* xm, const float* ssp, const void* w, int N, int K,      \
      int T, float eps, int ks) {                                                                                \
    mqm_body<W, NT / 8, false, true>(out, ldo, xq, xm, ssp, w, 0, N, K, T, 0, eps, 0, nullptr, nullptr, nullptr); \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(W * 32) mqmg_q4k_##NT##_w##W(                                     \
      float* out, int ldo, const int8_t* xq, const float2* xm, const float* ssp, const void* w, const void* w2,    \
      int N, int K, int T, float eps, int ks, int act, int8_t* qo, const float* qg, unsigned* qcnt) {              \
    mqm_body<W, NT / 8, true, true>(out, ldo, xq, xm, ssp, w, w2, N, K, T, 0, eps, act, qo, qg, qcnt);           \
  }
MQM_INST(8, 4)
MQM_INST(16, 4)
MQM_INST(8, 8)
MQM_INST(16, 8)
MQM_INST(8, 16)
MQM_INST(16, 16)

