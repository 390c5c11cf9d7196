// Experimental: a Q4_K product on int8 tensor cores (included after
// quant.cu; cuda-check -checks quant -parts mma times it beside mq_q4k; no
// step launches it yet). The dp4a products (mq_body) pay about one
// integer instruction per 4 weights per token, so verify's cost grows
// with T; mma.sync m16n8k32 (u8 weights . s8 activation, int32 sums)
// takes 16 rows x 8 tokens x 32 weights in one warp instruction.
//
// A warp owns 16 rows (lane l: g = l/4 its rows g and g+8 and token g of
// the B operand, j = l%4), and every MQM_WARPS-th super-block of them.
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
// bitwise the same for every T (but not the dp4a kernel's).
#define MQM_WARPS 4

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

extern "C" __global__ void __launch_bounds__(MQM_WARPS * 32) mqm_q4k(float* __restrict__ out, int ldo,
                                                                    const int8_t* __restrict__ xq,
                                                                    const float2* __restrict__ xm, const void* w,
                                                                    int N, int K, int T, int mode) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, j = lane & 3;
  const int row0 = blockIdx.x * 16;
  const long rb = (long)(K / 256) * 144;
  const uint8_t* rp[2];
  rp[0] = static_cast<const uint8_t*>(w) + (long)min(row0 + g, N - 1) * rb;
  rp[1] = static_cast<const uint8_t*>(w) + (long)min(row0 + g + 8, N - 1) * rb;
  const int G = K / 16, nsb = K / 256;
  const int t0 = 2 * j, t1 = 2 * j + 1;  // this lane's C tokens
  float acc[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
  pdl_wait();
  for (int sb = warp; sb < nsb; sb += MQM_WARPS) {
    uint4 hd[2];
    uint2 q[2][4];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const uint8_t* bp = rp[r] + (long)sb * 144;
      hd[r] = ld_stream(bp);
#pragma unroll
      for (int p = 0; p < 4; p++) q[r][p] = ld8_stream(bp + 16 + 32 * p + 8 * j);
    }
    float2 dm[2];
#pragma unroll
    for (int r = 0; r < 2; r++) dm[r] = __half22float2(*reinterpret_cast<const __half2*>(&hd[r].x));
#pragma unroll
    for (int p = 0; p < 4; p++) {
      float sc[2][2], mn[2][2];  // [row][sub-block 2p, 2p+1]
#pragma unroll
      for (int r = 0; r < 2; r++) scale_min_pair(p, hd[r].y, hd[r].z, hd[r].w, sc[r][0], sc[r][1], mn[r][0], mn[r][1]);
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int b = sb * 8 + 2 * p + h;  // the activation's 32-block
        uint2 xv = make_uint2(0u, 0u);
        if (g < T) xv = __ldg(reinterpret_cast<const uint2*>(xq + (long)g * K + 32 * b + 8 * j));
        const unsigned s = 4 * h;
        int c[4] = {0x4B400000, 0x4B400000, 0x4B400000, 0x4B400000};
        mma_u8s8(c, (q[0][p].x >> s) & 0x0f0f0f0fu, (q[1][p].x >> s) & 0x0f0f0f0fu, (q[0][p].y >> s) & 0x0f0f0f0fu,
                 (q[1][p].y >> s) & 0x0f0f0f0fu, xv.x, xv.y);
#pragma unroll
        for (int tt = 0; tt < 2; tt++) {
          const int t = tt ? t1 : t0;
          if (t < T) {
            const float4 mm = __ldg(reinterpret_cast<const float4*>(xm + (long)t * G + 2 * b));
            const float sum = mm.y + mm.w;
#pragma unroll
            for (int r = 0; r < 2; r++) {
              float a = acc[r][tt];
              a = fmaf(i2f_biased(c[2 * r + tt]), __fmul_rn(dm[r].x * sc[r][h], mm.x), a);
              a = fmaf(-(dm[r].y * mn[r][h]), sum, a);
              acc[r][tt] = a;
            }
          }
        }
      }
    }
  }
  pdl_trigger();
  __shared__ float red[MQM_WARPS][16][8];
#pragma unroll
  for (int r = 0; r < 2; r++)
#pragma unroll
    for (int tt = 0; tt < 2; tt++) red[warp][g + 8 * r][2 * j + tt] = acc[r][tt];
  __syncthreads();
  for (int i = threadIdx.x; i < 16 * 8; i += blockDim.x) {
    const int r = i >> 3, t = i & 7;
    if (t >= T || row0 + r >= N) continue;
    float v = red[0][r][t];
#pragma unroll
    for (int q = 1; q < MQM_WARPS; q++) v += red[q][r][t];
    float* o = out + (long)t * ldo + row0 + r;
    *o = mode == 1 ? *o + v : v;
  }
}
