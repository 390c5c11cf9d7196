// rigscope CUDA kernels: an EAGLE-3 head's draft token in one launch
// (included by kernels.cu after argmax.cu; gpu/cuda head.go,
// Tuning.HeadOut).

// tcnam<W>_<emb>: the head's lm_head product of one output row x (K) with
// its final norm (tcn<W>_1's own code, tc_body, so the logits are bitwise
// those of the product; they are stored to logits as well), then the
// argmax over the draft vocabulary (lowest index on ties, as argmax_body):
// each block reduces its 16 rows into part[blockIdx.x], the last block to
// finish (counted in cnt, reset after) reduces the parts, writes ids[0],
// out[oi] = d2t[id] and, with next set, next->tokens[0]; with cat set its
// first 256 threads then build the next draft step's layer input as
// argmax_d2t_in's tail does (eagle_in_row of the drafted token and x,
// bitwise as eagle_in's block of 256 threads). grid ceil(N/16), block W*32.
// One dependent launch less per draft step than tcn + argmax_d2t_in.
// Registers are capped at tcn<W>_1's 32 (2048 threads an SM), so that as
// many blocks fit on an SM as of the product alone (the tail's arrays may
// spill: it runs in one block). EC, HC: the tail's elements per thread in
// registers (eagle_in_row); rows past them take eagle_in_row's loop.
template <int W, int EC, int HC, class WT>
__device__ __forceinline__ void tcn_argmax_body(float* logits, const float* x, const uint4* w, int N, int K,
                                                const float* g, float eps, int* ids, float2* part, unsigned* cnt,
                                                const int* d2t, int* out, int oi, Step* next, float* cat,
                                                const void* ew, const void* ews, const float* win, const float* whid,
                                                int nbr) {
  tc_body<1, false, true, W, 1>(logits, N, x, w, nullptr, N, K, 1, 0, g, eps);
  __shared__ float bv[W];
  __shared__ int bi[W];
  __shared__ int last, winner;
  __syncthreads();  // the block's rows of logits are stored (by its own threads)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nb = gridDim.x;
  float best = -INFINITY;
  int besti = 0x7fffffff;
  if (warp == 0) {
    const int r = blockIdx.x * 16 + lane;
    if (lane < 16 && r < N) am_better(best, besti, logits[r], r);
    warp_argmax(best, besti);
    if (lane == 0) part[blockIdx.x] = make_float2(best, __int_as_float(besti));
  }
  if (!arrive_last(cnt, nb, last)) return;  // block-uniform
  best = -INFINITY;
  besti = 0x7fffffff;
  for (int b = threadIdx.x; b < nb; b += blockDim.x) {
    float2 p = __ldcg(part + b);
    am_better(best, besti, p.x, __float_as_int(p.y));
  }
  warp_argmax(best, besti);
  if (lane == 0) { bv[warp] = best; bi[warp] = besti; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int q = 1; q < W; q++) am_better(best, besti, bv[q], bi[q]);
    const int id = besti == 0x7fffffff ? 0 : besti;
    ids[0] = id;
    cnt[0] = 0;
    winner = id;
    out[oi] = d2t[id];
    if (next) next->tokens[0] = d2t[id];
  }
  __syncthreads();
  if (cat && threadIdx.x < 256)
    eagle_in_row<WT, 256, EC, HC>(cat, const_cast<float*>(x), ew, ews, d2t[winner], win, whid, K, eps, nbr);
}
#define TCN_ARGMAX(W, EC, HC, NAME, WT)                                                                              \
  extern "C" __global__ void __launch_bounds__(W * 32, 2048 / (W * 32)) tcnam##W##_##NAME(                                            \
      float* logits, const float* x, const uint4* w, int N, int K, const float* g, float eps, int* ids, float2* part, \
      unsigned* cnt, const int* d2t, int* out, int oi, Step* next, float* cat, const void* ew, const void* ews,        \
      const float* win, const float* whid, int nbr) {                                                                \
    tcn_argmax_body<W, EC, HC, WT>(logits, x, w, N, K, g, eps, ids, part, cnt, d2t, out, oi, next, cat, ew, ews, win, \
                                   whid, nbr);                                                                       \
  }
#define TCN_ARGMAX_W(NAME, WT) TCN_ARGMAX(16, 16, 16, NAME, WT) TCN_ARGMAX(32, 8, 4, NAME, WT)
EMBED_TYPES(TCN_ARGMAX_W)
