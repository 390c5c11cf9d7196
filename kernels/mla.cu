// rigscope CUDA kernels: multi-head latent attention (DeepSeek-V2/V3,
// Kimi-K2) for the step's T tokens (gpu/cuda/mla.go; the CPU's oracle is
// engine/model/mla_forward.go). The products around them are the step's
// own (matvec): a = rmsnorm(x)·[QA; KVA]ᵀ (T, q rank + r + rope) before,
// q = qn·QBᵀ between, att·Woᵀ after. Here:
//
//   mla_qnorm   qn[t] = rmsnorm(a[t, :q rank]) * g (eps 1e-6)   grid T
//   mla_cache   cache[base+t] = (rmsnorm(a[t, q rank : q rank+r]) * g,
//               rope(a[t, q rank+r :], pos_t))                     grid T
//   mla_attend  per (token t, local head h), the up-projections absorbed:
//               qc = (W_UK_hᵀ·q_nope, rope(q_rope)); p = softmax(scale ·
//               qc·cache[s] over the slots s token t sees); lat = Σ p_s
//               cache[s][:r]; att[t,h] = W_UV_h·lat      grid (hl, T)
//
// The cache holds per slot only the normed latent and the rotated rope key
// (r + rope floats, float32), replicated on every rank. Every sum is
// float32 in an order that depends on the slot index only, not on T or on
// which later tokens are in the batch (a slot token t does not see adds
// exactly 0 to every sum), so a verify row equals its decode row bit for
// bit. Launched with programmatic dependent launch like every step kernel.

#define MLA_MAXW 1088  // most cached floats per slot (kv rank + rope): 1024 + 64
#define MLA_MAXQK 512  // most query dims per head (nope + rope)
#define MLA_CHUNK 128  // slots scored per pass of mla_attend
#define MLA_THREADS 256  // mla_attend's block (gpu/cuda/mla.go's mlaThreads)
#define MLA_PER ((MLA_MAXW + MLA_THREADS - 1) / MLA_THREADS)  // latent dims per thread

// mla_rmsnorm writes rmsnorm(in[0:n]) * g to out (the CPU's RMSNorm: x *
// (1/sqrt(mean(x²) + eps)) * g); the whole block calls it.
__device__ __forceinline__ void mla_rmsnorm(float* out, const float* in, const float* g, int n, float eps) {
  float ss = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss = fmaf(in[i], in[i], ss);
  const float inv = 1.f / sqrtf(block_sum2(ss, 0.f).x / n + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i] * inv * g[i];
}

// mla_qnorm: qn (T, qr) = rmsnorm(a[t, 0:qr]) * g; a's rows are lda apart.
extern "C" __global__ void mla_qnorm(float* qn, const float* a, int lda, int qr, const float* g, float eps) {
  pdl_wait();
  const long t = blockIdx.x;
  mla_rmsnorm(qn + t * qr, a + t * lda, g, qr, eps);
  pdl_trigger();
}

// mla_rope rotates v (rope floats) in place by position p's angles:
// interleaved pairs (2j, 2j+1), else halves (j, j+rope/2), as
// cpu.RopeTable.Apply. Threads [0, rope/2) of the block each do a pair.
__device__ __forceinline__ void mla_rope(float* v, const float* cs, const float* sn, int p, int rope, int inter) {
  const int half = rope / 2;
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    const int a = inter ? 2 * j : j, b = inter ? 2 * j + 1 : j + half;
    const float c = cs[(long)p * half + j], s = sn[(long)p * half + j];
    const float x0 = v[a], x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = inter ? x0 * s + x1 * c : x1 * c + x0 * s;
  }
}

// mla_cache: cache ((slots, r+rope) float32) slot base+t = (rmsnorm(
// a[t, off : off+r]) * g, rope(a[t, off+r : off+r+rope], pos[t])).
extern "C" __global__ void mla_cache(float* cache, const float* a, int lda, int off, const float* g, const Step* st,
                                     const float* cs, const float* sn, int r, int rope, float eps, int inter) {
  pdl_wait();
  const int t = blockIdx.x;
  const int w = r + rope;
  const float* in = a + (long)t * lda + off;
  float* row = cache + (long)(st->base + t) * w;
  mla_rmsnorm(row, in, g, r, eps);
  for (int i = threadIdx.x; i < rope; i += blockDim.x) row[r + i] = in[r + i];
  __syncthreads();
  mla_rope(row + r, cs, sn, st->pos[t], rope, inter);
  pdl_trigger();
}

// mla_attend: att (T, hl*vd) for token blockIdx.y, local head blockIdx.x.
// q (T, hl*(nope+rope)) the queries (rope dims not yet rotated); ukt (hl,
// r, nope) and uv (hl, vd, r) float32 the head's up-projections; cache
// (slots, r+rope). Token t sees slot s < base, and base+j when bit j of
// its mask is set. Block MLA_THREADS. Every sum is one warp's (lanes in a
// fixed order) or one thread's, in slot order.
extern "C" __global__ void mla_attend(float* att, const float* q, const float* cache, const float* ukt, const float* uv,
                                      const Step* st, const float* cs, const float* sn, int hl, int nope, int rope, int r,
                                      int vd, float scale, int inter) {
  pdl_wait();
  __shared__ float qh[MLA_MAXQK];     // the head's query, rope dims rotated
  __shared__ float qc[MLA_MAXW];      // absorbed query (r + rope)
  __shared__ float lat[MLA_MAXW];     // mixed latent (r), then the output's inputs
  __shared__ float sc[MLA_CHUNK];     // a chunk's scores, then weights
  const int h = blockIdx.x, t = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int qk = nope + rope, w = r + rope;
  const float* qr = q + ((long)t * hl + h) * qk;
  for (int i = threadIdx.x; i < qk; i += blockDim.x) qh[i] = qr[i];
  __syncthreads();
  mla_rope(qh + nope, cs, sn, st->pos[t], rope, inter);
  __syncthreads();
  // qc[j] = Σ_i ukt[h][j][i] q_nope[i] (a warp per j), qc[r:] = q_rope.
  const float* uk = ukt + (long)h * r * nope;
  for (int j = warp; j < r; j += nw) {
    float s = 0.f;
    for (int i = lane; i < nope; i += 32) s = fmaf(uk[(long)j * nope + i], qh[i], s);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) qc[j] = s;
  }
  for (int i = threadIdx.x; i < rope; i += blockDim.x) qc[r + i] = qh[nope + i];
  __syncthreads();
  // Online softmax over chunks of slots: m the running max, l the running
  // sum of exp(score - m), acc (each thread its latent dims) Σ exp(score -
  // m) cache[s]. A slot t does not see has weight exactly 0.
  const int base = st->base, n = base + st->T;
  const unsigned mask = st->mask[t];
  float m = -INFINITY, l = 0.f;
  float acc[MLA_PER];  // latent dims threadIdx.x + i*MLA_THREADS
#pragma unroll
  for (int i = 0; i < MLA_PER; i++) acc[i] = 0.f;
  for (int c0 = 0; c0 < n; c0 += MLA_CHUNK) {
    const int cn = min(MLA_CHUNK, n - c0);
    for (int k = warp; k < cn; k += nw) {
      const int s = c0 + k;
      const bool vis = s < base || (mask >> (s - base) & 1u);
      float d = 0.f;
      if (vis) {
        const float* kr = cache + (long)s * w;
        for (int i = lane; i < w; i += 32) d = fmaf(qc[i], kr[i], d);
        for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
      }
      if (lane == 0) sc[k] = vis ? d * scale : -INFINITY;
    }
    __syncthreads();
    float cm = -INFINITY;
    for (int k = 0; k < cn; k++) cm = fmaxf(cm, sc[k]);  // every thread, the same order
    const float mn = fmaxf(m, cm);
    __syncthreads();
    if (mn == -INFINITY) continue;  // nothing visible yet
    const float f = expf(m - mn);   // 0 for m = -inf
    for (int k = threadIdx.x; k < cn; k += blockDim.x) sc[k] = expf(sc[k] - mn);
    __syncthreads();
    float cl = 0.f;
    for (int k = 0; k < cn; k++) cl += sc[k];
    l = l * f + cl;
#pragma unroll
    for (int i = 0; i < MLA_PER; i++) {
      const int j = threadIdx.x + i * MLA_THREADS;
      if (j >= r) break;
      float a = 0.f;
      for (int k = 0; k < cn; k++) {
        const float p = sc[k];
        if (p != 0.f) a = fmaf(p, cache[(long)(c0 + k) * w + j], a);
      }
      acc[i] = acc[i] * f + a;
    }
    m = mn;
    __syncthreads();
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
  for (int i = 0; i < MLA_PER; i++) {
    const int j = threadIdx.x + i * MLA_THREADS;
    if (j < r) lat[j] = acc[i] * inv;
  }
  __syncthreads();
  pdl_trigger();
  // att[t,h][j] = Σ_i uv[h][j][i] lat[i] (a warp per j).
  const float* v = uv + (long)h * vd * r;
  float* out = att + ((long)t * hl + h) * vd;
  for (int j = warp; j < vd; j += nw) {
    float s = 0.f;
    for (int i = lane; i < r; i += 32) s = fmaf(v[(long)j * r + i], lat[i], s);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[j] = s;
  }
}
