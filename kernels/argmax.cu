// rigscope CUDA kernels: the argmax (greedy token of each row, on the
// device, lowest index on ties) and its fused tails (the next step's input,
// the next draft step's layer input), included by kernels.cu after
// eagle.cu and before headout.cu and cycle.cu, which use them.

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
// warp_argmax: (best, besti) over the warp's lanes by am_better, an
// xor-tree, so every lane holds the winner.
__device__ __forceinline__ void warp_argmax(float& best, int& besti) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
    const int oi = __shfl_xor_sync(0xffffffffu, besti, o);
    am_better(best, besti, ov, oi);
  }
}
// argmax_body is argmax_rows; with d2t set (an EAGLE-3 head's draft step,
// one row) the winner is also mapped to its target id, out[oi] =
// d2t[id], and fed to the next draft step (next->tokens[0]) when next is
// set: the hand-off between the steps of a draft chain, in the same launch.
// tail(id) runs in the whole last block after the winner is written (the
// next draft step's eagle_in, argmax_d2t_in).
struct NoTail {
  __device__ void operator()(int) const {}
};
template <class Tail = NoTail>
__device__ __forceinline__ void argmax_body(int* ids, const float* logits, int vocab, const Step* st, float2* part,
                                            unsigned* cnt, const int* d2t, int* out, int oi, Step* next,
                                            Tail tail = Tail()) {
  __shared__ float bv[8];
  __shared__ int bi[8];
  __shared__ int last, winner;
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
  warp_argmax(best, besti);
  if (lane == 0) { bv[warp] = best; bi[warp] = besti; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); w++) am_better(best, besti, bv[w], bi[w]);
    part[row * nb + blockIdx.x] = make_float2(best, __int_as_float(besti));
  }
  if (!arrive_last(&cnt[row], nb, last)) return;  // block-uniform
  if (warp == 0) {
    best = -INFINITY;
    besti = 0x7fffffff;
    for (int b = lane; b < nb; b += 32) {
      float2 p = __ldcg(part + row * nb + b);
      am_better(best, besti, p.x, __float_as_int(p.y));
    }
    warp_argmax(best, besti);
    if (lane == 0) {
      const int id = besti == 0x7fffffff ? 0 : besti;
      ids[row] = id;
      cnt[row] = 0;
      winner = id;
      if (d2t) {
        out[oi] = d2t[id];
        if (next) next->tokens[0] = d2t[id];
      }
    }
  }
  __syncthreads();
  tail(winner);
}
extern "C" __global__ void argmax_rows(int* ids, const float* logits, int vocab, const Step* st, float2* part,
                                       unsigned* cnt) {
  argmax_body(ids, logits, vocab, st, part, cnt, nullptr, nullptr, 0, nullptr);
}
// argmax_next: argmax_rows of a one-token step (the target's decode), then
// the next decode step's parameters from this one's, on the device: its
// token the winner, base and position one further (gpu/cuda/ahead.go: a
// step enqueued ahead needs no copies), and the winner into ring[base & 1]
// (mapped host memory: the host reads it after the step's event, no copy
// back). A step the host prepares copies its parameters in first anyway.
struct NextStepTail {
  Step* st; int* ring;
  __device__ void operator()(int id) const {
    if (threadIdx.x == 0) {
      const int b = st->base;
      ring[b & 1] = id;
      st->tokens[0] = id;
      st->base = b + 1;
      st->pos[0] = b + 1;
    }
  }
};
extern "C" __global__ void argmax_next(int* ids, const float* logits, int vocab, Step* st, float2* part,
                                       unsigned* cnt, int* ring) {
  argmax_body(ids, logits, vocab, st, part, cnt, nullptr, nullptr, 0, nullptr, NextStepTail{st, ring});
}
// argmax_d2t: argmax_rows of one row, then out[oi] = d2t[id] and
// next->tokens[0] = d2t[id] (EAGLE-3 draft chains).
extern "C" __global__ void argmax_d2t(int* ids, const float* logits, int vocab, const Step* st, float2* part,
                                      unsigned* cnt, const int* d2t, int* out, int oi, Step* next) {
  argmax_body(ids, logits, vocab, st, part, cnt, d2t, out, oi, next);
}
// argmax_d2t_in_W: argmax_d2t, then the last block builds the next draft
// step's layer input as eagle_in would (one row: cat (2*dim) from the
// drafted token's embedding and the output row h (dim)), one launch less
// per draft step.
template <class WT>
struct EagleInTail {
  float* cat; float* h; const void* w; const void* ws; const int* d2t; const float* win; const float* whid;
  int dim; float eps; int nbr;
  __device__ void operator()(int id) const { eagle_in_row<WT>(cat, h, w, ws, d2t[id], win, whid, dim, eps, nbr); }
};
#define ARGMAX_IN(NAME, WT)                                                                                          \
  extern "C" __global__ void argmax_d2t_in_##NAME(int* ids, const float* logits, int vocab, const Step* st,          \
                                                  float2* part, unsigned* cnt, const int* d2t, int* out, int oi,     \
                                                  Step* next, float* cat, float* h, const void* w, const void* ws,   \
                                                  const float* win, const float* whid, int dim, float eps, int nbr) { \
    argmax_body(ids, logits, vocab, st, part, cnt, d2t, out, oi, next,                                               \
                EagleInTail<WT>{cat, h, w, ws, d2t, win, whid, dim, eps, nbr});                                      \
  }
EMBED_TYPES(ARGMAX_IN)
