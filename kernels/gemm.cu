// rigscope CUDA kernels: the prefill path (included by kernels.cu, after
// attention.cu). A prompt runs in chunks of up to 512 tokens per forward
// (gpu/cuda/prefill.go): per layer
//
//   pf_prep   x (T, dim) f32 -> bf16 (x*g) hi [+ lo], rs (T) = 1/rms(x)
//   pf_gemm   qkv (T, nqkv) f32 = rs * (x*g) . Wqkv^T
//   pf_kv     RoPE of k, k and v into the layer's cache at base..base+T-1
//   pf_attn   causal GQA attention of the T queries against the cache
//             [0, base+t], out split bf16 hi [+ lo] for wo
//   pf_gemm   x += att . Wo^T
//   pf_prep   (FFN norm)
//   pf_glu    h = silu(rs * xg.Wg^T) * (rs * xg.Wu^T), split bf16 for down
//   pf_gemm   x += h . Wd^T
//
// All products accumulate in float32. x enters the tensor cores as bf16 hi
// = rn(v) and, in the split kernels (pfs_*), also lo = rn(v - hi), both
// multiplied as the decode kernels do (tc.cu), so a product keeps about 16
// bits of x; the pf_* kernels use hi only (one mma per fragment, twice the
// rate, x rounded to bf16 as llama.cpp and most engines do).

#define PF_BM 128      // weight rows per block (GLU: 64 gate + the same 64 up rows)
#define PF_BK 32       // k per pipeline stage (2 k tiles of 16)
#define PF_ST 4        // pipeline stages (cp.async)

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// cp_async16 copies 16 bytes global -> shared, or writes zeros when !pred.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }
__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}

// pf_prep: xh[, xl] (T, K) bf16 = split(x * g) (x without g) and rs (T) =
// rsqrt(mean(x^2) + eps) (1 without g): the RMSNorm of a product's input,
// its scale applied per token in the product's epilogue (as finish_out
// does). grid T, block 256.
extern "C" __global__ void __launch_bounds__(256) pf_prep(__nv_bfloat16* xh, __nv_bfloat16* xl, float* rs,
                                                          const float* x, const float* g, int K, float eps) {
  pdl_wait();
  const long t = blockIdx.x;
  const float* xr = x + t * K;
  float ss = 0.f;
  for (int k = 2 * threadIdx.x; k < K; k += 2 * blockDim.x) {
    float2 v = *reinterpret_cast<const float2*>(xr + k);
    ss = fmaf(v.x, v.x, fmaf(v.y, v.y, ss));
    if (g) { v.x *= g[k]; v.y *= g[k + 1]; }
    const __nv_bfloat162 hi = __floats2bfloat162_rn(v.x, v.y);
    *reinterpret_cast<__nv_bfloat162*>(xh + t * K + k) = hi;
    if (xl) {
      const float2 f = __bfloat1622float2(hi);
      *reinterpret_cast<__nv_bfloat162*>(xl + t * K + k) = __floats2bfloat162_rn(v.x - f.x, v.y - f.y);
    }
  }
  if (!g) {
    if (threadIdx.x == 0) rs[t] = 1.f;
    return;
  }
  const float s = block_sum2(ss, 0.f).x;
  if (threadIdx.x == 0) rs[t] = rsqrtf(s / K + eps);
}

// pf_body: the block's product tile. W (N, K) is tiled as tc.cu reads it
// (tileBF16: tile (nt, kt) of 16x16 is 512 bytes, lane L's 16 bytes its
// A fragment), so the weights go to shared memory tile by tile with
// cp.async and each lane reads its fragment with one 16-byte load. x hi
// (and lo) (T, K) bf16 row-major go to shared memory as 128 tokens x 32 k
// (64 bytes a token, its four 16-byte chunks swizzled by (token/2)%4 so
// that ldmatrix reads 8 tokens without bank conflicts) and become the B
// fragments by ldmatrix.x4. PF_ST stages in flight. BN tokens per block:
// 128, or 64 where 128 would leave SMs without a block (gpu/cuda:
// pfGemm). NW warps: 2 (rows, 64 each) x NW/2 (tokens, BN/(NW/2) each):
// 8 (warp tiles 64 x 32 at BN 128), or 4 (64 x 32 at BN 64; 64 x 64 at
// BN 128: fewer shared-memory reads per mma, twice the accumulators).
// MODE 0: out (T, ldo) = rs * x.W^T; 1: out += (the residual); 2 (GLU):
// w2 is up, oh[, ol] (T, N) bf16 = split(silu(rs*x.Wg^T) * rs*x.Wu^T).
// grid (ceil(T/BN), ceil(N/128) (GLU: ceil(N/64))), block 32*NW, dynamic
// shared memory PF_ST * (8 + BN/16 [+ BN/16]) KB.
template <int MODE, bool SPLIT, int BN, int NW>
__device__ __forceinline__ void pf_body(float* __restrict__ out, int ldo, __nv_bfloat16* oh, __nv_bfloat16* ol,
                                        const __nv_bfloat16* __restrict__ xh, const __nv_bfloat16* __restrict__ xl,
                                        const float* __restrict__ rs, const uint4* __restrict__ w,
                                        const uint4* __restrict__ w2, int N, int K, int T) {
  constexpr bool GLU = MODE == 2;
  constexpr int THREADS = 32 * NW, WNW = NW / 2, TPW = BN / WNW, WN = TPW / 8;  // TPW tokens, WN n tiles a warp
  constexpr int A_BYTES = 8 * 2 * 512, B_BYTES = BN * PF_BK * 2;
  constexpr int STAGE = A_BYTES + (SPLIT ? 2 : 1) * B_BYTES;
  extern __shared__ __align__(128) unsigned char pf_smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WNW, wn = warp % WNW, grp = lane >> 2, tig = lane & 3;
  const int KT = K / 16, NT = N / 16, nk = (KT + 1) / 2;
  const int tok0 = blockIdx.x * BN;
  const unsigned sbase = smem_u32(pf_smem);

  // Slot s (0..7) of a stage holds row tile rt(s): rows 8*by + s, or for
  // the GLU gate tiles 4*by + s (s < 4) and up tiles 4*by + s - 4.
  auto tile_of = [&](int s) { return GLU ? 4 * (int)blockIdx.y + (s & 3) : 8 * (int)blockIdx.y + s; };
  auto load_stage = [&](int st, int it) {
    const unsigned sa = sbase + st * STAGE;
#pragma unroll
    for (int i = 0; i < 512 / THREADS; i++) {  // A: 8 slots x 2 k tiles x 32 lanes of 16 bytes
      const int idx = tid + i * THREADS, s = idx >> 6, kk = (idx >> 5) & 1, l = idx & 31;
      const int rt = tile_of(s), kt = 2 * it + kk;
      const uint4* src = (GLU && s >= 4 ? w2 : w);
      const bool ok = rt < NT && kt < KT;
      cp_async16(sa + idx * 16, ok ? src + ((long)rt * KT + kt) * 32 + l : w, ok);
    }
#pragma unroll
    for (int i = 0; i < BN * 4 / THREADS; i++) {  // B: BN tokens x 4 chunks of 8 k
      const int idx = tid + i * THREADS, row = idx >> 2, ch = idx & 3;
      const int t = tok0 + row, k = it * PF_BK + ch * 8;
      const bool ok = t < T && k < K;
      const unsigned off = row * 64 + ((ch ^ ((row >> 1) & 3)) << 4);
      const long g = (long)t * K + k;
      cp_async16(sa + A_BYTES + off, ok ? xh + g : xh, ok);
      if (SPLIT) cp_async16(sa + A_BYTES + B_BYTES + off, ok ? xl + g : xl, ok);
    }
  };

  float acc[4][WN][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
  // This warp's slots: 4 row tiles (GLU: gate tiles 2wm, 2wm+1 and the
  // up tiles of the same rows, so the epilogue pairs them in registers).
  int slot[4];
#pragma unroll
  for (int i = 0; i < 4; i++) slot[i] = GLU ? (i & 1) + 2 * wm + 4 * (i >> 1) : 4 * wm + i;

  pdl_wait();
#pragma unroll
  for (int s = 0; s < PF_ST - 1; s++) {
    if (s < nk) load_stage(s, s);
    cp_async_commit();
  }
  for (int it = 0; it < nk; it++) {
    cp_async_wait<PF_ST - 2>();
    __syncthreads();
    {
      const int nx = it + PF_ST - 1;
      if (nx < nk) load_stage(nx % PF_ST, nx);
      cp_async_commit();
    }
    const int st = it % PF_ST;
    const unsigned char* sa = pf_smem + st * STAGE;
    const unsigned sb = sbase + st * STAGE + A_BYTES;
#pragma unroll
    for (int ks = 0; ks < 2; ks++) {
      uint4 a[4];
#pragma unroll
      for (int i = 0; i < 4; i++) a[i] = reinterpret_cast<const uint4*>(sa)[(slot[i] * 2 + ks) * 32 + lane];
#pragma unroll
      for (int jp = 0; jp < WN / 2; jp++) {
        // ldmatrix.x4: matrix q = lane/8 is n tile 2jp + q/2, k half q%2;
        // lane's row address: token wn*TPW + (2jp + q/2)*8 + lane%8.
        const int q = lane >> 3, row = wn * TPW + (2 * jp + (q >> 1)) * 8 + (lane & 7), ch = 2 * ks + (q & 1);
        const unsigned off = row * 64 + ((ch ^ ((row >> 1) & 3)) << 4);
        unsigned b[4];
        ldsm_x4(sb + off, b[0], b[1], b[2], b[3]);
#pragma unroll
        for (int i = 0; i < 4; i++) {
          mma_bf16(acc[i][2 * jp], a[i], b[0], b[1]);
          mma_bf16(acc[i][2 * jp + 1], a[i], b[2], b[3]);
        }
        if (SPLIT) {
          ldsm_x4(sb + B_BYTES + off, b[0], b[1], b[2], b[3]);
#pragma unroll
          for (int i = 0; i < 4; i++) {
            mma_bf16(acc[i][2 * jp], a[i], b[0], b[1]);
            mma_bf16(acc[i][2 * jp + 1], a[i], b[2], b[3]);
          }
        }
      }
    }
  }
  cp_async_wait<0>();
  pdl_trigger();
  // acc[i][j]: rows grp, grp+8 of slot i's tile x tokens 8j + 2tig, +1.
#pragma unroll
  for (int j = 0; j < WN; j++) {
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int t = tok0 + wn * TPW + 8 * j + 2 * tig + e;
      if (t >= T) continue;
      const float r = rs ? rs[t] : 1.f;
#pragma unroll
      for (int i = 0; i < (GLU ? 2 : 4); i++) {
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
          const long row = (long)tile_of(slot[i]) * 16 + grp + 8 * hf;
          if (row >= N) continue;
          const float v = acc[i][j][2 * hf + e] * r;
          if (GLU) {
            const float u = acc[i + 2][j][2 * hf + e] * r;
            const float o = v / (1.f + expf(-v)) * u;
            const __nv_bfloat16 hi = __float2bfloat16_rn(o);
            oh[(long)t * N + row] = hi;
            if (ol) ol[(long)t * N + row] = __float2bfloat16_rn(o - __bfloat162float(hi));
          } else if (MODE == 1) {
            out[(long)t * ldo + row] += v;
          } else {
            out[(long)t * ldo + row] = v;
          }
        }
      }
    }
  }
}

// pf_gemm / pfs_gemm (x hi only / hi + lo): out [+]= rs * x.W^T (mode 0
// store, 1 add); pf_glu / pfs_glu: the gated MLP product (MODE 2). BN 128
// tokens a block and 8 warps; the *64 kernels 64 tokens and 4 warps (warp
// tiles 64 x 32 as at 128 tokens, 3 blocks an SM); the *w4 kernels 128
// tokens and 4 warps (block 128).
#define PF_INST(PRE, SPLIT, BN, NW, SUF)                                                                           \
  extern "C" __global__ void __launch_bounds__(32 * NW, 2) PRE##_gemm##SUF(                                        \
      float* out, int ldo, const __nv_bfloat16* xh, const __nv_bfloat16* xl, const float* rs, const uint4* w,      \
      int N, int K, int T, int mode) {                                                                             \
    if (mode == 1)                                                                                                 \
      pf_body<1, SPLIT, BN, NW>(out, ldo, nullptr, nullptr, xh, xl, rs, w, nullptr, N, K, T);                      \
    else                                                                                                           \
      pf_body<0, SPLIT, BN, NW>(out, ldo, nullptr, nullptr, xh, xl, rs, w, nullptr, N, K, T);                      \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(32 * NW, 2) PRE##_glu##SUF(                                         \
      __nv_bfloat16* oh, __nv_bfloat16* ol, const __nv_bfloat16* xh, const __nv_bfloat16* xl, const float* rs,     \
      const uint4* wg, const uint4* wu, int N, int K, int T) {                                                     \
    pf_body<2, SPLIT, BN, NW>(nullptr, 0, oh, ol, xh, xl, rs, wg, wu, N, K, T);                                    \
  }
PF_INST(pf, false, 128, 8, )
PF_INST(pfs, true, 128, 8, )
PF_INST(pf, false, 64, 4, 64)
PF_INST(pfs, true, 64, 4, 64)
PF_INST(pf, false, 128, 4, w4)
PF_INST(pfs, true, 128, 4, w4)

// pf_kv: RoPE of the T new tokens' k and both k and v into the layer's
// cache Kc, Vc (slots, hk*HD) at slots base+t, with the formula of
// attn_body's prologue (so the cache holds what the decode steps would
// have written from the same qkv, rounded as they round: kv_st). grid T,
// block 128. pf_kv: a float32 cache; pf_kv_kb: bf16.
template <typename KT>
__device__ __forceinline__ void pf_kv_body(KT* Kc, KT* Vc, const float* qkv, int ldq, const int* pos, int base,
                                           const float* __restrict__ cs, const float* __restrict__ sn, int hq,
                                           int hk, int HD, int interleaved) {
  pdl_wait();
  const int t = blockIdx.x, HALF = HD / 2, width = hk * HD;
  const float* k = qkv + (long)t * ldq + hq * HD;
  const float* v = k + width;
  const int p = pos[t];
  KT* kc = Kc + (long)(base + t) * width;
  KT* vc = Vc + (long)(base + t) * width;
  for (int i = threadIdx.x; i < hk * HALF; i += blockDim.x) {
    const int h = i / HALF, j = i % HALF;
    const int a = h * HD + (interleaved ? 2 * j : j), b = h * HD + (interleaved ? 2 * j + 1 : j + HALF);
    const float c = cs[(long)p * HALF + j], s = sn[(long)p * HALF + j];
    const float ka = k[a], kb = k[b];
    kv_st(kc + a, ka * c - kb * s);
    kv_st(kc + b, ka * s + kb * c);
  }
  for (int i = threadIdx.x; i < width; i += blockDim.x) kv_st(vc + i, v[i]);
}
#define PFKV_INST(KT, SUF)                                                                                     \
  extern "C" __global__ void pf_kv##SUF(KT* Kc, KT* Vc, const float* qkv, int ldq, const int* pos, int base,  \
                                        const float* cs, const float* sn, int hq, int hk, int HD, int inter) { \
    pf_kv_body<KT>(Kc, Vc, qkv, ldq, pos, base, cs, sn, hq, hk, HD, inter);                                   \
  }
PFKV_INST(float, )
PFKV_INST(__nv_bfloat16, _kb)

// pf_attn: causal attention of a chunk's T queries (slots base..base+T-1,
// already in the cache by pf_kv) against cache slots [0, base+t] for
// query token t, online softmax in float32 on the CUDA cores (as
// attn_body, so that the prefill's attention rounds like the decode
// steps'). grid (ceil(G*T/32), hk), block 128: block (x, h) serves KV
// head h's query rows r = t*G + g in [32rg, +32), rg = gridDim.x-1-x
// (warp w: 8 rows); lane
// j scores slot j of each 32-slot chunk of K in shared memory, then the
// warp's rows take p (shared memory, read 4 at a time) times V (lane owns
// HD/32 columns). out: split bf16 (T, hq*HD) for wo (oh hi, ol lo when
// set). Dynamic shared memory pf_attn_smem(HD). The cache is float32
// (pf_attn_HD) or bf16 (pf_attn_HD_kb), widened as it is loaded.
#define PFA_RPW 8
#define PFA_RB (4 * PFA_RPW)
template <int HD, typename KT>
__device__ __forceinline__ void pf_attn_body(__nv_bfloat16* oh, __nv_bfloat16* ol, const float* qkv, int ldq,
                                             const KT* Kc, const KT* Vc, const int* pos, int base, int T,
                                             const float* __restrict__ cs, const float* __restrict__ sn, int hq,
                                             int hk, float scale, int interleaved) {
  constexpr int HALF = HD / 2, EPL = Vec<HD>::EPL, KS = HD + 4;
  extern __shared__ __align__(16) float pfa_smem[];
  float* qs = pfa_smem;            // [PFA_RB][HD]
  float* ks = qs + PFA_RB * HD;    // [32][KS]
  float* vs = ks + 32 * KS;        // [32][HD]
  float* ps = vs + 32 * HD;        // [PFA_RB][32]
  const int h = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // The last row groups see the most slots: they are scheduled first.
  const int G = hq / hk, R = G * T, r0 = (gridDim.x - 1 - blockIdx.x) * PFA_RB, rn = min(PFA_RB, R - r0);
  const int width = hk * HD;
  pdl_wait();
  for (int i = threadIdx.x; i < rn * HALF; i += blockDim.x) {  // RoPE of the block's query rows
    const int rl = i / HALF, j = i % HALF, r = r0 + rl, t = r / G;
    const float* x = qkv + (long)t * ldq + (h * G + r % G) * HD;
    const int p = pos[t];
    const float c = cs[(long)p * HALF + j], s = sn[(long)p * HALF + j];
    const int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
    const float xa = x[a], xb = x[b];
    qs[rl * HD + a] = xa * c - xb * s;
    qs[rl * HD + b] = xa * s + xb * c;
  }
  const int hiSlot = base + (r0 + rn - 1) / G + 1;  // slots the block's last row sees
  float mrun[PFA_RPW], lrun[PFA_RPW], acc[PFA_RPW][EPL];
  int vis[PFA_RPW];  // last slot row i sees
#pragma unroll
  for (int i = 0; i < PFA_RPW; i++) {
    mrun[i] = -INFINITY;
    lrun[i] = 0.f;
    vis[i] = base + (r0 + warp * PFA_RPW + i) / G;
#pragma unroll
    for (int e = 0; e < EPL; e++) acc[i][e] = 0.f;
  }
  for (int j0 = 0; j0 < hiSlot; j0 += 32) {
    __syncthreads();  // the previous chunk's reads (and the query prologue) are done
    for (int f = threadIdx.x; f < 32 * HD / 4; f += blockDim.x) {
      const int sl = f / (HD / 4), c4 = 4 * (f % (HD / 4));
      float4 kv = make_float4(0.f, 0.f, 0.f, 0.f), vv = kv;
      if (j0 + sl < hiSlot) {
        const long off = (long)(j0 + sl) * width + h * HD + c4;
        kv = kv_ld4(Kc + off);
        vv = kv_ld4(Vc + off);
      }
      *reinterpret_cast<float4*>(ks + sl * KS + c4) = kv;
      *reinterpret_cast<float4*>(vs + sl * HD + c4) = vv;
    }
    __syncthreads();
    if (warp * PFA_RPW >= rn || j0 > vis[PFA_RPW - 1]) continue;  // warp-uniform: no row of this warp sees the chunk
    float sc[PFA_RPW];
#pragma unroll
    for (int i = 0; i < PFA_RPW; i++) sc[i] = 0.f;
#pragma unroll 4
    for (int d = 0; d < HD; d += 4) {
      const float4 k4 = *reinterpret_cast<const float4*>(ks + lane * KS + d);
#pragma unroll
      for (int i = 0; i < PFA_RPW; i++) {
        const float4 q4 = *reinterpret_cast<const float4*>(qs + (warp * PFA_RPW + i) * HD + d);
        sc[i] = fmaf(k4.x, q4.x, fmaf(k4.y, q4.y, fmaf(k4.z, q4.z, fmaf(k4.w, q4.w, sc[i]))));
      }
    }
    const int j = j0 + lane;
#pragma unroll
    for (int i = 0; i < PFA_RPW; i++) {
      const float v = j <= vis[i] ? sc[i] * scale : -INFINITY;
      float mx = v;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float mnew = fmaxf(mrun[i], mx);
      const float p = mnew == -INFINITY ? 0.f : __expf(v - mnew);
      const float alpha = mrun[i] == -INFINITY ? 0.f : __expf(mrun[i] - mnew);
      float sum = p;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      mrun[i] = mnew;
      lrun[i] = lrun[i] * alpha + sum;
#pragma unroll
      for (int e = 0; e < EPL; e++) acc[i][e] *= alpha;
      ps[(warp * PFA_RPW + i) * 32 + lane] = p;
    }
    __syncwarp();
    const int col = min(lane * EPL, HD - EPL);
#pragma unroll 2
    for (int jj = 0; jj < 32; jj += 4) {
      Vec<HD> vv[4];
#pragma unroll
      for (int u = 0; u < 4; u++) vv[u].load(vs + (jj + u) * HD + col);
#pragma unroll
      for (int i = 0; i < PFA_RPW; i++) {
        const float4 p4 = *reinterpret_cast<const float4*>(ps + (warp * PFA_RPW + i) * 32 + jj);
#pragma unroll
        for (int e = 0; e < EPL; e++)
          acc[i][e] = fmaf(p4.x, vv[0].v[e], fmaf(p4.y, vv[1].v[e], fmaf(p4.z, vv[2].v[e], fmaf(p4.w, vv[3].v[e], acc[i][e]))));
      }
    }
    __syncwarp();
  }
  pdl_trigger();
  if (lane * EPL >= HD) return;
#pragma unroll
  for (int i = 0; i < PFA_RPW; i++) {
    const int rl = warp * PFA_RPW + i, r = r0 + rl;
    if (rl >= rn) break;
    const int t = r / G;
    const long o = (long)t * hq * HD + (h * G + r % G) * HD + lane * EPL;
#pragma unroll
    for (int e = 0; e < EPL; e++) {
      const float v = acc[i][e] / lrun[i];
      const __nv_bfloat16 hi = __float2bfloat16_rn(v);
      oh[o + e] = hi;
      if (ol) ol[o + e] = __float2bfloat16_rn(v - __bfloat162float(hi));
    }
  }
}
#define PFA_INST(HD, KT, SUF)                                                                                  \
  extern "C" __global__ void __launch_bounds__(128) pf_attn_##HD##SUF(                                          \
      __nv_bfloat16* oh, __nv_bfloat16* ol, const float* qkv, int ldq, const KT* Kc, const KT* Vc,               \
      const int* pos, int base, int T, const float* cs, const float* sn, int hq, int hk, float scale, int inter) { \
    pf_attn_body<HD, KT>(oh, ol, qkv, ldq, Kc, Vc, pos, base, T, cs, sn, hq, hk, scale, inter);                \
  }
#define PFA_ALL(HD) PFA_INST(HD, float, ) PFA_INST(HD, __nv_bfloat16, _kb)
PFA_ALL(32)
PFA_ALL(64)
PFA_ALL(128)
PFA_ALL(256)
