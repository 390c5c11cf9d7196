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

// ---------------------------------------------------------------- weights
// A chunk is the 16 bytes one lane loads: E elements of a weight row.
struct WBF16 {
  enum { E = 8 };
  static __device__ __forceinline__ void load(const void* w, const void*, long row, int K, int c, float* o) {
    uint4 v = __ldg(reinterpret_cast<const uint4*>(static_cast<const __nv_bfloat16*>(w) + row * K) + c);
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) { float2 f = __bfloat1622float2(h[i]); o[2 * i] = f.x; o[2 * i + 1] = f.y; }
  }
};
struct WF16 {
  enum { E = 8 };
  static __device__ __forceinline__ void load(const void* w, const void*, long row, int K, int c, float* o) {
    uint4 v = __ldg(reinterpret_cast<const uint4*>(static_cast<const __half*>(w) + row * K) + c);
    const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; i++) { float2 f = __half22float2(h[i]); o[2 * i] = f.x; o[2 * i + 1] = f.y; }
  }
};
struct WF32 {
  enum { E = 4 };
  static __device__ __forceinline__ void load(const void* w, const void*, long row, int K, int c, float* o) {
    float4 v = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(w) + row * K) + c);
    o[0] = v.x; o[1] = v.y; o[2] = v.z; o[3] = v.w;
  }
};
// Q8_0 repacked: qs (N, K) int8, scales (N, K/32) f16; chunk c covers
// elements [16c, 16c+16), scale index row*K/32 + c/2.
struct WQ8 {
  enum { E = 16 };
  static __device__ __forceinline__ void load(const void* w, const void* s, long row, int K, int c, float* o) {
    int4 v = __ldg(reinterpret_cast<const int4*>(static_cast<const int8_t*>(w) + row * K) + c);
    float d = __half2float(static_cast<const __half*>(s)[row * (K / 32) + c / 2]);
    const int8_t* q = reinterpret_cast<const int8_t*>(&v);
#pragma unroll
    for (int i = 0; i < 16; i++) o[i] = d * float(q[i]);
  }
};

// ------------------------------------------------- matrix-vector product
// out (T, ldo) [+]= x (T, K) . W(N, K)^T for rows [0, N). Each block owns
// ROWS rows; its MV_WARPS warps split K; lanes load 16 bytes per row per
// step. NT is the token bucket (T <= NT). mode 0: store; 1: add (residual);
// GLU: W2 is the up matrix and out = silu(x.W^T) * (x.W2^T).
template <class WT, int NT, bool GLU>
__device__ __forceinline__ void mv_body(float* __restrict__ out, int ldo, const float* __restrict__ x,
                                        const void* w, const void* ws, const void* w2, const void* ws2,
                                        int N, int K, int T, int mode) {
  constexpr int E = WT::E;
  constexpr int NW = GLU ? 2 : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long row0 = (long)blockIdx.x * ROWS;
  float acc[NW][ROWS][NT];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int t = 0; t < NT; t++) acc[m][r][t] = 0.f;
  const int chunks = K / E;
  for (int c = warp * 32 + lane; c < chunks; c += MV_WARPS * 32) {
    float wv[NW][ROWS][E];
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      long row = row0 + r < N ? row0 + r : N - 1;
      WT::load(w, ws, row, K, c, wv[0][r]);
      if (GLU) WT::load(w2, ws2, row, K, c, wv[NW - 1][r]);
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
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < ROWS; r++)
#pragma unroll
            for (int i = 0; i < E; i++) acc[m][r][t] = fmaf(wv[m][r][i], xv[i], acc[m][r][t]);
      }
    }
  }
  __shared__ float red[MV_WARPS][NW][ROWS][NT];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
      for (int t = 0; t < NT; t++) {
        float v = acc[m][r][t];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) red[warp][m][r][t] = v;
      }
  __syncthreads();
  for (int i = threadIdx.x; i < ROWS * NT; i += blockDim.x) {
    int r = i / NT, t = i % NT;
    long row = row0 + r;
    if (t >= T || row >= N) continue;
    float s[NW];
#pragma unroll
    for (int m = 0; m < NW; m++) {
      s[m] = 0.f;
#pragma unroll
      for (int q = 0; q < MV_WARPS; q++) s[m] += red[q][m][r][t];
    }
    float* o = out + (long)t * ldo + row;
    float v;
    if (GLU) {
      float g = s[0];
      v = g / (1.f + expf(-g)) * s[NW - 1];
    } else {
      v = s[0];
    }
    if (mode == 1) *o += v; else *o = v;
  }
}

#define MV_INST(NAME, WT, NT)                                                                          \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mv_##NAME##_##NT(                         \
      float* out, int ldo, const float* x, const void* w, const void* ws, int N, int K, int T, int mode) { \
    mv_body<WT, NT, false>(out, ldo, x, w, ws, 0, 0, N, K, T, mode);                                   \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) glu_##NAME##_##NT(                        \
      float* out, int ldo, const float* x, const void* w, const void* ws, const void* w2,              \
      const void* ws2, int N, int K, int T) {                                                          \
    mv_body<WT, NT, true>(out, ldo, x, w, ws, w2, ws2, N, K, T, 0);                                    \
  }
#define MV_ALL(NAME, WT) MV_INST(NAME, WT, 1) MV_INST(NAME, WT, 2) MV_INST(NAME, WT, 4) MV_INST(NAME, WT, 8) MV_INST(NAME, WT, 16)
MV_ALL(bf16, WBF16)
MV_ALL(f16, WF16)
MV_ALL(f32, WF32)
MV_ALL(q8, WQ8)

// ---------------------------------------------------------- small ops
// Embedding lookup: x[t] = emb[tokens[t]] dequantized. grid T.
template <class WT>
__device__ void embed_body(float* x, const void* w, const void* ws, const int* tokens, int dim) {
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

__device__ __forceinline__ float block_sum(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  float s = 0.f;
  for (int i = 0; i < nw; i++) s += sh[i];
  return s;
}

// RMSNorm of rows [first, first+rows) of x (., dim) into out (rows, dim). grid rows.
extern "C" __global__ void rmsnorm(float* out, const float* x, const float* w, int dim, float eps, int first) {
  __shared__ float sh[32];
  const float* xr = x + (long)(first + blockIdx.x) * dim;
  float* orow = out + (long)blockIdx.x * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, sh);
  float inv = rsqrtf(ss / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) orow[i] = xr[i] * inv * w[i];
}

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

// qkv (T, ld) holds q (hq*hd), k (hk*hd), v (hk*hd) per token. RoPE on q
// in place; rotated k and plain v stored in the cache at slot base+t.
// cs, sn: (maxPos, hd/2).
extern "C" __global__ void rope_store(float* qkv, int ld, float* Kc, float* Vc,
                                      const Step* st, const float* cs, const float* sn,
                                      int hq, int hk, int hd, int interleaved) {
  // grid (T, hq + hk): block (t, h) rotates head h of token t (k heads
  // also store k and v in the cache).
  int t = blockIdx.x, h = blockIdx.y, half = hd / 2;
  float* q = qkv;
  float* k = qkv + hq * hd;
  const float* v = qkv + hq * hd + hk * hd;
  int p = st->pos[t];
  long slot = st->base + t;
  const float* c = cs + (long)p * half;
  const float* s = sn + (long)p * half;
  int width = hk * hd;
  float* x = h < hq ? q + (long)t * ld + h * hd : k + (long)t * ld + (h - hq) * hd;
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + half;
    float xa = x[a], xb = x[b];
    float ra = xa * c[j] - xb * s[j], rb = xa * s[j] + xb * c[j];
    if (h < hq) {
      x[a] = ra; x[b] = rb;
    } else {
      float* kc = Kc + slot * width + (h - hq) * hd;
      kc[a] = ra; kc[b] = rb;
    }
  }
  if (h >= hq)
    for (int i = threadIdx.x; i < hd; i += blockDim.x)
      Vc[slot * width + (h - hq) * hd + i] = v[(long)t * ld + (h - hq) * hd + i];
}

// ----------------------------------------------------------- attention
// Split phase: block (h, s) covers a contiguous range of the n = base+T
// visible slots for query head h and all T tokens, with an online softmax
// over sub-chunks of ACH slots. Writes partial max, sum and accumulators
// to m, l (T, hq, S) and acc (T, hq, S, hd). Block: ATT_THREADS threads,
// hd <= ATT_THREADS.
#define ACH 64
#define ATT_THREADS 128
extern "C" __global__ void __launch_bounds__(ATT_THREADS) attn_split(
    float* pm, float* pl, float* pacc, const float* q, int ldq, const float* Kc, const float* Vc,
    const Step* st, int hq, int hk, int hd, float scale) {
  __shared__ float qs[MAXT][256];
  __shared__ float sc[MAXT][ACH];
  __shared__ float mrun[MAXT], lrun[MAXT], alpha[MAXT];
  const int h = blockIdx.x, s = blockIdx.y, S = gridDim.y;
  const int T = st->T, base = st->base, n = base + T;
  const int kvh = h / (hq / hk), width = hk * hd;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int per = (n + S - 1) / S;
  const int lo = s * per, hi = min(n, lo + per);
  for (int i = threadIdx.x; i < T * hd; i += blockDim.x) {
    int t = i / hd, d = i % hd;
    qs[t][d] = q[(long)t * ldq + h * hd + d];
  }
  if (threadIdx.x < MAXT) { mrun[threadIdx.x] = -INFINITY; lrun[threadIdx.x] = 0.f; }
  float acc[MAXT];
#pragma unroll
  for (int t = 0; t < MAXT; t++) acc[t] = 0.f;
  __syncthreads();
  for (int j0 = lo; j0 < hi; j0 += ACH) {
    int cnt = min(ACH, hi - j0);
    // scores: warp w takes slots j0+w, j0+w+4, ...
    for (int jj = warp; jj < cnt; jj += ATT_THREADS / 32) {
      int j = j0 + jj;
      const float* kr = Kc + (long)j * width + kvh * hd;
      float kv[8];
#pragma unroll
      for (int e = 0; e < 8; e++) kv[e] = lane + 32 * e < hd ? kr[lane + 32 * e] : 0.f;
      for (int t = 0; t < T; t++) {
        float d = 0.f;
#pragma unroll
        for (int e = 0; e < 8; e++)
          if (lane + 32 * e < hd) d += kv[e] * qs[t][lane + 32 * e];
        for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        bool vis = j < base || ((st->mask[t] >> (j - base)) & 1u);
        if (lane == 0) sc[t][jj] = vis ? d * scale : -INFINITY;
      }
    }
    __syncthreads();
    // online softmax update: warp w handles tokens w, w+4, ...
    for (int t = warp; t < T; t += ATT_THREADS / 32) {
      float mx = -INFINITY;
      for (int jj = lane; jj < cnt; jj += 32) mx = fmaxf(mx, sc[t][jj]);
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      float mold = mrun[t], mnew = fmaxf(mold, mx);
      float sum = 0.f;
      for (int jj = lane; jj < cnt; jj += 32) {
        float p = mnew == -INFINITY ? 0.f : __expf(sc[t][jj] - mnew);
        sc[t][jj] = p;
        sum += p;
      }
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      float a = mold == -INFINITY ? 0.f : __expf(mold - mnew);
      __syncwarp();
      if (lane == 0) { alpha[t] = a; mrun[t] = mnew; lrun[t] = lrun[t] * a + sum; }
    }
    __syncthreads();
    int d = threadIdx.x;
    if (d < hd) {
#pragma unroll
      for (int t = 0; t < MAXT; t++)
        if (t < T) acc[t] *= alpha[t];
      for (int jj = 0; jj < cnt; jj++) {
        float vv = Vc[(long)(j0 + jj) * width + kvh * hd + d];
#pragma unroll
        for (int t = 0; t < MAXT; t++)
          if (t < T) acc[t] = fmaf(sc[t][jj], vv, acc[t]);
      }
    }
    __syncthreads();
  }
  int d = threadIdx.x;
#pragma unroll
  for (int t = 0; t < MAXT; t++) {
    if (t < T) {
      long idx = ((long)t * hq + h) * S + s;
      if (d < hd) pacc[idx * hd + d] = acc[t];
      if (d == 0) { pm[idx] = mrun[t]; pl[idx] = lrun[t]; }
    }
  }
}

// Combine phase: out (T, hq*hd). grid (hq, T), block hd.
extern "C" __global__ void attn_combine(float* out, const float* pm, const float* pl, const float* pacc,
                                        int hq, int hd, int S) {
  int h = blockIdx.x, t = blockIdx.y, d = threadIdx.x;
  long b = ((long)t * hq + h) * S;
  float M = -INFINITY;
  for (int s = 0; s < S; s++) M = fmaxf(M, pm[b + s]);
  float num = 0.f, den = 0.f;
  for (int s = 0; s < S; s++) {
    float m = pm[b + s];
    if (m == -INFINITY) continue;
    float f = __expf(m - M);
    den += f * pl[b + s];
    num += f * pacc[(b + s) * hd + d];
  }
  if (d < hd) out[((long)t * hq + h) * hd + d] = num / den;
}

// ------------------------------------------------------ argmax / sample
__device__ __forceinline__ float uniform01(unsigned seed, unsigned row, unsigned i) {
  unsigned x = seed * 0x9E3779B9u ^ (row * 0x85EBCA6Bu) ^ (i * 0xC2B2AE35u);
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return (float(x >> 8) + 0.5f) * (1.0f / 16777216.0f);
}

// ids[r] = argmax of logits row r (lowest index on ties), or with
// st->temp > 0 a sample from softmax(logits/temp) by the Gumbel-max trick.
// grid rows, block 1024.
extern "C" __global__ void argmax_rows(int* ids, const float* logits, int vocab, const Step* st) {
  __shared__ float bv[32];
  __shared__ int bi[32];
  const float* lr = logits + (long)blockIdx.x * vocab;
  float temp = st->temp;
  float best = -INFINITY;
  int besti = 0x7fffffff;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    float v = lr[i];
    if (temp > 0.f) v = v / temp - __logf(-__logf(uniform01(st->seed, blockIdx.x, i)));
    if (v > best || (v == best && i < besti)) { best = v; besti = i; }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, best, o);
    int oi = __shfl_xor_sync(0xffffffffu, besti, o);
    if (ov > best || (ov == best && oi < besti)) { best = ov; besti = oi; }
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { bv[warp] = best; bi[warp] = besti; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); w++)
      if (bv[w] > best || (bv[w] == best && bi[w] < besti)) { best = bv[w]; besti = bi[w]; }
    ids[blockIdx.x] = besti == 0x7fffffff ? 0 : besti;
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

// --------------------------------------------------------- allreduce
// One shot: out[i] = sum over ranks r (in rank order) of bufs[r][i].
extern "C" __global__ void ar_oneshot(float* out, const float* const* bufs, int nranks, long n) {
  long n4 = n / 4;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 s = reinterpret_cast<const float4*>(bufs[0])[i];
    for (int r = 1; r < nranks; r++) {
      float4 v = reinterpret_cast<const float4*>(bufs[r])[i];
      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    reinterpret_cast<float4*>(out)[i] = s;
  }
  for (long i = n4 * 4 + blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    float s = bufs[0][i];
    for (int r = 1; r < nranks; r++) s += bufs[r][i];
    out[i] = s;
  }
}

// Two shot, phase 1 (reduce-scatter): dst[i] = sum_r bufs[r][i] for i in [lo, hi).
extern "C" __global__ void ar_reduce_range(float* dst, const float* const* bufs, int nranks, long lo, long hi) {
  for (long i = lo + blockIdx.x * (long)blockDim.x + threadIdx.x; i < hi; i += (long)gridDim.x * blockDim.x) {
    float s = bufs[0][i];
    for (int r = 1; r < nranks; r++) s += bufs[r][i];
    dst[i] = s;
  }
}

// Two shot, phase 2 (all-gather): dst[i] = src_of_owner(i)[i], the owner of
// i being the rank whose segment [n*r/R, n*(r+1)/R) holds it; me's own
// segment is skipped.
extern "C" __global__ void ar_gather(float* dst, const float* const* bufs, int nranks, int me, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    int r = (int)((i * nranks + nranks - 1) / n);  // smallest r with n*(r+1)/R > i, approx
    while (r > 0 && n * r / nranks > i) r--;
    while (r < nranks - 1 && n * (r + 1) / nranks <= i) r++;
    if (r != me) dst[i] = bufs[r][i];
  }
}

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
