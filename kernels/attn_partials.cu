// rigscope CUDA kernels: the softmax partials of the batch-invariant
// attention (included by attn_fixed.cu, before attn_fixed): one score,
// two partials combined, a group of four chunks' partials.

// att_dot is one score: K row `row` of buf against the query row q, the
// fmaf chain of attn_fixed's one-pass scores.
template <int HD>
__device__ __forceinline__ float att_dot(const float (*buf)[HD + 4], int row, const float* q) {
  float sc = 0.f;
#pragma unroll 1
  for (int d = 0; d < HD; d += 4) {
    const float4 k4 = *reinterpret_cast<const float4*>(&buf[row][d]);
    const float4 q4 = *reinterpret_cast<const float4*>(&q[d]);
    sc = fmaf(k4.x, q4.x, fmaf(k4.y, q4.y, fmaf(k4.z, q4.z, fmaf(k4.w, q4.w, sc))));
  }
  return sc;
}

// att_comb is a = a (+) b for softmax partials (max m, sum l, acc a):
// both rescaled to the larger max, b's terms added to a's. An empty
// partial (m = -inf) is an exact identity on either side.
template <int EPL>
__device__ __forceinline__ void att_comb(float& m, float& l, float* a, float mb, float lb, const float* ab) {
  if (mb == -INFINITY) return;
  if (m == -INFINITY) {
    m = mb, l = lb;
#pragma unroll
    for (int e = 0; e < EPL; e++) a[e] = ab[e];
    return;
  }
  const float M = fmaxf(m, mb);
  const float fa = m == M ? 1.f : __expf(m - M), fb = mb == M ? 1.f : __expf(mb - M);
  l = fmaf(fb, lb, __fmul_rn(fa, l));
#pragma unroll
  for (int e = 0; e < EPL; e++) a[e] = fmaf(fb, ab[e], __fmul_rn(fa, a[e]));
  m = M;
}

// att_group is group g's partial of one row (grouped plans, GS = 4): the
// chunk columns b + k, k in [4g, 4g+4) and [k0, k1), combined as
// ((c0 (+) c1) (+) (c2 (+) c3)), absent chunks empty. The block that owns
// the group and the merger both compute it with this code, from memory.
template <int HD, int EPL>
__device__ __forceinline__ void att_group(const float* pm, const float* pl, const float* pacc, long b, int g, int k0,
                                          int k1, int col, float& m, float& l, float* a) {
  float m1 = -INFINITY, l1 = 0.f, a1[EPL], mk[4], lk[4], ak[4][EPL];
  m = -INFINITY, l = 0.f;
#pragma unroll
  for (int e = 0; e < EPL; e++) a[e] = 0.f, a1[e] = 0.f;
#pragma unroll
  for (int j = 0; j < 4; j++) {  // every load first
    const int k = 4 * g + j;
    const bool in = k >= k0 && k < k1;
    mk[j] = in ? __ldcg(pm + b + k) : -INFINITY;
    lk[j] = in ? __ldcg(pl + b + k) : 0.f;
    if (in)
      ld_run<EPL>(pacc + (b + k) * HD + col, ak[j]);
    else
#pragma unroll
      for (int e = 0; e < EPL; e++) ak[j][e] = 0.f;
  }
  att_comb<EPL>(m, l, a, mk[0], lk[0], ak[0]);
  att_comb<EPL>(m, l, a, mk[1], lk[1], ak[1]);
  att_comb<EPL>(m1, l1, a1, mk[2], lk[2], ak[2]);
  att_comb<EPL>(m1, l1, a1, mk[3], lk[3], ak[3]);
  att_comb<EPL>(m, l, a, m1, l1, a1);
}
