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
// The KV cache holds float32 or bf16 (KT; gpu/cuda/kvformat.go): kv_ld4
// reads 4 consecutive elements widened to float32 (exact; the prefill's
// pf_attn), KVChunk a thread's share of 32 slots (below), kv_st rounds a
// value to the cache's type (bf16: to nearest even). Everything after the
// load is float32 whatever the cache holds.
__device__ __forceinline__ float4 kv_ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 kv_ld4(const __nv_bfloat16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);  // elements 0, 1 in u.x (low half first), 2, 3 in u.y
  return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u), __uint_as_float(u.y << 16),
                     __uint_as_float(u.y & 0xffff0000u));
}
__device__ __forceinline__ void kv_st(float* p, float v) { *p = v; }
__device__ __forceinline__ void kv_st(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
// kv_widen: the elements of one raw load (16 or 8 bytes of the cache's
// type; the pointer argument only picks the type) as float32, exactly.
__device__ __forceinline__ void kv_widen(const uint4& u, float* o, const float*) {
  o[0] = __uint_as_float(u.x), o[1] = __uint_as_float(u.y), o[2] = __uint_as_float(u.z), o[3] = __uint_as_float(u.w);
}
__device__ __forceinline__ void kv_widen(const uint2& u, float* o, const __nv_bfloat16*) {
  o[0] = __uint_as_float(u.x << 16), o[1] = __uint_as_float(u.x & 0xffff0000u);
  o[2] = __uint_as_float(u.y << 16), o[3] = __uint_as_float(u.y & 0xffff0000u);
}
__device__ __forceinline__ void kv_widen(const uint4& u, float* o, const __nv_bfloat16*) {
  kv_widen(make_uint2(u.x, u.y), o, (const __nv_bfloat16*)nullptr);
  kv_widen(make_uint2(u.z, u.w), o + 4, (const __nv_bfloat16*)nullptr);
}
template <int BYTES> struct KVRaw { typedef uint4 T; };
template <> struct KVRaw<8> { typedef uint2 T; };

#define ATT_WARPS 4

// ATT_TRACE (measurement builds only, never the embedded images: nvcc
// -DATT_TRACE; gpu/cuda check_attntrace_test.go reads it): thread 0 of
// each block stamps its phases into att_trace[block] (the last launch's
// survive): 0-2 globaltimer at the start, after pdl_wait and at the end;
// 3-8 clock64 at the start, after pdl_wait, after the prologue (RoPE, the
// new slots stored), after the chunks, after arrive_last, at the end; 9
// flags (1 idle, 2 direct, 4 the merging block); 10 the SM; attn_fixed's
// first subchunk: 11-17 clock64 before K's put, after it, after the
// scores, after the softmax update, after V's put, after the V products,
// after the flush; its grouped merge: 18 after the max, 19-22 after each
// of the first 4 groups; its prologue: 24 after the query rows' RoPE, 25
// after the new slots' stores.
#ifdef ATT_TRACE
__device__ unsigned long long att_trace[4096][32];
__device__ __forceinline__ unsigned long long att_gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid_now() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned long long* att_tr_row() {
  const int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  return att_trace[b < 4096 ? b : 4095];
}
#define ATT_TR(i) (threadIdx.x == 0 ? (void)(att_tr_row()[i] = clock64()) : (void)0)
#define ATT_TRG(i) (threadIdx.x == 0 ? (void)(att_tr_row()[i] = att_gtime()) : (void)0)
#define ATT_TRF(f) (threadIdx.x == 0 ? (void)(att_tr_row()[9] |= (f)) : (void)0)
#define ATT_TREND() (ATT_TR(8), ATT_TRG(2))
__device__ __forceinline__ void att_tr_start() {
  if (threadIdx.x != 0) return;
  unsigned long long* r = att_tr_row();
  for (int i = 0; i < 32; i++) r[i] = 0;
  r[10] = smid_now();
  r[0] = att_gtime();
  r[3] = clock64();
}
#define ATT_TRSTART() att_tr_start()
#else
#define ATT_TR(i) ((void)0)
#define ATT_TRG(i) ((void)0)
#define ATT_TRF(f) ((void)0)
#define ATT_TREND() ((void)0)
#define ATT_TRSTART() ((void)0)
#endif

#ifndef ATT_KV_DEPTH  // bf16 chunks in flight below head dim 256 (measurement builds may set 1 or 2)
#define ATT_KV_DEPTH 3
#endif
// KVChunk is a thread's share of one 32-slot chunk of a KV head's K and V
// rows, as loaded: raw cache elements in 16-byte loads (8-byte for bf16 at
// head dim 16), widened to float32 only when written to shared memory
// (put). A bf16 chunk takes half the registers of a float32 one, so the
// attention keeps DEPTH chunks in flight with a bf16 cache: 3 (2 at head
// dim 256, where 3 spills). A decode at long contexts runs about 2 blocks
// per SM and waits on each chunk's round trip: with one chunk, bf16 moved
// half the bytes per trip and was slower than float32. H200, llama-8b
// shape, 32 layers' attention of a decode at 4096 (ungraphed): float32
// 772 us, bf16 with one chunk in 8-byte loads 1059, two 750, three 754;
// graphed decode vs float32 0.941x, 0.974x, 1.001x; verify T=5 2234,
// 2014, 1847 us (float32 1769).
template <int HD, typename KT>
struct KVChunk {
  enum {
    EV = sizeof(KT) == 2 && HD >= 32 ? 8 : 4,  // elements per load
    NV = 32 * HD / EV / (ATT_WARPS * 32),       // loads per thread per chunk, of K and of V
    DEPTH = sizeof(KT) != 2 ? 1 : HD >= 256 ? 2 : ATT_KV_DEPTH  // chunks in flight
  };
  typedef typename KVRaw<EV * sizeof(KT)>::T Raw;
  Raw k[NV], v[NV];
  // load reads slots [j0, j0+cnt) of head h (zeros past cnt; cnt <= 32).
  __device__ __forceinline__ void load(const KT* Kc, const KT* Vc, int j0, int cnt, int width, int h) {
#pragma unroll
    for (int i = 0; i < NV; i++) {
      const int f = threadIdx.x + i * ATT_WARPS * 32, sl = f / (HD / EV), ce = f % (HD / EV);
      if (sl < cnt) {
        const long off = (long)(j0 + sl) * width + h * HD + EV * ce;
        k[i] = *reinterpret_cast<const Raw*>(Kc + off);
        v[i] = *reinterpret_cast<const Raw*>(Vc + off);
      } else {
        k[i] = Raw{};
        v[i] = Raw{};
      }
    }
  }
  // put writes K (or V) widened into buf (32 slots, HD floats each).
  template <int LD>
  __device__ __forceinline__ void put(float (*buf)[LD], bool values) const {
#pragma unroll
    for (int i = 0; i < NV; i++) {
      const int f = threadIdx.x + i * ATT_WARPS * 32, sl = f / (HD / EV), ce = f % (HD / EV);
      float o[EV];
      kv_widen(values ? v[i] : k[i], o, (const KT*)nullptr);
#pragma unroll
      for (int e = 0; e < EV; e += 4)
        *reinterpret_cast<float4*>(&buf[sl][EV * ce + e]) = make_float4(o[e], o[e + 1], o[e + 2], o[e + 3]);
    }
  }
};
template <int HD>
struct Vec {  // the EPL = HD/32 (at least 1) elements of a row a lane owns
  enum { EPL = HD >= 32 ? HD / 32 : 1 };
  float v[EPL];
  __device__ __forceinline__ void load(const float* p) {
    if (EPL % 4 == 0) {
#pragma unroll
      for (int i = 0; i < EPL; i += 4) {
        float4 f = *reinterpret_cast<const float4*>(p + i);
        v[i] = f.x; v[i + 1] = f.y; v[i + 2] = f.z; v[i + 3] = f.w;
      }
    } else if (EPL == 2) {
      float2 f = *reinterpret_cast<const float2*>(p);
      v[0] = f.x; v[1] = f.y;
    } else {
      v[0] = *p;
    }
  }
};

// att_store writes a lane's EPL outputs of token t from column k: into
// out (T, width) and, when xf is set, split for wo (store_xf).
template <int EPL>
__device__ __forceinline__ void att_store(float* out, __nv_bfloat16* xf, int width, int t, int k, const float* v) {
  float* o = out + (long)t * width + k;
#pragma unroll
  for (int e = 0; e < EPL; e++) o[e] = v[e];
  if (!xf) return;
  if (EPL % 2 == 0) {
#pragma unroll
    for (int e = 0; e + 1 < EPL; e += 2) store_xf2(xf, width / 16, t, k + e, v[e], v[e + 1]);
  } else {
#pragma unroll
    for (int e = 0; e < EPL; e++) store_xf(xf, width / 16, t, k + e, v[e]);
  }
}

// att_quant is qx (quant.cu qx32) of the attention output for wo's
// quantized product, from the registers instead of a qx launch: lane
// holds elements [k, k+EPL) of row t of the (T, K) output, a 32-block
// spans 32/EPL lanes (HD a multiple of 32: gpu/cuda asks only then), a
// 16-group 16/EPL. The int8 and the (dx, dx*sum) pairs are qx's bits (max
// and integer sums do not depend on their order); the sums of squares are
// not written (wo has no norm). The whole warp calls it.
template <int EPL>
__device__ __forceinline__ void att_quant(int8_t* qo, int K, int t, int k, const float* v, int lane) {
  constexpr int LB = 32 / EPL, LG = 16 / EPL;  // lanes per 32-block, per 16-group
  int8_t* xq;
  float2* xm;
  float* ssp;
  qx_parts(qo, K, xq, xm, ssp);
  float amax = 0.f;
#pragma unroll
  for (int e = 0; e < EPL; e++) amax = fmaxf(amax, fabsf(v[e]));
#pragma unroll
  for (int o = LB / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = amax / 127.f;
  int sum = 0;
#pragma unroll
  for (int e = 0; e < EPL; e++) {
    const int q = d == 0.f ? 0 : (int)roundf(v[e] / d);
    xq[(long)t * K + k + e] = (int8_t)q;
    sum += q;
  }
#pragma unroll
  for (int o = LG / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane % LG == 0) xm[(long)t * (K / 16) + k / 16] = make_float2(d, d * float(sum));
}

// head_inv_rms is 1/sqrt(mean((x+bias)²) + eps) over one head's HD
// elements (bias may be null), summed by the warp; every lane gets it.
template <int HD>
__device__ __forceinline__ float head_inv_rms(const float* x, const float* bias, float eps, int lane) {
  float ss = 0.f;
#pragma unroll
  for (int e = lane; e < HD; e += 32) {
    const float v = x[e] + (bias ? bias[e] : 0.f);
    ss = fmaf(v, v, ss);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  return 1.f / sqrtf(ss / HD + eps);
}

// AttSmem is the attention block's shared memory, one struct for both
// paths (attn_body, attn_fixed: attn_fixed.cu) so that the kernel that
// picks one at run time allocates it once: the query rows (RoPE'd), a
// 32-slot chunk of K or V widened, the q/k head norms' 1/rms, and
// attn_fixed's table of each row's visible new slots (anc) and flags.
template <int HD, int RB>
struct AttSmem {
  __align__(16) float qs[RB][HD];
  __align__(16) float buf[32][HD + 4];
  float qinv[RB], kinv[MAXT];
  signed char anc[MAXT][MAXT];
  int last, virt, ident;
};

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
#pragma unroll
        for (int e = 0; e < EPL; e++) pacc[idx * HD + lane * EPL + e] = acc[i].v[e];
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
#pragma unroll
        for (int e = 0; e < EPL; e++) num[i][e] = fmaf(fq, __ldcg(pacc + (b + q) * HD + col + e), num[i][e]);
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
