// rigscope CUDA kernels: the Llama forward pass for batch 1 decode and for
// verifying up to 16 tokens, plus allreduce kernels over peer pointers.
// Activations are float32; weights are bf16, f16, f32, or ggml's Q4_K,
// Q5_K, Q6_K, Q4_0 and Q8_0 blocks as stored (quant.cu); every dot
// product accumulates in float32 (tensor-core products: tc.cu; quantized
// weights: quant.cu; attention: attention.cu; allreduce: allreduce.cu). Compiled to PTX by `go generate` (see
// README.md) and loaded with cu.LoadData.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define MAXT 16      // most tokens in one forward pass
#define ROWS 4       // weight rows per warp in the matrix-vector product
#define MV_WARPS 4   // warps per block (split over K) in the matrix-vector product

// --------------------------------------------- programmatic dependent launch
// The forward pass's kernels are launched with programmatic stream
// serialization on sm_90 (gpu/cuda: launchPDL): a kernel may start while the
// previous one drains, so each calls pdl_wait before it touches anything
// the previous kernels write (and before it writes anything they read), and
// pdl_trigger once its main work is issued. Both are no-ops otherwise.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// arrive_last: whether this block is the last of n blocks to arrive at
// *c, the block's global stores so far published to the other blocks,
// and, in the last one, every other block's published (read them with
// __ldcg: L1 is not coherent). The barrier orders the block's stores
// before thread 0's release and thread 0's acquire before the block's
// later loads (CUTLASS's semaphore): one acq_rel atomic, where a
// __threadfence in every thread before and after (fence.sc.gpu, and an L1
// invalidation) waited twice for the whole memory system. last: the
// block's shared flag. atom_add_acq_rel is that atomic alone, for a
// handshake one thread makes (argmax_accept's rows: cycle.cu).
__device__ __forceinline__ unsigned atom_add_acq_rel(unsigned* c) {
  unsigned old;
  asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(old) : "l"(c) : "memory");
  return old;
}
__device__ __forceinline__ bool arrive_last(unsigned* c, unsigned n, int& last) {
  __syncthreads();
  if (threadIdx.x == 0) last = atom_add_acq_rel(c) == n - 1;
  __syncthreads();
  return last;
}

// An empty kernel in the chain (gpu/cuda: RIGSCOPE_CUDA_NOP, measurements
// only): the cost of one more kernel boundary.
extern "C" __global__ void nop() {
  pdl_wait();
  pdl_trigger();
}

// ---------------------------------------------------------------- weights
// Weights are read once per step: load them without allocating in L1, so
// that L1 keeps the activations every block of a product re-reads.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// ld_stream_pinned is ld_stream as a volatile asm: the compiler keeps it
// where it is written (a load issued before pdl_wait on purpose).
__device__ __forceinline__ uint4 ld_stream_pinned(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// prefetch_l2: the line at p into L2, no register written. The products
// issue it for every weight chunk a lane will read before pdl_wait: the
// weights are never written by the kernels before them, so under
// programmatic dependent launch their reads from DRAM overlap the
// previous kernel's tail and the loads after the wait find them in L2
// (the loop itself is unchanged: loading registers before the wait made
// ptxas hoist every later iteration's loads too, 24 to 100 more registers).
// l2_prefetch is 1 unless gpu/cuda sets it to 0 at load, which it does
// unless RIGSCOPE_CUDA_L2PF=1 (measured slower on the H200: tuning.go):
// then no product prefetches.
__device__ int l2_prefetch = 1;
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
// A chunk is the 16 bytes one lane loads: E elements of a weight row.
struct WBF16 {
  enum { E = 8 };
  static __device__ __forceinline__ void load(const void* w, const void*, long row, int K, int c, float* o) {
    uint4 v = ld_stream(reinterpret_cast<const uint4*>(static_cast<const __nv_bfloat16*>(w) + row * K) + c);
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) { float2 f = __bfloat1622float2(h[i]); o[2 * i] = f.x; o[2 * i + 1] = f.y; }
  }
};
struct WF16 {
  enum { E = 8 };
  static __device__ __forceinline__ void load(const void* w, const void*, long row, int K, int c, float* o) {
    uint4 v = ld_stream(reinterpret_cast<const uint4*>(static_cast<const __half*>(w) + row * K) + c);
    const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) { float2 f = __half22float2(h[i]); o[2 * i] = f.x; o[2 * i + 1] = f.y; }
  }
};
struct WF32 {
  enum { E = 4 };
  static __device__ __forceinline__ void load(const void* w, const void*, long row, int K, int c, float* o) {
    uint4 v = ld_stream(reinterpret_cast<const float4*>(static_cast<const float*>(w) + row * K) + c);
    o[0] = __uint_as_float(v.x); o[1] = __uint_as_float(v.y); o[2] = __uint_as_float(v.z); o[3] = __uint_as_float(v.w);
  }
};
// finish_out stores (mode 1: adds) one output of a matrix product from
// its W per-warp partial sums part(q, m) (m < NW: the matrix, or GLU's gate
// and up) and, with NORM, the per-warp sums of squares ss(q) of x: summed
// over the warps in order, times rmsnorm's 1/rms, then silu(gate) * up for
// GLU. Shared by mv_body and tc_body (tc.cu), so both round the same way.
// gelu_tanh is PyTorch's tanh approximation (gelu_pytorch_tanh, Gemma 3's
// MLP): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
__device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// act 1: the GLU's activation is gelu_tanh rather than silu (a uniform
// branch per output, so the GLU kernels take it as an argument instead of
// doubling their variants).
template <int NW, int W, bool NORM, bool GLU, typename Part, typename SS>
__device__ __forceinline__ float finish_out(float* o, int mode, Part part, SS ss, int K, float eps, int act = 0) {
  float inv = 1.f;
  if (NORM) {
    float q = 0.f;
#pragma unroll
    for (int wq = 0; wq < W; wq++) q += ss(wq);
    inv = rsqrtf(q / K + eps);
  }
  float sv[NW];
#pragma unroll
  for (int m = 0; m < NW; m++) {
    sv[m] = 0.f;
#pragma unroll
    for (int wq = 0; wq < W; wq++) sv[m] += part(wq, m);
    sv[m] *= inv;
  }
  float v = sv[0];
  if (GLU) v = act ? gelu_tanh(sv[0]) * sv[NW - 1] : sv[0] / (1.f + expf(-sv[0])) * sv[NW - 1];
  if (mode == 1) *o += v; else *o = v;
  return v;
}

// store_xf writes element (t, k) of an activation x (T, K) into xf, x split
// the way the tensor-core products (tc.cu) split it for their B fragments:
// bf16 hi = rn(v) and lo = rn(v - hi), where lane (t%8)*4 + (k%8)/2 of k
// tile k/16 and token group t/8 loads it, 16 bytes a lane (hi of k and k+1,
// hi of k+8 and k+9, then the same lo). The kernels that write wo's and
// down's inputs (attention, GLU) store both forms, so those products load
// x ready-made (tcf*) instead of splitting it in every block. xf_at is
// where hi of elements k&~1 and (k&~1)+1 go; lo is 4 bf16 further.
__device__ __forceinline__ long xf_at(int KT, int t, int k) {
  return (((long)(t >> 3) * KT + (k >> 4)) * 32 + (t & 7) * 4 + ((k & 7) >> 1)) * 8 + ((k >> 3) & 1) * 2;
}
__device__ __forceinline__ void store_xf(__nv_bfloat16* xf, int KT, int t, int k, float v) {
  __nv_bfloat16* p = xf + xf_at(KT, t, k) + (k & 1);
  const __nv_bfloat16 hi = __float2bfloat16_rn(v);
  p[0] = hi;
  p[4] = __float2bfloat16_rn(v - __bfloat162float(hi));
}

// store_xf2 is store_xf of elements k and k+1 (k even): one 4-byte store
// each for hi and lo.
__device__ __forceinline__ void store_xf2(__nv_bfloat16* xf, int KT, int t, int k, float v0, float v1) {
  __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(xf + xf_at(KT, t, k));
  const __nv_bfloat162 hi = __floats2bfloat162_rn(v0, v1);
  const float2 f = __bfloat1622float2(hi);
  p[0] = hi;
  p[2] = __floats2bfloat162_rn(v0 - f.x, v1 - f.y);
}

// xsplit stores x (T, K) as xf (store_xf) for cuda-check. grid-stride.
extern "C" __global__ void xsplit(__nv_bfloat16* xf, const float* x, int T, int K) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)T * K; i += (long)gridDim.x * blockDim.x)
    store_xf(xf, K / 16, (int)(i / K), (int)(i % K), x[i]);
}

// ------------------------------------------------- matrix-vector product
// Scaled<WT>: the weight type loads values without their block scale
// (WT::load_raw) and gives the scale of a chunk (WT::scale), and the
// product applies it once per chunk to the chunk's partial sum rather than
// to every element (FP8: fp8.cu). Decoding then stays lazy in the FMA loop:
// a scale multiply per element made the compiler keep every decoded
// weight in registers (glu_f8_1: 197 registers against 72). WLoad picks
// the load.
template <class WT> struct Scaled { enum { value = 0 }; };
template <class WT, bool S = Scaled<WT>::value> struct WLoad {
  static __device__ __forceinline__ void load(const void* w, const void* ws, long row, int K, int c, float* o, float& s) {
    WT::load(w, ws, row, K, c, o);
    s = 1.f;
  }
};
template <class WT> struct WLoad<WT, true> {
  static __device__ __forceinline__ void load(const void* w, const void* ws, long row, int K, int c, float* o, float& s) {
    WT::load_raw(w, row, K, c, o);
    s = WT::scale(ws, row, c);
  }
};

// out (T, ldo) [+]= x (T, K) . W(N, K)^T for rows [0, N). Each block owns
// ROWS rows; its MV_WARPS warps split K; lanes load 16 bytes per row per
// step. NT is the token bucket (T <= NT). mode 0: store; 1: add (residual).
// GLU: W2 is the up matrix and out = silu(x.W^T) * (x.W2^T).
// NORM: x is first RMS-normalized with weight g, fused: the block computes
// sum(x*x) of each token while it reads x for the product, and
// rmsnorm(x).w = rsqrt(mean(x*x) + eps) * ((x*g).w).
template <class WT, int NT, bool GLU, bool NORM>
__device__ __forceinline__ void mv_body(float* __restrict__ out, int ldo, const float* __restrict__ x,
                                        const void* w, const void* ws, const void* w2, const void* ws2,
                                        int N, int K, int T, int mode, const float* __restrict__ g, float eps,
                                        int act = 0) {
  constexpr int E = WT::E;
  constexpr int NW = GLU ? 2 : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long row0 = (long)blockIdx.x * ROWS;
  float acc[NW][ROWS][NT];
  float ss[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) {
    ss[t] = 0.f;
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < ROWS; r++) acc[m][r][t] = 0.f;
  }
  const int chunks = K / E;
  if (l2_prefetch) {
    for (int c = warp * 32 + lane; c < chunks; c += MV_WARPS * 32)  // every chunk is 16 bytes (prefetch_l2)
#pragma unroll
      for (int r = 0; r < ROWS; r++) {
        const long row = row0 + r < N ? row0 + r : N - 1;
        prefetch_l2(static_cast<const uint8_t*>(w) + (row * (K / E) + c) * 16);
        if (GLU) prefetch_l2(static_cast<const uint8_t*>(w2) + (row * (K / E) + c) * 16);
      }
  }
  pdl_wait();
  for (int c = warp * 32 + lane; c < chunks; c += MV_WARPS * 32) {
    float wv[NW][ROWS][E], sc[NW][ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      long row = row0 + r < N ? row0 + r : N - 1;
      WLoad<WT>::load(w, ws, row, K, c, wv[0][r], sc[0][r]);
      if (GLU) WLoad<WT>::load(w2, ws2, row, K, c, wv[NW - 1][r], sc[NW - 1][r]);
    }
    float gv[E];
    if (NORM) {
      const float4* gp = reinterpret_cast<const float4*>(g + (long)c * E);
#pragma unroll
      for (int i = 0; i < E / 4; i++) {
        float4 f = gp[i];
        gv[4 * i] = f.x; gv[4 * i + 1] = f.y; gv[4 * i + 2] = f.z; gv[4 * i + 3] = f.w;
      }
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
      if (t < T) {
        float xv[E];
        const float4* xp = reinterpret_cast<const float4*>(x + (long)t * K + (long)c * E);
#pragma unroll
        for (int i = 0; i < E / 4; i++) {
          float4 f = xp[i];
          xv[4 * i] = f.x; xv[4 * i + 1] = f.y; xv[4 * i + 2] = f.z; xv[4 * i + 3] = f.w;
        }
        if (NORM) {
#pragma unroll
          for (int i = 0; i < E; i++) {
            ss[t] = fmaf(xv[i], xv[i], ss[t]);
            xv[i] *= gv[i];
          }
        }
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < ROWS; r++) {
            if (Scaled<WT>::value) {
              float p = 0.f;
#pragma unroll
              for (int i = 0; i < E; i++) p = fmaf(wv[m][r][i], xv[i], p);
              acc[m][r][t] = fmaf(p, sc[m][r], acc[m][r][t]);
            } else {
#pragma unroll
              for (int i = 0; i < E; i++) acc[m][r][t] = fmaf(wv[m][r][i], xv[i], acc[m][r][t]);
            }
          }
      }
    }
  }
  pdl_trigger();
  __shared__ float red[MV_WARPS][NW][ROWS][NT];
  __shared__ float red_ss[MV_WARPS][NT];
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < ROWS; r++) {
        float v = acc[m][r][t];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) red[warp][m][r][t] = v;
      }
    if (NORM) {
      float v = ss[t];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) red_ss[warp][t] = v;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < ROWS * NT; i += blockDim.x) {
    int r = i / NT, t = i % NT;
    long row = row0 + r;
    if (t >= T || row >= N) continue;
    finish_out<NW, MV_WARPS, NORM, GLU>(
        out + (long)t * ldo + row, mode, [&](int q, int m) { return red[q][m][r][t]; },
        [&](int q) { return red_ss[q][t]; }, K, eps, act);
  }
}

// mv_*: plain product (mode store/add); mvn_*: product of rmsnorm(x, g);
// glu_*: silu(rmsnorm(x, g).gate) * (rmsnorm(x, g).up), or with act 1
// gelu_tanh (Gemma 3).
#define MV_INST(NAME, WT, NT)                                                                          \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mv_##NAME##_##NT(                         \
      float* out, int ldo, const float* x, const void* w, const void* ws, int N, int K, int T, int mode) { \
    mv_body<WT, NT, false, false>(out, ldo, x, w, ws, 0, 0, N, K, T, mode, 0, 0.f);                    \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mvn_##NAME##_##NT(                        \
      float* out, int ldo, const float* x, const void* w, const void* ws, int N, int K, int T,         \
      const float* g, float eps) {                                                                     \
    mv_body<WT, NT, false, true>(out, ldo, x, w, ws, 0, 0, N, K, T, 0, g, eps);                        \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) glu_##NAME##_##NT(                        \
      float* out, int ldo, const float* x, const void* w, const void* ws, const void* w2,              \
      const void* ws2, int N, int K, int T, const float* g, float eps, int act) {                      \
    mv_body<WT, NT, true, true>(out, ldo, x, w, ws, w2, ws2, N, K, T, 0, g, eps, act);                 \
  }
#define MV_ALL(NAME, WT) MV_INST(NAME, WT, 1) MV_INST(NAME, WT, 2) MV_INST(NAME, WT, 4) MV_INST(NAME, WT, 8) MV_INST(NAME, WT, 16)
MV_ALL(bf16, WBF16)
MV_ALL(f16, WF16)
MV_ALL(f32, WF32)

#include "tc.cu"
#include "quant.cu"
#include "quant_mma.cu"
#include "quant_mqk.cu"
#include "quant_mh.cu"

// ---------------------------------------------------------- small ops
// Embedding lookup: x[t] = emb[tokens[t]] dequantized. grid T.
template <class WT>
__device__ void embed_body(float* x, const void* w, const void* ws, const int* tokens, int dim) {
  pdl_wait();
  int t = blockIdx.x;
  long row = tokens[t];
  for (int c = threadIdx.x; c < dim / WT::E; c += blockDim.x) {
    float v[WT::E];
    WT::load(w, ws, row, dim, c, v);
#pragma unroll
    for (int i = 0; i < WT::E; i++) x[(long)t * dim + c * WT::E + i] = v[i];
  }
}
extern "C" __global__ void embed_bf16(float* x, const void* w, const void* ws, const int* tok, int dim) { embed_body<WBF16>(x, w, ws, tok, dim); }
extern "C" __global__ void embed_f16(float* x, const void* w, const void* ws, const int* tok, int dim) { embed_body<WF16>(x, w, ws, tok, dim); }
extern "C" __global__ void embed_f32(float* x, const void* w, const void* ws, const int* tok, int dim) { embed_body<WF32>(x, w, ws, tok, dim); }
#define EMBED_Q(NAME, QT) \
  extern "C" __global__ void embed_##NAME(float* x, const void* w, const void* ws, const int* tok, int dim) { embed_body<WQ<QT>>(x, w, ws, tok, dim); }
EMBED_Q(q4k, QQ4K)
EMBED_Q(q5k, QQ5K)
EMBED_Q(q6k, QQ6K)
EMBED_Q(q40, QQ40)
EMBED_Q(q80, QQ80)
// EMBED_TYPES(X): X(name, row reader) for every type an embedding table
// may have: the kernels that read a token's row (eagle_in, argmax_d2t_in,
// tcnam) are instantiated for each (gpu/cuda: kernelSuffix), as embed_*
// above (spelled out: its WQ<QT>> is the token stream the images were
// built from).
#define EMBED_TYPES(X)                                                                                  \
  X(bf16, WBF16) X(f16, WF16) X(f32, WF32) X(q4k, WQ<QQ4K>) X(q5k, WQ<QQ5K>) X(q6k, WQ<QQ6K>) X(q40, WQ<QQ40>) \
  X(q80, WQ<QQ80>)

// Step parameters written by the host before each (graph) launch.
struct Step {
  int base;            // cached positions before this batch
  int T;               // tokens in the batch
  float temp;          // sampling temperature (0: argmax)
  unsigned seed;       // sampling seed for this step
  int tokens[MAXT];    // (T)
  int pos[MAXT];       // RoPE positions (T)
  unsigned mask[MAXT]; // bit j of mask[t]: token t sees batch token j
};

#include "attention.cu"

#include "eagle.cu"

#include "argmax.cu"

#include "headout.cu"
#include "cycle.cu"

// ---------------------------------------------------- synthetic weights
// Fill n elements with uniform values in [-a, a) from a hash of (seed, i).
extern "C" __global__ void fill_bf16(__nv_bfloat16* w, long n, unsigned seed, float a) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    w[i] = __float2bfloat16((uniform01(seed, (unsigned)(i >> 32), (unsigned)i) * 2.f - 1.f) * a);
}
extern "C" __global__ void fill_f32(float* w, long n, unsigned seed, float a, float bias) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    w[i] = bias + (uniform01(seed, (unsigned)(i >> 32), (unsigned)i) * 2.f - 1.f) * a;
}

// Read bandwidth probe: stream n16 16-byte words (4 loads in flight per
// thread), fold them so the loads are kept, write nothing that matters.
extern "C" __global__ void read_bw(unsigned* out, const uint4* p, long n16) {
  unsigned acc = 0;
  const long stride = (long)gridDim.x * blockDim.x;
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = ld_stream(p + i), b = ld_stream(p + i + stride), c = ld_stream(p + i + 2 * stride), d = ld_stream(p + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n16; i += stride) {
    uint4 a = ld_stream(p + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9E3779B9u) out[0] = acc;
}

#include "allreduce.cu"

// KV cache (layers, slots, width) for K and V: keep slots base+path[j] as
// base+j, j in order (path ascending, path[j] >= j). grid layers. width
// counts 32-bit words (a slot's bytes / 4), so that one kernel moves the
// bits of a float32 and of a bf16 cache.
extern "C" __global__ void kv_keep(unsigned* K, unsigned* V, long slots, int width, int base, const int* path, int np) {
  long off = (long)blockIdx.x * slots * width;
  for (int j = 0; j < np; j++) {
    long src = off + (long)(base + path[j]) * width, dst = off + (long)(base + j) * width;
    if (src != dst)
      for (int i = threadIdx.x; i < width; i += blockDim.x) { K[dst + i] = K[src + i]; V[dst + i] = V[src + i]; }
    __syncthreads();
  }
}

// out[i] = in[i] for n floats: a layer's output copied out inside a step
// (EAGLE-3 features, gpu/cuda capture.go), a kernel so that it joins the
// step's programmatic dependent launches where a memcpy node would not.
extern "C" __global__ void copy_f32(float* out, const float* in, long n) {
  pdl_wait();
  pdl_trigger();
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) out[i] = in[i];
}

// Elementwise out += a (the residual add after an allreduce).
extern "C" __global__ void add_inplace(float* out, const float* a, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) out[i] += a[i];
}

#include "arch.cu"
#include "moe.cu"
#include "mla.cu"
#include "gemm.cu"
#include "cublas.cu"
#include "flash.cu"
#include "sample.cu"
#include "sample_bins.cu"

#include "fp8.cu"
#include "rate.cu"
