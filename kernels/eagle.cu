// rigscope CUDA kernels: the EAGLE-3 head's own (included by kernels.cu,
// after attention.cu): its layer input (eagle_in) and the block sums it
// and the draft-token kernels (argmax_d2t_in, headout.cu) share.

// ------------------------------------------------------ EAGLE-3 head
// The head's one decoder layer runs through the kernels above; eagle_in is
// its own (its input), and argmax_d2t (argmax.cu, included after this file) hands each drafted token to
// the next draft step.

// group_sync<NT> is __syncthreads with NT 0, else a barrier of the
// block's first NT threads (named barrier 1; NT a multiple of 32).
template <int NT = 0>
__device__ __forceinline__ void group_sync() {
  if (NT == 0) __syncthreads();
  else asm volatile("bar.sync 1, %0;" ::"n"(NT) : "memory");
}

// block_sum2 sums a and b over the block (blockDim.x a multiple of 32, at
// most 1024), or with NT > 0 over its first NT threads (only they call
// it); every calling thread gets the totals, summed in the same order as
// a block of NT threads would.
template <int NT = 0>
__device__ __forceinline__ float2 block_sum2(float a, float b) {
  __shared__ float2 red[32];
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = NT ? NT / 32 : blockDim.x >> 5;
  if (lane == 0) red[warp] = make_float2(a, b);
  group_sync<NT>();
  float2 s = make_float2(0.f, 0.f);
  for (int w = 0; w < nw; w++) { s.x += red[w].x; s.y += red[w].y; }
  group_sync<NT>();
  return s;
}

// eagle_in builds the head's layer input for the step's T rows (grid T,
// block 256): cat[t] = (rmsnorm(emb[tokens[t]]) * win, rmsnorm(h[t]) *
// whid), cat (T, 2*dim), h (T, dim); with nbr (norm_before_residual) also
// h[t] = rmsnorm(h[t]) * whid, where the residual stream starts.
// eagle_in_row is one row of it (the whole block): c (2*dim), hr (dim),
// tok the row's token. NT > 0: the block's first NT threads run it (only
// they call it), bitwise as a block of NT threads would; EC and HC bound
// the embedding and hidden elements a thread keeps in registers (EC 32 and
// HC 16 for eagle_in; rows longer than they allow take the loop, with the
// same sums).
template <class WT, int NT = 0, int EC = 32, int HC = 16>
__device__ void eagle_in_row(float* c, float* hr, const void* w, const void* ws, long tok, const float* win,
                             const float* whid, int dim, float eps, int nbr) {
  // Every load is issued before the first store (the loops below read back
  // nothing they wrote, and the stores to c and hr may alias the loads for
  // all the compiler knows, so a loop of load, store, load... ran one L2 or
  // DRAM round trip at a time: for the 8B-shaped head eagle_in cost 10 us of
  // a graphed draft step, now 4.4 us, measured by leaving it out with
  // RIGSCOPE_CUDA_SKIP; bench/cuda/results/s15/headstep). Each
  // thread keeps the elements it summed before (k = threadIdx.x + i *
  // blockDim.x, in that order), so the sums, and the row, are bitwise
  // those of the loop; dims past what the registers hold take the loop.
  constexpr int EI = WT::E >= EC ? 1 : EC / WT::E, HI = HC;
  const int ne = dim / WT::E, bd = NT ? NT : blockDim.x, tx = threadIdx.x;
  if (ne <= EI * bd && dim <= HI * bd) {
    float ev[EI][WT::E], hv[HI];
#pragma unroll
    for (int i = 0; i < EI; i++)
      if (tx + i * bd < ne) WT::load(w, ws, tok, dim, tx + i * bd, ev[i]);
#pragma unroll
    for (int i = 0; i < HI; i++)
      if (tx + i * bd < dim) hv[i] = hr[tx + i * bd];
    float se = 0.f, sh = 0.f;
#pragma unroll
    for (int i = 0; i < EI; i++)
      if (tx + i * bd < ne) {
#pragma unroll
        for (int e = 0; e < WT::E; e++) se += ev[i][e] * ev[i][e];
      }
#pragma unroll
    for (int i = 0; i < HI; i++)
      if (tx + i * bd < dim) sh += hv[i] * hv[i];
    const float2 ss = block_sum2<NT>(se, sh);
    const float ie = rsqrtf(ss.x / dim + eps), ih = rsqrtf(ss.y / dim + eps);
    float gw[EI][WT::E], gh[HI];
#pragma unroll
    for (int i = 0; i < EI; i++)
      if (tx + i * bd < ne) {
#pragma unroll
        for (int e = 0; e < WT::E; e++) gw[i][e] = win[(tx + i * bd) * WT::E + e];
      }
#pragma unroll
    for (int i = 0; i < HI; i++)
      if (tx + i * bd < dim) gh[i] = whid[tx + i * bd];
#pragma unroll
    for (int i = 0; i < EI; i++)
      if (tx + i * bd < ne) {
#pragma unroll
        for (int e = 0; e < WT::E; e++) c[(tx + i * bd) * WT::E + e] = ev[i][e] * ie * gw[i][e];
      }
#pragma unroll
    for (int i = 0; i < HI; i++)
      if (tx + i * bd < dim) {
        const float v = hv[i] * ih * gh[i];
        c[dim + tx + i * bd] = v;
        if (nbr) hr[tx + i * bd] = v;
      }
    return;
  }
  float se = 0.f, sh = 0.f;
  for (int k = threadIdx.x; k < dim / WT::E; k += (NT ? NT : blockDim.x)) {
    float v[WT::E];
    WT::load(w, ws, tok, dim, k, v);
#pragma unroll
    for (int i = 0; i < WT::E; i++) { c[k * WT::E + i] = v[i]; se += v[i] * v[i]; }
  }
  for (int k = threadIdx.x; k < dim; k += (NT ? NT : blockDim.x)) { float v = hr[k]; sh += v * v; }
  const float2 ss = block_sum2<NT>(se, sh);
  const float ie = rsqrtf(ss.x / dim + eps), ih = rsqrtf(ss.y / dim + eps);
  for (int k = threadIdx.x; k < dim / WT::E; k += (NT ? NT : blockDim.x)) {
#pragma unroll
    for (int i = 0; i < WT::E; i++) { const int j = k * WT::E + i; c[j] = c[j] * ie * win[j]; }
  }
  for (int k = threadIdx.x; k < dim; k += (NT ? NT : blockDim.x)) {
    const float v = hr[k] * ih * whid[k];
    c[dim + k] = v;
    if (nbr) hr[k] = v;
  }
}
template <class WT>
__device__ void eagle_in_body(float* cat, float* h, const void* w, const void* ws, const Step* st, const float* win,
                              const float* whid, int dim, float eps, int nbr) {
  pdl_wait();
  pdl_trigger();  // one block: the next product's blocks may be scheduled now (they wait for this one in pdl_wait)
  const int t = blockIdx.x;
  eagle_in_row<WT>(cat + (long)t * 2 * dim, h + (long)t * dim, w, ws, st->tokens[t], win, whid, dim, eps, nbr);
}
#define EAGLE_IN(NAME, WT)                                                                                          \
  extern "C" __global__ void eagle_in_##NAME(float* cat, float* h, const void* w, const void* ws, const Step* st,  \
                                             const float* win, const float* whid, int dim, float eps, int nbr) { \
    eagle_in_body<WT>(cat, h, w, ws, st, win, whid, dim, eps, nbr);                                                \
  }
EMBED_TYPES(EAGLE_IN)
