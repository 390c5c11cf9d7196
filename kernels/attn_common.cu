// rigscope CUDA kernels: what both attentions use (included by
// attention.cu, before attn_body and attn_fixed.cu): the KV cache's loads
// and stores, the trace stamps (ATT_TRACE builds), KVChunk, Vec, the
// output's stores, the head norms' 1/rms and the block's shared memory.

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
// ld_run and st_run move a lane's run of EPL partial values (pacc: rows
// of HD floats from a cuMemAlloc base, the run at a multiple of EPL, so a
// run of 4 or 8 is 16-byte aligned) in 16- or 8-byte accesses: one L2
// request a lane for what EPL scalar ones did (ncu, results/s43: the
// scalar ones read and wrote 4 times the sectors they needed). The loads
// bypass L1 (__ldcg), as the partials are other blocks' writes. Same
// values, same order of arithmetic after them.
template <int EPL>
__device__ __forceinline__ void ld_run(const float* p, float* o) {
  if (EPL % 4 == 0) {
#pragma unroll
    for (int e = 0; e < EPL; e += 4) {
      const float4 v = __ldcg(reinterpret_cast<const float4*>(p + e));
      o[e] = v.x, o[e + 1] = v.y, o[e + 2] = v.z, o[e + 3] = v.w;
    }
  } else if (EPL % 2 == 0) {
#pragma unroll
    for (int e = 0; e < EPL; e += 2) {
      const float2 v = __ldcg(reinterpret_cast<const float2*>(p + e));
      o[e] = v.x, o[e + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int e = 0; e < EPL; e++) o[e] = __ldcg(p + e);
  }
}
template <int EPL>
__device__ __forceinline__ void st_run(float* p, const float* v) {
  if (EPL % 4 == 0) {
#pragma unroll
    for (int e = 0; e < EPL; e += 4) *reinterpret_cast<float4*>(p + e) = make_float4(v[e], v[e + 1], v[e + 2], v[e + 3]);
  } else if (EPL % 2 == 0) {
#pragma unroll
    for (int e = 0; e < EPL; e += 2) *reinterpret_cast<float2*>(p + e) = make_float2(v[e], v[e + 1]);
  } else {
#pragma unroll
    for (int e = 0; e < EPL; e++) p[e] = v[e];
  }
}

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
