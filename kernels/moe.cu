// rigscope CUDA kernels: a sparse mixture-of-experts MLP (Mixtral,
// Qwen3-MoE) for the step's T tokens, the whole block on the device so the
// step stays one CUDA graph (gpu/cuda/moe.go; the CPU's oracle is
// engine/model/moe_forward.go, moe.go's route):
//
//   moe_route   xn = rmsnorm(x) * g; logits = router · xn; softmax or
//               sigmoid scores; choice = scores + bias (DeepSeek-V3's
//               correction bias, for choosing only); with groups, only the
//               topk_group best groups (a group scores its two best
//               choices) are chosen from; top k of the choices (ties to
//               the lower id), ids ascending, weights the unbiased scores
//               (divided by their sum with norm_topk, times scale) grid T
//   moe_glu_W   h[t,j] = silu(gate_e · xn[t]) * (up_e · xn[t]),
//               e = ids[t,j]                                grid (fl/8, T*k)
//   moe_down_W  o[t] = init[t] + sum over j ascending of w[t,j] *
//               (down_e · h[t,j]) (init: the shared expert's output, or
//               0); x[t] += o[t] (add) or part[t] = o[t]    grid (dim/8, T)
//
// Experts are stacked: gate and up (E*fl, dim) with expert e's rows at
// e*fl, down (E*dim, fl) with expert e's rows at e*dim, so a (token, slot)
// reads only its expert's rows. Each output is one warp's dot product over
// the row in a fixed order, whatever T is, and a token's slots are summed
// in ascending expert id (the CPU's order), so a verify row equals its
// decode row bit for bit. Launched with programmatic dependent launch like
// every step kernel (pdl_wait before the first read).

#define MOE_MAXE 512  // most experts moe_route scores (gpu/cuda refuses more)
#define MOE_MAXK 16   // most experts per token
#define MOE_MAXG 64   // most expert groups
#define MOE_MAXDIM 8192  // widest hidden size moe_route norms in shared memory
#define MOE_WARPS 8   // warps per block (one output row each) in glu and down

__device__ __forceinline__ float moe_f(float v) { return v; }
__device__ __forceinline__ float moe_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float moe_f(__nv_bfloat16 v) { return __bfloat162float(v); }

// moe_dot is one warp's w · x over K (w a row of WT, x float32), lane 0's
// total returned: 16-byte loads when the row is aligned and K a multiple of
// their elements, else one element per lane; a fixed order either way.
template <class WT>
__device__ __forceinline__ float moe_dot(const WT* __restrict__ w, const float* __restrict__ x, int K) {
  constexpr int E = 16 / sizeof(WT);
  const int lane = threadIdx.x & 31;
  float s = 0.f;
  if (K % E == 0 && (reinterpret_cast<uintptr_t>(w) & 15) == 0) {
    // Unrolled so that a lane has several loads in flight (the sums stay
    // in the same order).
#pragma unroll 4
    for (int c = lane; c < K / E; c += 32) {
      uint4 v = ld_stream(reinterpret_cast<const uint4*>(w) + c);
      const WT* e = reinterpret_cast<const WT*>(&v);
#pragma unroll
      for (int i = 0; i < E; i++) s = fmaf(moe_f(e[i]), x[c * E + i], s);
    }
  } else {
    for (int i = lane; i < K; i += 32) s = fmaf(moe_f(w[i]), x[i], s);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

// moe_logits: logits (T, E) = router · (rmsnorm(x[t]) * g), grid (E/8,
// T), block 256: a warp per expert, so the router's E·dim floats are read
// by E/8 blocks at once (moe_route alone would read them with one block
// per token). The products are moe_route's own (the same normed x, the
// same dot), so the logits do not depend on which kernel computed them.
extern "C" __global__ void moe_logits(float* logits, const float* x, const float* g, const float* router, int dim, int E, float eps) {
  pdl_wait();
  __shared__ float xs[MOE_MAXDIM];
  const long t = blockIdx.y;
  const float* xr = x + t * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
  const float inv = 1.f / sqrtf(block_sum2(ss, 0.f).x / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) xs[i] = xr[i] * inv * g[i];
  __syncthreads();
  const int e = blockIdx.x * MOE_WARPS + (threadIdx.x >> 5);
  if (e < E) {
    const float s = moe_dot<float>(router + (long)e * dim, xs, dim);
    if ((threadIdx.x & 31) == 0) logits[t * E + e] = s;
  }
  pdl_trigger();
}

// moe_route: one block (256 threads) per token t. xn (T, dim) the normed
// activations, ids and wts (T, k); router f32 (E, dim). The router is
// replicated: every rank computes the same choice from the same x.
// sigmoid 1: each score is its logit's sigmoid (in double, rounded to
// float, as the CPU), else a softmax over the logits; bias (E) or null is
// added to the scores to choose; groups > 1: E/groups experts per group,
// topkGroups groups chosen from (moe.go's route, in its order). logits
// (T, E), when not null, are the router's logits moe_logits computed
// (router is then not read), else this block computes them.
extern "C" __global__ void moe_route(float* xn, int* ids, float* wts, const float* x, const float* g,
                                     const float* router, int dim, int E, int k, int normTopK, float scale, float eps,
                                     int sigmoid, const float* bias, int groups, int topkGroups, const float* logits) {
  pdl_wait();
  __shared__ float lg[MOE_MAXE], ch[MOE_MAXE];  // logits then scores; the choice
  __shared__ unsigned char tk[MOE_MAXE];        // taken by the top-k so far
  __shared__ float xs[MOE_MAXDIM];               // xn[t], which the router products read
  const long t = blockIdx.x;
  const float* xr = x + t * dim;
  float* xo = xn + t * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
  const float inv = 1.f / sqrtf(block_sum2(ss, 0.f).x / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = xr[i] * inv * g[i];
    xs[i] = v;
    xo[i] = v;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (logits) {
    for (int e = threadIdx.x; e < E; e += blockDim.x) lg[e] = logits[t * E + e];
  } else {
    for (int e = warp; e < E; e += nw) {
      const float s = moe_dot<float>(router + (long)e * dim, xs, dim);
      if (lane == 0) lg[e] = s;
    }
  }
  __syncthreads();
  pdl_trigger();
  if (warp != 0) return;
  // Warp 0 scores and chooses. Softmax with the max subtracted and exp in
  // double rounded to float (as the CPU's softmaxExact; the sum is the
  // lanes' partial sums, in a fixed order), or each logit's sigmoid.
  if (sigmoid) {
    for (int e = lane; e < E; e += 32) lg[e] = (float)(1.0 / (1.0 + exp(-(double)lg[e])));
  } else {
    float m = -INFINITY;
    for (int e = lane; e < E; e += 32) m = fmaxf(m, lg[e]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.f;
    for (int e = lane; e < E; e += 32) {
      lg[e] = (float)exp((double)(lg[e] - m));
      sum += lg[e];
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    sum = __shfl_sync(0xffffffffu, sum, 0);  // lane 0's order for every lane
    for (int e = lane; e < E; e += 32) lg[e] /= sum;
  }
  for (int e = lane; e < E; e += 32) {
    ch[e] = bias ? lg[e] + bias[e] : lg[e];
    tk[e] = 0;
  }
  __syncwarp();
  if (groups > 1 && lane == 0) {
    // A group's score is the sum of its two best choices; the topkGroups
    // best groups (the lower index on ties) keep their choices, the
    // others' become 0 (transformers' masked_fill).
    const int per = E / groups;
    float gs[MOE_MAXG];
    for (int gi = 0; gi < groups; gi++) {
      float a = -INFINITY, b = -INFINITY;
      for (int e = gi * per; e < (gi + 1) * per; e++) {
        const float v = ch[e];
        if (v > a) { b = a; a = v; } else if (v > b) b = v;
      }
      gs[gi] = a + b;
    }
    unsigned long long keep = 0;
    for (int n = 0; n < topkGroups; n++) {
      int best = -1;
      for (int gi = 0; gi < groups; gi++)
        if (!(keep >> gi & 1) && (best < 0 || gs[gi] > gs[best])) best = gi;
      keep |= 1ull << best;
    }
    for (int gi = 0; gi < groups; gi++)
      if (!(keep >> gi & 1))
        for (int e = gi * per; e < (gi + 1) * per; e++) ch[e] = 0.f;
  }
  __syncwarp();
  // Top k by repeated selection: the largest not yet taken, the lower id
  // on ties; then ids ascending.
  int sel[MOE_MAXK];
  for (int j = 0; j < k; j++) {
    float bv = 0.f;
    int bi = E;  // none yet
    for (int e = lane; e < E; e += 32)
      if (!tk[e] && (bi == E || ch[e] > bv)) { bv = ch[e]; bi = e; }
    for (int o = 16; o > 0; o >>= 1) {
      const float v = __shfl_xor_sync(0xffffffffu, bv, o);
      const int i = __shfl_xor_sync(0xffffffffu, bi, o);
      if (i < E && (bi == E || v > bv || (v == bv && i < bi))) { bv = v; bi = i; }
    }
    if (bi >= E) bi = j;  // no expert left (k > E is refused): keep the ids in range
    sel[j] = bi;
    if (lane == 0) tk[bi] = 1;
    __syncwarp();
  }
  if (lane != 0) return;
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && sel[j] < sel[j - 1]; j--) { int s = sel[j]; sel[j] = sel[j - 1]; sel[j - 1] = s; }
  float w[MOE_MAXK];
  float ws = 0.f;
  for (int j = 0; j < k; j++) { w[j] = lg[sel[j]]; ws += w[j]; }
  if (normTopK && sigmoid) ws += 1e-20f;
  for (int j = 0; j < k; j++) {
    float v = w[j];
    if (normTopK) v /= ws;
    if (scale != 0.f && scale != 1.f) v *= scale;
    ids[t * k + j] = sel[j];
    wts[t * k + j] = v;
  }
}

// moe_glu: h (T*k, fl) for the (token, slot) blockIdx.y, rows
// blockIdx.x*MOE_WARPS + warp of its expert.
template <class WT>
__device__ void moe_glu_body(float* h, const int* ids, const float* xn, const WT* gate, const WT* up, int dim, int fl, int k) {
  pdl_wait();
  const int tj = blockIdx.y, t = tj / k;
  const int f = blockIdx.x * MOE_WARPS + (threadIdx.x >> 5);
  if (f < fl) {
    const long row = (long)ids[tj] * fl + f;
    const float* xr = xn + (long)t * dim;
    const float a = moe_dot<WT>(gate + row * dim, xr, dim);
    const float b = moe_dot<WT>(up + row * dim, xr, dim);
    if ((threadIdx.x & 31) == 0) h[(long)tj * fl + f] = a / (1.f + expf(-a)) * b;
  }
  pdl_trigger();
}

// moe_down: out (T, dim) for token blockIdx.y, rows blockIdx.x*MOE_WARPS +
// warp: the token's k slots summed in order (ids ascending), then added to
// x (add 1: TP 1) or stored as this rank's partial sums (add 0).
template <class WT>
__device__ void moe_down_body(float* out, const int* ids, const float* wts, const float* h, const WT* down, int dim, int fl, int k, int add,
                              const float* init) {
  pdl_wait();
  const int t = blockIdx.y;
  const int d = blockIdx.x * MOE_WARPS + (threadIdx.x >> 5);
  if (d < dim) {
    float acc = init ? init[(long)t * dim + d] : 0.f;
    for (int j = 0; j < k; j++) {
      const int tj = t * k + j;
      const float y = moe_dot<WT>(down + ((long)ids[tj] * dim + d) * fl, h + (long)tj * fl, fl);
      acc = fmaf(wts[tj], y, acc);
    }
    if ((threadIdx.x & 31) == 0) {
      const long o = (long)t * dim + d;
      out[o] = add ? out[o] + acc : acc;
    }
  }
  pdl_trigger();
}

#define MOE_ALL(S, WT)                                                                                          \
  extern "C" __global__ void moe_glu_##S(float* h, const int* ids, const float* xn, const WT* gate, const WT* up, \
                                         int dim, int fl, int k) {                                              \
    moe_glu_body<WT>(h, ids, xn, gate, up, dim, fl, k);                                                         \
  }                                                                                                             \
  extern "C" __global__ void moe_down_##S(float* out, const int* ids, const float* wts, const float* h,         \
                                          const WT* down, int dim, int fl, int k, int add, const float* init) { \
    moe_down_body<WT>(out, ids, wts, h, down, dim, fl, k, add, init);                                           \
  }
MOE_ALL(bf16, __nv_bfloat16)
MOE_ALL(f16, __half)
MOE_ALL(f32, float)
