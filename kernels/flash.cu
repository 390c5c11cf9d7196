// rigscope CUDA kernels: tensor-core attention for the prefill path's
// bf16 mode (included by kernels.cu after gemm.cu; gpu/cuda/prefill.go,
// mode "bf16fa"). Experimental: the default modes use pf_attn (float32).
//
// pf_fa: pf_attn's job (causal GQA attention of a chunk's T queries
// against cache slots [0, base+t], the new slots already stored by pf_kv)
// with q, k, p and v rounded to bf16 and the products on the tensor cores
// (mma.sync m16n8k16, float32 accumulators), flash-attention style: grid
// (ceil(G*T/64), hk), block 128. Block (x, h) serves KV head h's query rows
// r = t*G + g in [64rg, +64), rg = gridDim.x-1-x (the rows that see the
// most slots first); warp w owns rows [16w, +16) of them. The rows' rotated
// q go to shared memory as bf16 and into registers as A fragments
// (ldmatrix); per tile of 64 slots the block converts K and V from the
// float32 cache into shared memory (bf16, 16-byte chunks of a row
// swizzled by row%8), each warp computes S = q.k^T (B fragments by
// ldmatrix), masks and rescales it (online softmax, a row's 4 lanes
// exchange maxima and sums by shuffles), packs p into A fragments in
// registers and adds p.v (B fragments by ldmatrix.trans) into its O
// accumulators. out: oh (T, hq*HD) bf16 (the bf16 mode's wo input).
// Dynamic shared memory 3 * 64 * HD * 2 bytes.
__device__ __forceinline__ void ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ unsigned pack_bf16(float a, float b) { return bf16x2_bits(__floats2bfloat162_rn(a, b)); }
// kv_ld4b is 4 consecutive cache elements as bf16 (2 per word).
__device__ __forceinline__ uint2 kv_ld4b(const float* p) {
  const float4 f = *reinterpret_cast<const float4*>(p);
  return make_uint2(pack_bf16(f.x, f.y), pack_bf16(f.z, f.w));
}
__device__ __forceinline__ uint2 kv_ld4b(const __nv_bfloat16* p) { return *reinterpret_cast<const uint2*>(p); }

template <int HD, typename KT>
__device__ __forceinline__ void pf_fa_body(__nv_bfloat16* oh, const float* qkv, int ldq, const KT* Kc,
                                           const KT* Vc, const int* pos, int base, int T,
                                           const float* __restrict__ cs, const float* __restrict__ sn, int hq, int hk,
                                           float scale, int interleaved) {
  constexpr int HALF = HD / 2, KD = HD / 16, DN = HD / 8;  // a row: HD/8 16-byte chunks (at least 8)
  extern __shared__ __align__(128) unsigned char fa_smem[];
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(fa_smem);  // [64][HD]
  __nv_bfloat16* ks = qs + 64 * HD;                                // [64][HD]
  __nv_bfloat16* vs = ks + 64 * HD;                                // [64][HD]
  const unsigned sq = smem_u32(qs), sk = smem_u32(ks), sv = smem_u32(vs);
  // element (row, d) of a [64][HD] bf16 tile: chunk d/8 swizzled by row%8
  auto at = [](int row, int d) { return row * HD + (((d >> 3) ^ (row & 7)) << 3) + (d & 7); };  // CH >= 8
  const int h = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, grp = lane >> 2, tig = lane & 3;
  const int G = hq / hk, R = G * T, r0 = (gridDim.x - 1 - blockIdx.x) * 64, rn = min(64, R - r0);
  const int width = hk * HD;
  pdl_wait();
  for (int i = tid; i < 64 * HALF; i += blockDim.x) {  // RoPE of the block's query rows, as bf16 (rows past R: 0)
    const int rl = i / HALF, j = i % HALF, r = r0 + rl;
    const int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
    float qa = 0.f, qb = 0.f;
    if (rl < rn) {
      const int t = r / G;
      const float* x = qkv + (long)t * ldq + (h * G + r % G) * HD;
      const int p = pos[t];
      const float c = cs[(long)p * HALF + j], s = sn[(long)p * HALF + j];
      const float xa = x[a], xb = x[b];
      qa = xa * c - xb * s;
      qb = xa * s + xb * c;
    }
    qs[at(rl, a)] = __float2bfloat16_rn(qa);
    qs[at(rl, b)] = __float2bfloat16_rn(qb);
  }
  __syncthreads();
  uint4 qf[KD];  // the warp's 16 rows as A fragments, k = d
#pragma unroll
  for (int kd = 0; kd < KD; kd++) {
    const int q = lane >> 3, row = 16 * warp + (q & 1) * 8 + (lane & 7), d = 16 * kd + (q >> 1) * 8;
    ldsm_x4(sq + 2 * at(row, d), qf[kd].x, qf[kd].y, qf[kd].z, qf[kd].w);
  }
  // this lane's rows: 16w + grp (+8); the last slot each sees
  const int ra = r0 + 16 * warp + grp, rb = ra + 8;
  const int va = base + min(ra, R - 1) / G, vb = base + min(rb, R - 1) / G;
  const int wmax = base + min(r0 + 16 * warp + 15, R - 1) / G;  // the warp's last visible slot
  const int hiSlot = base + (r0 + rn - 1) / G + 1;
  float o[DN][4];
#pragma unroll
  for (int dn = 0; dn < DN; dn++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[dn][e] = 0.f;
  float ma = -INFINITY, mb = -INFINITY, la = 0.f, lb = 0.f;
  for (int j0 = 0; j0 < hiSlot; j0 += 64) {
    __syncthreads();  // the previous tile's reads are done
    for (int f = tid; f < 64 * HD / 4; f += blockDim.x) {  // K, V tile: cache -> bf16 shared
      const int sl = f / (HD / 4), d = 4 * (f % (HD / 4));
      uint2 kb = make_uint2(0u, 0u), vb2 = kb;
      if (j0 + sl < hiSlot) {
        const long off = (long)(j0 + sl) * width + h * HD + d;
        kb = kv_ld4b(Kc + off);
        vb2 = kv_ld4b(Vc + off);
      }
      *reinterpret_cast<uint2*>(ks + at(sl, d)) = kb;
      *reinterpret_cast<uint2*>(vs + at(sl, d)) = vb2;
    }
    __syncthreads();
    if (16 * warp >= rn || j0 > wmax) continue;  // warp-uniform: none of the warp's rows sees the tile
    float s[8][4];  // S: 16 rows x 64 slots, n tile nt = slots 8nt..8nt+7
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) s[nt][e] = 0.f;
#pragma unroll
    for (int kd = 0; kd < KD; kd++) {
#pragma unroll
      for (int jp = 0; jp < 4; jp++) {  // n tiles 2jp, 2jp+1: matrix q is n tile 2jp + q/2, k half q%2
        const int q = lane >> 3, row = (2 * jp + (q >> 1)) * 8 + (lane & 7), d = 16 * kd + (q & 1) * 8;
        unsigned b0, b1, b2, b3;
        ldsm_x4(sk + 2 * at(row, d), b0, b1, b2, b3);
        mma_bf16(s[2 * jp], qf[kd], b0, b1);
        mma_bf16(s[2 * jp + 1], qf[kd], b2, b3);
      }
    }
    // s[nt][e]: row grp (e < 2) or grp+8, slot j0 + 8nt + 2tig + e%2
    float mxa = -INFINITY, mxb = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int j = j0 + 8 * nt + 2 * tig + (e & 1);
        const bool vis = j <= (e < 2 ? va : vb);
        s[nt][e] = vis ? s[nt][e] * scale : -INFINITY;
        if (e < 2) mxa = fmaxf(mxa, s[nt][e]); else mxb = fmaxf(mxb, s[nt][e]);
      }
#pragma unroll
    for (int o2 = 1; o2 < 4; o2 <<= 1) {
      mxa = fmaxf(mxa, __shfl_xor_sync(0xffffffffu, mxa, o2));
      mxb = fmaxf(mxb, __shfl_xor_sync(0xffffffffu, mxb, o2));
    }
    const float na = fmaxf(ma, mxa), nb = fmaxf(mb, mxb);
    const float aa = ma == -INFINITY ? 0.f : __expf(ma - na), ab = mb == -INFINITY ? 0.f : __expf(mb - nb);
    float sa = 0.f, sb = 0.f;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const float m = e < 2 ? na : nb;
        const float p = m == -INFINITY ? 0.f : __expf(s[nt][e] - m);
        s[nt][e] = p;
        if (e < 2) sa += p; else sb += p;
      }
#pragma unroll
    for (int o2 = 1; o2 < 4; o2 <<= 1) {
      sa += __shfl_xor_sync(0xffffffffu, sa, o2);
      sb += __shfl_xor_sync(0xffffffffu, sb, o2);
    }
    ma = na; mb = nb;
    la = la * aa + sa;
    lb = lb * ab + sb;
#pragma unroll
    for (int dn = 0; dn < DN; dn++) {
      o[dn][0] *= aa; o[dn][1] *= aa;
      o[dn][2] *= ab; o[dn][3] *= ab;
    }
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {  // slots 16kk..16kk+15: p as the A fragment
      uint4 pa;
      pa.x = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
      pa.y = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
      pa.z = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa.w = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int dp = 0; dp < DN / 2; dp++) {  // d tiles 2dp, 2dp+1: matrix q is slots 16kk + 8(q%2), d tile 2dp + q/2
        const int q = lane >> 3, row = 16 * kk + (q & 1) * 8 + (lane & 7), d = (2 * dp + (q >> 1)) * 8;
        unsigned b0, b1, b2, b3;
        ldsm_x4_t(sv + 2 * at(row, d), b0, b1, b2, b3);
        mma_bf16(o[2 * dp], pa, b0, b1);
        mma_bf16(o[2 * dp + 1], pa, b2, b3);
      }
    }
  }
  pdl_trigger();
  // o[dn]: rows grp (0, 1) and grp+8 (2, 3) x d = 8dn + 2tig, +1
#pragma unroll
  for (int hf = 0; hf < 2; hf++) {
    const int r = hf ? rb : ra;
    if (r >= r0 + rn) continue;
    const float inv = 1.f / (hf ? lb : la);
    const long base_o = (long)(r / G) * hq * HD + (h * G + r % G) * HD;
#pragma unroll
    for (int dn = 0; dn < DN; dn++)
      *reinterpret_cast<__nv_bfloat162*>(oh + base_o + 8 * dn + 2 * tig) =
          __floats2bfloat162_rn(o[dn][2 * hf] * inv, o[dn][2 * hf + 1] * inv);
  }
}
#define PFFA_INST(HD, KT, SUF)                                                                                \
  extern "C" __global__ void __launch_bounds__(128) pf_fa_##HD##SUF(                                          \
      __nv_bfloat16* oh, const float* qkv, int ldq, const KT* Kc, const KT* Vc, const int* pos, int base,     \
      int T, const float* cs, const float* sn, int hq, int hk, float scale, int inter) {                       \
    pf_fa_body<HD, KT>(oh, qkv, ldq, Kc, Vc, pos, base, T, cs, sn, hq, hk, scale, inter);                     \
  }
PFFA_INST(64, float, )
PFFA_INST(128, float, )
PFFA_INST(64, __nv_bfloat16, _kb)
PFFA_INST(128, __nv_bfloat16, _kb)
