// rigscope CUDA kernels: attention (included by kernels.cu, after struct
// Step).

// ----------------------------------------------------------- attention
// One launch per layer does RoPE, the KV-cache store and attention for all
// T tokens (decode, or verify with a causal or tree mask), split over the
// cache length (flash-decoding style). attn_body, below, splits the cache
// by the step's length (the _len kernels, RIGSCOPE_CUDA_ATTCHUNK=0: not
// batch-invariant); attn_fixed (attn_fixed.cu, the default) by fixed
// chunks, so that a row's bits do not depend on the step it is in.
//
// qkv (T, ldq) holds q (hq*HD), k (hk*HD), v (hk*HD) per token; cs, sn
// (maxPos, HD/2) are the RoPE tables; Kc, Vc (slots, hk*HD) the layer's
// cache, float32 or bf16 (KT: KVChunk, kv_st). out (T, hq*HD), and when xf
// is set the same split for wo (store_xf).
//
// grid (hk, S, RG), block 128 (4 warps). Block (h, s, rg) serves KV head h
// and the query rows r = t*G + g (token t, query head h*G + g, G = hq/hk)
// in [rg*4*RPW, +4*RPW) (RPW 1 or 2: more rows make more row groups,
// which keeps each block's merge short); warp w owns RPW of those rows, lane j owns slot
// j of each 32-slot chunk, so scores and the online softmax stay in
// registers. Split s covers the cached slots [s*per, (s+1)*per) ∩ [0, base)
// with per a multiple of 32, at least minper; the last split also owns the
// T new slots: it rotates their k, stores k and v in the cache and attends
// to them. With
// S > 1 each block writes partials (pm, pl: (hk, G*MAXT, S); pacc: (...,
// HD)) and the last block of (h, rg) to finish, counted in cnt (reset to 0
// after use), merges them.
//
// The architectures' extensions (gpu/cuda/arch.go), each off when its
// argument is 0: bias (ldq-wide, the qkv row's layout) is added to q, k
// and v as they are loaded (Qwen2); qkn (2*HD: q's weight, then k's)
// RMSNorms each query and key head after the bias and before RoPE, with
// eps (Qwen3); window > 0 masks every key more than window-1 positions
// before its query (Mistral), and the splits then cover only the cached
// slots from the first one any query of the step sees (the cache slot of
// position p is p).

#include "attn_common.cu"  // the cache's loads and stores, KVChunk, Vec, AttSmem

template <int HD, int RPW, bool EXT, typename KT>
__device__ __forceinline__ void attn_body(AttSmem<HD, ATT_WARPS * RPW>& sm, float* out, float* pm, float* pl, float* pacc, unsigned* cnt,
                                          const float* qkv, int ldq, KT* Kc, KT* Vc, const Step* st,
                                          const float* __restrict__ cs, const float* __restrict__ sn,
                                          int hq, int hk, float scale, int interleaved, int minper,
                                          __nv_bfloat16* xf, const float* __restrict__ bias,
                                          const float* __restrict__ qkn, float eps, int window, int8_t* qo) {
  constexpr int RB = ATT_WARPS * RPW, HALF = HD / 2, EPL = Vec<HD>::EPL;
  auto& qs = sm.qs;
  auto& qinv = sm.qinv;  // qkn: 1/rms of each query row, of each new key row
  auto& kinv = sm.kinv;
  int& last = sm.last;
  ATT_TRSTART();
  const int h = blockIdx.x, s = blockIdx.y, S = gridDim.y, rg = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int T = st->T, base = st->base, G = hq / hk, R = G * T;
  const int r0 = rg * RB, rn = min(RB, R - r0);
  const int width = hk * HD;
  // Cached slots [c0, base) are split: with a window, c0 is the first one
  // the step's earliest query sees.
  int c0 = 0;
  if (EXT && window > 0) {
    int pmin = st->pos[0];
    for (int t = 1; t < T; t++) pmin = min(pmin, st->pos[t]);
    c0 = min(base, max(0, pmin - window + 1));
  }
  const int nb = base - c0;
  const int per = max(minper, ((nb + S - 1) / S + 31) / 32 * 32);
  const int active = (nb + per - 1) / per;  // splits with cached slots

  // Chunks of 32 slots: n0 over the cached range [lo0, hi0), then (last
  // split) one over the new slots [base, base+T). Each chunk of K and V is
  // loaded by the whole block at once (coalesced, all loads in flight) into
  // registers, DEPTH chunks ahead (KVChunk): the first ones before the
  // prologue when they are cached, chunk c+DEPTH while chunk c's V
  // products run.
  typedef KVChunk<HD, KT> Chunk;
  constexpr int DEPTH = Chunk::DEPTH;
  const int lo0 = c0 + min(nb, s * per), hi0 = c0 + min(nb, (s + 1) * per);
  const int n0 = (hi0 - lo0 + 31) / 32, nc = n0 + (s == S - 1 && T > 0 ? 1 : 0);
  Chunk ch[DEPTH];
  auto load_chunk = [&](Chunk& k, int c) {
    const int j0 = c < n0 ? lo0 + 32 * c : base;
    k.load(Kc, Vc, j0, min(32, (c < n0 ? hi0 : base + T) - j0), width, h);
  };
#pragma unroll
  for (int u = 0; u < DEPTH; u++)
    if (u < n0) load_chunk(ch[u], u);  // cached slots: written by earlier steps
  pdl_wait();
  ATT_TRG(1), ATT_TR(4);
#ifdef ATT_EMPTY  // measurement builds (bench/cuda/variants.sh): what the parts cost
  pdl_trigger();
  return;
#endif

  // RoPE on this block's query rows, into shared memory, then (last split)
  // the new tokens' rotated k and their v into the cache. Every load of a
  // batch is issued before its first use: these loops are round trips to L2
  // on the step's critical path.
  constexpr int NT = ATT_WARPS * 32, RQ = (RB * HALF + NT - 1) / NT, KB = 4;
#ifndef ATT_NOPRO
  if (EXT && qkn) {  // 1/rms of (row + bias): warp w sums rows w, w+4, ... (the CPU's RMSNorm: v * inv * w)
    for (int rl = warp; rl < rn; rl += ATT_WARPS) {
      const int r = r0 + rl, off = (h * G + r % G) * HD;
      const float inv = head_inv_rms<HD>(qkv + (long)(r / G) * ldq + off, bias ? bias + off : nullptr, eps, lane);
      if (lane == 0) qinv[rl] = inv;
    }
    if (s == S - 1)
      for (int t = warp; t < T; t += ATT_WARPS) {
        const int off = hq * HD + h * HD;
        const float inv = head_inv_rms<HD>(qkv + (long)t * ldq + off, bias ? bias + off : nullptr, eps, lane);
        if (lane == 0) kinv[t] = inv;
      }
    __syncthreads();
  }
  {
    float xa[RQ], xb[RQ], c[RQ], sv[RQ], ba[RQ], bb[RQ], wa[RQ], wb[RQ];
#pragma unroll
    for (int q = 0; q < RQ; q++) {
      const int i = threadIdx.x + q * NT, rl = i / HALF, j = i % HALF, r = r0 + rl, t = r / G;
      if (i < rn * HALF) {
        const int off = (h * G + r % G) * HD, a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
        const float* x = qkv + (long)t * ldq + off;
        const int p = st->pos[t];
        c[q] = cs[(long)p * HALF + j];
        sv[q] = sn[(long)p * HALF + j];
        xa[q] = x[a];
        xb[q] = x[b];
        if (EXT) {
          ba[q] = bias ? bias[off + a] : 0.f;
          bb[q] = bias ? bias[off + b] : 0.f;
          wa[q] = qkn ? qkn[a] : 1.f;
          wb[q] = qkn ? qkn[b] : 1.f;
        }
      }
    }
#pragma unroll
    for (int q = 0; q < RQ; q++) {
      const int i = threadIdx.x + q * NT, rl = i / HALF, j = i % HALF;
      if (i < rn * HALF) {
        const int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
        float va = xa[q], vb = xb[q];
        if (EXT && bias) va += ba[q], vb += bb[q];
        if (EXT && qkn) va = va * qinv[rl] * wa[q], vb = vb * qinv[rl] * wb[q];
        qs[rl][a] = va * c[q] - vb * sv[q];
        qs[rl][b] = va * sv[q] + vb * c[q];
      }
    }
  }
  if (s == S - 1) {
    for (int i0 = 0; i0 < T * HALF; i0 += KB * NT) {
      float ka[KB], kb[KB], va[KB], vb[KB], c[KB], sv[KB], bk[KB][4], wk[KB][2];
#pragma unroll
      for (int q = 0; q < KB; q++) {
        const int i = i0 + threadIdx.x + q * NT, t = i / HALF, j = i % HALF;
        if (i < T * HALF) {
          const int koff = hq * HD + h * HD, voff = koff + hk * HD;
          const float* k = qkv + (long)t * ldq + koff;
          const float* v = qkv + (long)t * ldq + voff;
          const int p = st->pos[t], a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
          c[q] = cs[(long)p * HALF + j];
          sv[q] = sn[(long)p * HALF + j];
          ka[q] = k[a];
          kb[q] = k[b];
          va[q] = v[a];
          vb[q] = v[b];
          if (EXT) {
            bk[q][0] = bias ? bias[koff + a] : 0.f;
            bk[q][1] = bias ? bias[koff + b] : 0.f;
            bk[q][2] = bias ? bias[voff + a] : 0.f;
            bk[q][3] = bias ? bias[voff + b] : 0.f;
            wk[q][0] = qkn ? qkn[HD + a] : 1.f;
            wk[q][1] = qkn ? qkn[HD + b] : 1.f;
          }
        }
      }
#pragma unroll
      for (int q = 0; q < KB; q++) {
        const int i = i0 + threadIdx.x + q * NT, t = i / HALF, j = i % HALF;
        if (i < T * HALF) {
          const int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
          if (EXT && bias) ka[q] += bk[q][0], kb[q] += bk[q][1], va[q] += bk[q][2], vb[q] += bk[q][3];
          if (EXT && qkn) ka[q] = ka[q] * kinv[t] * wk[q][0], kb[q] = kb[q] * kinv[t] * wk[q][1];
          KT* kc = Kc + (long)(base + t) * width + h * HD;
          KT* vc = Vc + (long)(base + t) * width + h * HD;
          kv_st(kc + a, ka[q] * c[q] - kb[q] * sv[q]);
          kv_st(kc + b, ka[q] * sv[q] + kb[q] * c[q]);
          kv_st(vc + a, va[q]);
          kv_st(vc + b, vb[q]);
        }
      }
    }
  }
#endif
  __syncthreads();
  ATT_TR(5);
#ifdef ATT_ONLYPRO
  pdl_trigger();
  return;
#endif

  float mrun[RPW], lrun[RPW];
  Vec<HD> acc[RPW];
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    mrun[i] = -INFINITY;
    lrun[i] = 0.f;
#pragma unroll
    for (int e = 0; e < EPL; e++) acc[i].v[e] = 0.f;
  }
#pragma unroll
  for (int u = 0; u < DEPTH; u++)
    if (u >= n0 && u < nc) load_chunk(ch[u], u);  // the new slots: after the prologue stored them
  auto& buf = sm.buf;
  for (int cd = 0; cd < nc; cd += DEPTH) {
#pragma unroll
    for (int u = 0; u < DEPTH; u++) {  // unrolled: ch[u] stays in registers
      const int c = cd + u;
      if (c >= nc) break;  // block-uniform
      const int j0 = c < n0 ? lo0 + 32 * c : base, hi = c < n0 ? hi0 : base + T;
      __syncthreads();  // the previous chunk's V reads are done
      ch[u].put(buf, false);
      __syncthreads();
      const int j = j0 + lane;
      float sc[RPW];
#pragma unroll
      for (int i = 0; i < RPW; i++) sc[i] = 0.f;
#pragma unroll 8
      for (int d = 0; d < HD; d += 4) {
        float4 k4 = *reinterpret_cast<const float4*>(&buf[lane][d]);
#pragma unroll
        for (int i = 0; i < RPW; i++) {
          const float4 q4 = *reinterpret_cast<const float4*>(&qs[warp * RPW + i][d]);
          sc[i] = fmaf(k4.x, q4.x, fmaf(k4.y, q4.y, fmaf(k4.z, q4.z, fmaf(k4.w, q4.w, sc[i]))));
        }
      }
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        const int rl = warp * RPW + i;
        if (rl >= rn) break;  // warp-uniform
        const int t = (r0 + rl) / G;
        bool vis = j < hi && (j < base || ((st->mask[t] >> (j - base)) & 1u));
        if (EXT && window > 0 && vis) vis = st->pos[t] - (j < base ? j : st->pos[j - base]) < window;
        float v = vis ? sc[i] * scale : -INFINITY;
        float mx = v;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float mnew = fmaxf(mrun[i], mx);
        float p = mnew == -INFINITY ? 0.f : __expf(v - mnew);
        float alpha = mrun[i] == -INFINITY ? 0.f : __expf(mrun[i] - mnew);
        float sum = p;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        mrun[i] = mnew;
        lrun[i] = lrun[i] * alpha + sum;
#pragma unroll
        for (int e = 0; e < EPL; e++) acc[i].v[e] *= alpha;
        sc[i] = p;
      }
      __syncthreads();  // K reads are done
      ch[u].put(buf, true);
      __syncthreads();
      if (c + DEPTH < nc) load_chunk(ch[u], c + DEPTH);
#pragma unroll 4
      for (int jj = 0; jj < 32; jj++) {
        Vec<HD> vv;
        vv.load(&buf[jj][min(lane * EPL, HD - EPL)]);
#pragma unroll
        for (int i = 0; i < RPW; i++) {
          float pj = __shfl_sync(0xffffffffu, sc[i], jj);
#pragma unroll
          for (int e = 0; e < EPL; e++) acc[i].v[e] = fmaf(pj, vv.v[e], acc[i].v[e]);
        }
      }
    }
  }

  ATT_TR(6);
  pdl_trigger();
  const long rows = (long)G * MAXT;  // partial rows per KV head
  if (S == 1) {
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int rl = warp * RPW + i, r = r0 + rl;
      if (rl < rn && lane * EPL < HD) {
        float v[EPL];
#pragma unroll
        for (int e = 0; e < EPL; e++) v[e] = acc[i].v[e] / lrun[i];
        att_store<EPL>(out, xf, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v);
        if (HD >= 32 && qo) att_quant<EPL>(qo, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v, lane);
      }
    }
    ATT_TRF(2), ATT_TREND();
    return;
  }
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int rl = warp * RPW + i;
    if (rl < rn) {
      long idx = ((long)h * rows + r0 + rl) * S + s;
      if (lane == 0) { pm[idx] = mrun[i]; pl[idx] = lrun[i]; }
      if (lane * EPL < HD)
        st_run<EPL>(pacc + idx * HD + lane * EPL, acc[i].v);
    }
  }
#ifdef ATT_NOMERGE
  return;
#endif
  if (!arrive_last(&cnt[h * gridDim.z + rg], S, last)) {
    ATT_TREND();
    return;
  }
  ATT_TR(7), ATT_TRF(4);
  // Merge the splits that saw slots, [0, active) and S-1: lane q holds
  // split q's max and sum (S <= 32). Warp w merges rows w + 4i (i < RPW),
  // each batch of loads for all its rows at once.
  const int col = min(lane * EPL, HD - EPL);
  const int nq = active < S ? active + 1 : S;
  const bool valid = lane < S && (lane < active || lane == S - 1);
  float f[RPW], den[RPW], num[RPW][EPL];
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int rl = warp + ATT_WARPS * i;
    const long b = ((long)h * rows + r0 + rl) * S;
    f[i] = valid && rl < rn ? __ldcg(pm + b + lane) : -INFINITY;  // m, then the factor
    den[i] = valid && rl < rn ? __ldcg(pl + b + lane) : 0.f;      // l, then the denominator
  }
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const float m = f[i];
    float M = m;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    f[i] = m != -INFINITY ? __expf(m - M) : 0.f;
    float d = f[i] * den[i];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    den[i] = d;
#pragma unroll
    for (int e = 0; e < EPL; e++) num[i][e] = 0.f;
  }
#pragma unroll 16
  for (int k = 0; k < nq; k++) {
    const int q = k < active ? k : S - 1;
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int rl = warp + ATT_WARPS * i;
      const float fq = __shfl_sync(0xffffffffu, f[i], q);
      if (rl < rn) {
        const long b = ((long)h * rows + r0 + rl) * S;
        float pa[EPL];
        ld_run<EPL>(pacc + (b + q) * HD + col, pa);
#pragma unroll
        for (int e = 0; e < EPL; e++) num[i][e] = fmaf(fq, pa[e], num[i][e]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int rl = warp + ATT_WARPS * i, r = r0 + rl;
    if (rl < rn && lane * EPL < HD) {
      float v[EPL];
#pragma unroll
      for (int e = 0; e < EPL; e++) v[e] = num[i][e] / den[i];
      att_store<EPL>(out, xf, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v);
      if (HD >= 32 && qo) att_quant<EPL>(qo, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v, lane);
    }
  }
  if (threadIdx.x == 0) cnt[h * gridDim.z + rg] = 0;
  ATT_TREND();
}

#include "attn_fixed.cu"

// attn_HD_RPW: the Llama block; attnx_HD_RPW: with the extensions (bias,
// qkn, window: the same arguments, which attn_ ignores; qo, when set: the
// output also quantized for wo's quantized product, att_quant), so that plain
// models keep the kernel they had (the extensions' loads cost registers:
// attn_64_1 96 -> 118, attn_256_2 spilled). Each with a float32 cache, and
// with a bf16 cache under the name with _kb appended (attn_128_2_kb).
// These run attn_fixed (chunks of chunk slots, np partial columns); the
// same names with _len appended run attn_body (the split by the step's
// length, minper; kept for comparisons: RIGSCOPE_CUDA_ATTCHUNK=0), with
// _t1 appended attn_fixed for steps of one token (ONE), and with _ch for a
// speculative cycle's verify, a chain (CHAIN). Two
// kernels, not one that branches: one kernel holding both bodies took
// the registers of both (attn_128_2_kb 168 -> 255 on sm_90).
#define ATT_ARGS(KT)                                                                                       \
  float *out, float *pm, float *pl, float *pacc, unsigned *cnt, const float *qkv, int ldq, KT *Kc, KT *Vc, \
      const Step *st, const float *cs, const float *sn, int hq, int hk, float scale, int inter, int minper,  \
      __nv_bfloat16 *xf, const float *bias, const float *qkn, float eps, int window, int8_t *qo, int chunk,  \
      int np, int gs
// ATT_MINB: blocks per SM the compiler must allow (registers <= 170 at 3):
// the plain kernels up to head dim 128 ran at 168 registers before the
// grouped merge, whose loads would take attn_128_2_kb to 218 (2 blocks
// per SM for verify) for a path that runs once per head and row group.
// The attnx_ kernels keep 1 (at 3 attnx_128_1_kb spilled 40 bytes).
#define ATT_MINB(HD, EXT) ((HD) <= 128 && !(EXT) ? 3 : 1)
#define ATT_INST(NAME, HD, RPW, EXT, KT, SUF)                                                                   \
  extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32, ATT_MINB(HD, EXT)) NAME##_##HD##_##RPW##SUF(ATT_ARGS(KT)) { \
    __shared__ AttSmem<HD, ATT_WARPS * RPW> sm;                                                                \
    attn_fixed<HD, RPW, EXT, KT>(sm, out, pm, pl, pacc, cnt, qkv, ldq, Kc, Vc, st, cs, sn, hq, hk, scale, inter, \
                                 xf, bias, qkn, eps, window, qo, chunk, np, gs);                                   \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32) NAME##_##HD##_##RPW##SUF##_len(ATT_ARGS(KT)) {  \
    __shared__ AttSmem<HD, ATT_WARPS * RPW> sm;                                                                \
    attn_body<HD, RPW, EXT, KT>(sm, out, pm, pl, pacc, cnt, qkv, ldq, Kc, Vc, st, cs, sn, hq, hk, scale, inter,  \
                                minper, xf, bias, qkn, eps, window, qo);                                       \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32, ATT_MINB(HD, EXT)) NAME##_##HD##_##RPW##SUF##_t1(ATT_ARGS(KT)) { \
    __shared__ AttSmem<HD, ATT_WARPS * RPW> sm;                                                                \
    attn_fixed<HD, RPW, EXT, KT, true>(sm, out, pm, pl, pacc, cnt, qkv, ldq, Kc, Vc, st, cs, sn, hq, hk, scale, inter, \
                                       xf, bias, qkn, eps, window, qo, chunk, np, gs);                             \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32, ATT_MINB(HD, EXT)) NAME##_##HD##_##RPW##SUF##_ch(ATT_ARGS(KT)) { \
    __shared__ AttSmem<HD, ATT_WARPS * RPW> sm;                                                                \
    attn_fixed<HD, RPW, EXT, KT, false, true>(sm, out, pm, pl, pacc, cnt, qkv, ldq, Kc, Vc, st, cs, sn, hq, hk, scale, \
                                              inter, xf, bias, qkn, eps, window, qo, chunk, np, gs);              \
  }
#define ATT_KT(HD, KT, SUF)                                                                          \
  ATT_INST(attn, HD, 1, false, KT, SUF) ATT_INST(attn, HD, 2, false, KT, SUF) ATT_INST(attnx, HD, 1, true, KT, SUF) \
  ATT_INST(attnx, HD, 2, true, KT, SUF)
#define ATT_ALL(HD) ATT_KT(HD, float, ) ATT_KT(HD, __nv_bfloat16, _kb)
ATT_ALL(16)
ATT_ALL(32)
ATT_ALL(64)
ATT_ALL(128)
ATT_ALL(256)
