// rigscope CUDA kernels: the Llama forward pass for batch 1 decode and for
// verifying up to 16 tokens, plus allreduce kernels over peer pointers.
// Activations are float32; weights are bf16, f16, f32 or Q8_0 (repacked on
// upload into an int8 matrix plus one f16 scale per 32 elements); every dot
// product accumulates in float32. Compiled to PTX by `go generate` (see
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

// ---------------------------------------------------------------- weights
// Weights are read once per step: load them without allocating in L1, so
// that L1 keeps the activations every block of a product re-reads.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
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
// Q8_0 repacked: qs (N, K) int8, scales (N, K/32) f16; chunk c covers
// elements [16c, 16c+16), scale index row*K/32 + c/2.
struct WQ8 {
  enum { E = 16 };
  static __device__ __forceinline__ void load(const void* w, const void* s, long row, int K, int c, float* o) {
    uint4 v = ld_stream(reinterpret_cast<const int4*>(static_cast<const int8_t*>(w) + row * K) + c);
    float d = __half2float(static_cast<const __half*>(s)[row * (K / 32) + c / 2]);
    const int8_t* q = reinterpret_cast<const int8_t*>(&v);
#pragma unroll
    for (int i = 0; i < 16; i++) o[i] = d * float(q[i]);
  }
};

// ------------------------------------------------- matrix-vector product
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
                                        int N, int K, int T, int mode, const float* __restrict__ g, float eps) {
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
  pdl_wait();
  for (int c = warp * 32 + lane; c < chunks; c += MV_WARPS * 32) {
    float wv[NW][ROWS][E];
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      long row = row0 + r < N ? row0 + r : N - 1;
      WT::load(w, ws, row, K, c, wv[0][r]);
      if (GLU) WT::load(w2, ws2, row, K, c, wv[NW - 1][r]);
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
          for (int r = 0; r < ROWS; r++)
#pragma unroll
            for (int i = 0; i < E; i++) acc[m][r][t] = fmaf(wv[m][r][i], xv[i], acc[m][r][t]);
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
    float inv = 1.f;
    if (NORM) {
      float q = 0.f;
#pragma unroll
      for (int k = 0; k < MV_WARPS; k++) q += red_ss[k][t];
      inv = rsqrtf(q / K + eps);
    }
    float s[NW];
#pragma unroll
    for (int m = 0; m < NW; m++) {
      s[m] = 0.f;
#pragma unroll
      for (int q = 0; q < MV_WARPS; q++) s[m] += red[q][m][r][t];
      s[m] *= inv;
    }
    float* o = out + (long)t * ldo + row;
    float v;
    if (GLU) {
      float gt = s[0];
      v = gt / (1.f + expf(-gt)) * s[NW - 1];
    } else {
      v = s[0];
    }
    if (mode == 1) *o += v; else *o = v;
  }
}

// mv_*: plain product (mode store/add); mvn_*: product of rmsnorm(x, g);
// glu_*: silu(rmsnorm(x, g).gate) * (rmsnorm(x, g).up).
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
      const void* ws2, int N, int K, int T, const float* g, float eps) {                               \
    mv_body<WT, NT, true, true>(out, ldo, x, w, ws, w2, ws2, N, K, T, 0, g, eps);                      \
  }
#define MV_ALL(NAME, WT) MV_INST(NAME, WT, 1) MV_INST(NAME, WT, 2) MV_INST(NAME, WT, 4) MV_INST(NAME, WT, 8) MV_INST(NAME, WT, 16)
MV_ALL(bf16, WBF16)
MV_ALL(f16, WF16)
MV_ALL(f32, WF32)
MV_ALL(q8, WQ8)

// ------------------------------------- tensor-core product (bf16 weights)
// Weights tiled at upload (gpu/cuda/weights.go): tile (nt, kt) is rows
// [16nt, 16nt+16) x cols [16kt, 16kt+16), 512 bytes, tiles row-major;
// lane L's 16 bytes are its mma.m16n8k16 A fragment: with g = L/4,
// c = L%4, elements W[g][2c..2c+1], W[g+8][2c..], W[g][2c+8..], W[g+8][2c+8..].
// x (T, K) f32 becomes the B fragment (k x tokens) split into bf16 hi + lo,
// both multiplied, so the products keep about 16 bits of x's mantissa and
// every token's result is computed the same way whatever T is.
// Block: TC_WARPS warps own 16 rows and split the k tiles, TC_U tiles in
// flight per warp; the hi and lo products go to separate accumulators (two
// independent mma chains), summed at the end. NTT n-tiles of 8 tokens (T <= 8*NTT). mode, GLU, NORM
// as in mv_body.
#define TC_WARPS 16
#define TC_U 4
__device__ __forceinline__ void mma_bf16(float* c, uint4 a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned bf16x2_bits(__nv_bfloat162 h) { return *reinterpret_cast<unsigned*>(&h); }

template <int NTT, bool GLU, bool NORM>
__device__ __forceinline__ void tc_body(float* __restrict__ out, int ldo, const float* __restrict__ x,
                                        const uint4* w, const uint4* w2, int N, int K, int T, int mode,
                                        const float* __restrict__ g, float eps) {
  constexpr int NW = GLU ? 2 : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int grp = lane >> 2, tig = lane & 3;
  const int KT = K / 16;
  const uint4* wt[NW];
  wt[0] = w + (long)blockIdx.x * KT * 32 + lane;
  if (GLU) wt[NW - 1] = w2 + (long)blockIdx.x * KT * 32 + lane;
  float acc[NW][NTT][4], accl[NW][NTT][4];
  float ss[NTT];
#pragma unroll
  for (int j = 0; j < NTT; j++) {
    ss[j] = 0.f;
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int i = 0; i < 4; i++) acc[m][j][i] = accl[m][j][i] = 0.f;
  }
  pdl_wait();
  for (int kt0 = warp * TC_U; kt0 < KT; kt0 += TC_WARPS * TC_U) {
    uint4 a[TC_U][NW];
#pragma unroll
    for (int u = 0; u < TC_U; u++)
#pragma unroll
      for (int m = 0; m < NW; m++)
        a[u][m] = kt0 + u < KT ? ld_stream(wt[m] + (long)(kt0 + u) * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < TC_U; u++) {
      if (kt0 + u >= KT) break;  // warp-uniform
      const int k = (kt0 + u) * 16 + 2 * tig;
      float2 g0 = make_float2(1.f, 1.f), g1 = g0;
      if (NORM) {
        g0 = *reinterpret_cast<const float2*>(g + k);
        g1 = *reinterpret_cast<const float2*>(g + k + 8);
      }
#pragma unroll
      for (int j = 0; j < NTT; j++) {
        const int t = grp + 8 * j;
        float2 x0 = make_float2(0.f, 0.f), x1 = x0;
        if (t < T) {
          x0 = *reinterpret_cast<const float2*>(x + (long)t * K + k);
          x1 = *reinterpret_cast<const float2*>(x + (long)t * K + k + 8);
        }
        if (NORM) {
          ss[j] = fmaf(x0.x, x0.x, fmaf(x0.y, x0.y, fmaf(x1.x, x1.x, fmaf(x1.y, x1.y, ss[j]))));
          x0.x *= g0.x; x0.y *= g0.y; x1.x *= g1.x; x1.y *= g1.y;
        }
        __nv_bfloat162 h0 = __floats2bfloat162_rn(x0.x, x0.y), h1 = __floats2bfloat162_rn(x1.x, x1.y);
        float2 f0 = __bfloat1622float2(h0), f1 = __bfloat1622float2(h1);
        __nv_bfloat162 l0 = __floats2bfloat162_rn(x0.x - f0.x, x0.y - f0.y);
        __nv_bfloat162 l1 = __floats2bfloat162_rn(x1.x - f1.x, x1.y - f1.y);
#pragma unroll
        for (int m = 0; m < NW; m++) {
          mma_bf16(acc[m][j], a[u][m], bf16x2_bits(h0), bf16x2_bits(h1));
          mma_bf16(accl[m][j], a[u][m], bf16x2_bits(l0), bf16x2_bits(l1));
        }
      }
    }
  }
  pdl_trigger();
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int j = 0; j < NTT; j++)
#pragma unroll
      for (int i = 0; i < 4; i++) acc[m][j][i] += accl[m][j][i];
  // acc[m][j]: rows grp, grp+8 of the tile x tokens 8j+2tig, 8j+2tig+1.
  __shared__ float red[TC_WARPS][NW][16][8 * NTT];
  __shared__ float red_ss[TC_WARPS][8 * NTT];
#pragma unroll
  for (int j = 0; j < NTT; j++) {
#pragma unroll
    for (int m = 0; m < NW; m++) {
      red[warp][m][grp][8 * j + 2 * tig] = acc[m][j][0];
      red[warp][m][grp][8 * j + 2 * tig + 1] = acc[m][j][1];
      red[warp][m][grp + 8][8 * j + 2 * tig] = acc[m][j][2];
      red[warp][m][grp + 8][8 * j + 2 * tig + 1] = acc[m][j][3];
    }
    if (NORM) {  // token grp+8j: the 4 lanes of the group hold its 16 k of each tile
      float v = ss[j];
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
      if (tig == 0) red_ss[warp][8 * j + grp] = v;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 16 * 8 * NTT; i += blockDim.x) {
    const int r = i / (8 * NTT), t = i % (8 * NTT);
    const long row = (long)blockIdx.x * 16 + r;
    if (t >= T || row >= N) continue;
    float inv = 1.f;
    if (NORM) {
      float q = 0.f;
#pragma unroll
      for (int wq = 0; wq < TC_WARPS; wq++) q += red_ss[wq][t];
      inv = rsqrtf(q / K + eps);
    }
    float sv[NW];
#pragma unroll
    for (int m = 0; m < NW; m++) {
      sv[m] = 0.f;
#pragma unroll
      for (int wq = 0; wq < TC_WARPS; wq++) sv[m] += red[wq][m][r][t];
      sv[m] *= inv;
    }
    float v = sv[0];
    if (GLU) v = sv[0] / (1.f + expf(-sv[0])) * sv[NW - 1];
    float* o = out + (long)t * ldo + row;
    if (mode == 1) *o += v; else *o = v;
  }
}

// tc_N: plain (mode store/add); tcn_N: of rmsnorm(x, g); tcglu_N: GLU of
// rmsnorm(x, g). N = n-tiles (1: T <= 8, 2: T <= 16). grid rows/16.
#define TC_INST(NTT)                                                                            \
  extern "C" __global__ void __launch_bounds__(TC_WARPS * 32) tc_##NTT(                             \
      float* out, int ldo, const float* x, const uint4* w, int N, int K, int T, int mode) {             \
    tc_body<NTT, false, false>(out, ldo, x, w, 0, N, K, T, mode, 0, 0.f);                         \
  }                                                                                                      \
  extern "C" __global__ void __launch_bounds__(TC_WARPS * 32) tcn_##NTT(                            \
      float* out, int ldo, const float* x, const uint4* w, int N, int K, int T, const float* g, float eps) { \
    tc_body<NTT, false, true>(out, ldo, x, w, 0, N, K, T, 0, g, eps);                             \
  }                                                                                                      \
  extern "C" __global__ void __launch_bounds__(TC_WARPS * 32) tcglu_##NTT(                          \
      float* out, int ldo, const float* x, const uint4* w, const uint4* w2, int N, int K, int T,         \
      const float* g, float eps) {                                                                       \
    tc_body<NTT, true, true>(out, ldo, x, w, w2, N, K, T, 0, g, eps);                             \
  }
TC_INST(1)
TC_INST(2)

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
extern "C" __global__ void embed_q8(float* x, const void* w, const void* ws, const int* tok, int dim) { embed_body<WQ8>(x, w, ws, tok, dim); }

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

// ----------------------------------------------------------- attention
// One launch per layer does RoPE, the KV-cache store and attention for all
// T tokens (decode, or verify with a causal or tree mask), split over the
// cache length (flash-decoding style).
//
// qkv (T, ldq) holds q (hq*HD), k (hk*HD), v (hk*HD) per token; cs, sn
// (maxPos, HD/2) are the RoPE tables; Kc, Vc (slots, hk*HD) the layer's
// cache. out (T, hq*HD).
//
// grid (hk, S, RG), block 128 (4 warps). Block (h, s, rg) serves KV head h
// and the query rows r = t*G + g (token t, query head h*G + g, G = hq/hk)
// in [rg*4*RPW, +4*RPW) (RPW 1 or 2: more rows make more row groups,
// which keeps each block's merge short); warp w owns RPW of those rows, lane j owns slot
// j of each 32-slot chunk, so scores and the online softmax stay in
// registers. Split s covers the cached slots [s*per, (s+1)*per) ∩ [0, base)
// with per a multiple of 32; the last split also owns the T new slots: it
// rotates their k, stores k and v in the cache and attends to them. With
// S > 1 each block writes partials (pm, pl: (hk, G*MAXT, S); pacc: (...,
// HD)) and the last block of (h, rg) to finish, counted in cnt (reset to 0
// after use), merges them.
#define ATT_WARPS 4
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

template <int HD, int RPW>
__device__ __forceinline__ void attn_body(float* out, float* pm, float* pl, float* pacc, unsigned* cnt,
                                          const float* qkv, int ldq, float* Kc, float* Vc, const Step* st,
                                          const float* __restrict__ cs, const float* __restrict__ sn,
                                          int hq, int hk, float scale, int interleaved) {
  constexpr int RB = ATT_WARPS * RPW, HALF = HD / 2, EPL = Vec<HD>::EPL;
  __shared__ __align__(16) float qs[RB][HD];
  __shared__ int last;
  const int h = blockIdx.x, s = blockIdx.y, S = gridDim.y, rg = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int T = st->T, base = st->base, G = hq / hk, R = G * T;
  const int r0 = rg * RB, rn = min(RB, R - r0);
  const int width = hk * HD;
  const int per = max(64, ((base + S - 1) / S + 31) / 32 * 32);
  const int active = (base + per - 1) / per;  // splits with cached slots

  // Chunks of 32 slots: n0 over the cached range [lo0, hi0), then (last
  // split) one over the new slots [base, base+T). Each chunk of K and V is
  // loaded by the whole block at once (coalesced, all loads in flight) into
  // registers, one chunk ahead: the first before the prologue when it is
  // cached, the next while this one's V products run.
  constexpr int NL = 32 * HD / 4 / (ATT_WARPS * 32);  // float4 per thread per chunk
  const int lo0 = min(base, s * per), hi0 = min(base, (s + 1) * per);
  const int n0 = (hi0 - lo0 + 31) / 32, nc = n0 + (s == S - 1 && T > 0 ? 1 : 0);
  float4 kr[NL], vr[NL];
  auto load_chunk = [&](int c) {
    const int j0 = c < n0 ? lo0 + 32 * c : base, cntj = min(32, (c < n0 ? hi0 : base + T) - j0);
#pragma unroll
    for (int i = 0; i < NL; i++) {
      int f = threadIdx.x + i * ATT_WARPS * 32, sl = f / (HD / 4), c4 = f % (HD / 4);
      if (sl < cntj) {
        long off = (long)(j0 + sl) * width + h * HD + 4 * c4;
        kr[i] = *reinterpret_cast<const float4*>(Kc + off);
        vr[i] = *reinterpret_cast<const float4*>(Vc + off);
      } else {
        kr[i] = make_float4(0.f, 0.f, 0.f, 0.f);
        vr[i] = kr[i];
      }
    }
  };
  if (n0 > 0) load_chunk(0);  // cached slots: written by earlier steps
  pdl_wait();

  // RoPE on this block's query rows, into shared memory.
  for (int i = threadIdx.x; i < rn * HALF; i += blockDim.x) {
    int rl = i / HALF, j = i % HALF, r = r0 + rl, t = r / G;
    const float* x = qkv + (long)t * ldq + (h * G + r % G) * HD;
    int p = st->pos[t];
    float c = cs[(long)p * HALF + j], sv = sn[(long)p * HALF + j];
    int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
    float xa = x[a], xb = x[b];
    qs[rl][a] = xa * c - xb * sv;
    qs[rl][b] = xa * sv + xb * c;
  }
  // The last split stores the new tokens' rotated k and their v.
  if (s == S - 1) {
    for (int i = threadIdx.x; i < T * HALF; i += blockDim.x) {
      int t = i / HALF, j = i % HALF;
      const float* k = qkv + (long)t * ldq + hq * HD + h * HD;
      const float* v = k + hk * HD;
      int p = st->pos[t];
      float c = cs[(long)p * HALF + j], sv = sn[(long)p * HALF + j];
      int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
      float ka = k[a], kb = k[b];
      float* kc = Kc + (long)(base + t) * width + h * HD;
      float* vc = Vc + (long)(base + t) * width + h * HD;
      kc[a] = ka * c - kb * sv;
      kc[b] = ka * sv + kb * c;
      vc[a] = v[a];
      vc[b] = v[b];
    }
  }
  __syncthreads();

  float mrun[RPW], lrun[RPW];
  Vec<HD> acc[RPW];
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    mrun[i] = -INFINITY;
    lrun[i] = 0.f;
#pragma unroll
    for (int e = 0; e < EPL; e++) acc[i].v[e] = 0.f;
  }
  if (n0 == 0 && nc > 0) load_chunk(0);  // new slots only: after the prologue stored them
  __shared__ __align__(16) float buf[32][HD + 4];
  for (int c = 0; c < nc; c++) {
    {
      const int j0 = c < n0 ? lo0 + 32 * c : base, hi = c < n0 ? hi0 : base + T;
      __syncthreads();  // the previous chunk's V reads are done
#pragma unroll
      for (int i = 0; i < NL; i++) {
        int f = threadIdx.x + i * ATT_WARPS * 32;
        *reinterpret_cast<float4*>(&buf[f / (HD / 4)][4 * (f % (HD / 4))]) = kr[i];
      }
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
#pragma unroll
      for (int i = 0; i < NL; i++) {
        int f = threadIdx.x + i * ATT_WARPS * 32;
        *reinterpret_cast<float4*>(&buf[f / (HD / 4)][4 * (f % (HD / 4))]) = vr[i];
      }
      __syncthreads();
      if (c + 1 < nc) load_chunk(c + 1);
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

  pdl_trigger();
  const long rows = (long)G * MAXT;  // partial rows per KV head
  if (S == 1) {
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int rl = warp * RPW + i, r = r0 + rl;
      if (rl < rn && lane * EPL < HD) {
        float* o = out + (long)(r / G) * hq * HD + (h * G + r % G) * HD + lane * EPL;
#pragma unroll
        for (int e = 0; e < EPL; e++) o[e] = acc[i].v[e] / lrun[i];
      }
    }
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
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&cnt[h * gridDim.z + rg], 1u) == (unsigned)(S - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  // Merge the splits that saw slots, [0, active) and S-1: lane q holds
  // split q's max and sum (S <= 32).
  for (int rl = warp; rl < rn; rl += ATT_WARPS) {
    const int r = r0 + rl;
    const long b = ((long)h * rows + r) * S;
    const bool valid = lane < S && (lane < active || lane == S - 1);
    const float m = valid ? __ldcg(pm + b + lane) : -INFINITY;
    const float l = valid ? __ldcg(pl + b + lane) : 0.f;
    float M = m;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    const float f = valid && m != -INFINITY ? __expf(m - M) : 0.f;
    float den = f * l;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) den += __shfl_xor_sync(0xffffffffu, den, o);
    float num[EPL];
#pragma unroll
    for (int e = 0; e < EPL; e++) num[e] = 0.f;
    const int col = min(lane * EPL, HD - EPL);
    const int nq = active < S ? active + 1 : S;
#pragma unroll 16
    for (int k = 0; k < nq; k++) {
      const int q = k < active ? k : S - 1;
      const float fq = __shfl_sync(0xffffffffu, f, q);
#pragma unroll
      for (int e = 0; e < EPL; e++) num[e] = fmaf(fq, __ldcg(pacc + (b + q) * HD + col + e), num[e]);
    }
    if (lane * EPL < HD) {
      float* o = out + (long)(r / G) * hq * HD + (h * G + r % G) * HD + lane * EPL;
#pragma unroll
      for (int e = 0; e < EPL; e++) o[e] = num[e] / den;
    }
  }
  if (threadIdx.x == 0) cnt[h * gridDim.z + rg] = 0;
}

#define ATT_INST(HD, RPW)                                                                                    \
  extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32) attn_##HD##_##RPW(                            \
      float* out, float* pm, float* pl, float* pacc, unsigned* cnt, const float* qkv, int ldq, float* Kc,    \
      float* Vc, const Step* st, const float* cs, const float* sn, int hq, int hk, float scale, int inter) { \
    attn_body<HD, RPW>(out, pm, pl, pacc, cnt, qkv, ldq, Kc, Vc, st, cs, sn, hq, hk, scale, inter);         \
  }
#define ATT_ALL(HD) ATT_INST(HD, 1) ATT_INST(HD, 2)
ATT_ALL(16)
ATT_ALL(32)
ATT_ALL(64)
ATT_ALL(128)
ATT_ALL(256)

// ------------------------------------------------------ argmax / sample
__device__ __forceinline__ float uniform01(unsigned seed, unsigned row, unsigned i) {
  unsigned x = seed * 0x9E3779B9u ^ (row * 0x85EBCA6Bu) ^ (i * 0xC2B2AE35u);
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return (float(x >> 8) + 0.5f) * (1.0f / 16777216.0f);
}

// ids[r] = argmax of logits row r (lowest index on ties), or with
// st->temp > 0 a sample from softmax(logits/temp) by the Gumbel-max trick
// (the noise of element i depends only on seed, row and i). grid (AM_BLOCKS,
// rows), block 256: block b scans a slice, writes its best to part, and the
// last block of the row to finish (counted in cnt, reset after) reduces.
#define AM_BLOCKS 32
__device__ __forceinline__ void am_better(float& best, int& besti, float v, int i) {
  if (v > best || (v == best && i < besti)) { best = v; besti = i; }
}
extern "C" __global__ void argmax_rows(int* ids, const float* logits, int vocab, const Step* st, float2* part,
                                       unsigned* cnt) {
  __shared__ float bv[8];
  __shared__ int bi[8];
  __shared__ int last;
  pdl_wait();
  const int row = blockIdx.y, nb = gridDim.x;
  const float* lr = logits + (long)row * vocab;
  const float temp = st->temp;
  const int per = (vocab + nb - 1) / nb, lo = blockIdx.x * per, hi = min(vocab, lo + per);
  float best = -INFINITY;
  int besti = 0x7fffffff;
  for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    float v = lr[i];
    if (temp > 0.f) v = v / temp - __logf(-__logf(uniform01(st->seed, row, i)));
    am_better(best, besti, v, i);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, best, o);
    int oi = __shfl_xor_sync(0xffffffffu, besti, o);
    am_better(best, besti, ov, oi);
  }
  if (lane == 0) { bv[warp] = best; bi[warp] = besti; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); w++) am_better(best, besti, bv[w], bi[w]);
    part[row * nb + blockIdx.x] = make_float2(best, __int_as_float(besti));
    __threadfence();
    last = atomicAdd(&cnt[row], 1u) == (unsigned)(nb - 1);
  }
  __syncthreads();
  if (!last || warp != 0) return;
  __threadfence();
  best = -INFINITY;
  besti = 0x7fffffff;
  for (int b = lane; b < nb; b += 32) {
    float2 p = __ldcg(part + row * nb + b);
    am_better(best, besti, p.x, __float_as_int(p.y));
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, best, o);
    int oi = __shfl_xor_sync(0xffffffffu, besti, o);
    am_better(best, besti, ov, oi);
  }
  if (lane == 0) {
    ids[row] = besti == 0x7fffffff ? 0 : besti;
    cnt[row] = 0;
  }
}

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
// base+j, j in order (path ascending, path[j] >= j). grid layers.
extern "C" __global__ void kv_keep(float* K, float* V, long slots, int width, int base, const int* path, int np) {
  long off = (long)blockIdx.x * slots * width;
  for (int j = 0; j < np; j++) {
    long src = off + (long)(base + path[j]) * width, dst = off + (long)(base + j) * width;
    if (src != dst)
      for (int i = threadIdx.x; i < width; i += blockDim.x) { K[dst + i] = K[src + i]; V[dst + i] = V[src + i]; }
    __syncthreads();
  }
}

// Elementwise out += a (the residual add after an allreduce).
extern "C" __global__ void add_inplace(float* out, const float* a, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) out[i] += a[i];
}
