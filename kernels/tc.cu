// rigscope CUDA kernels: tensor-core products (included by kernels.cu,
// after the weight loaders).

// ------------------------------------- tensor-core product (bf16 weights)
// Weights tiled at upload (gpu/cuda/weights.go): tile (nt, kt) is rows
// [16nt, 16nt+16) x cols [16kt, 16kt+16), 512 bytes, tiles row-major;
// lane L's 16 bytes are its mma.m16n8k16 A fragment: with g = L/4,
// c = L%4, elements W[g][2c..2c+1], W[g+8][2c..], W[g][2c+8..], W[g+8][2c+8..].
// x (T, K) f32 becomes the B fragment (k x tokens) split into bf16 hi + lo,
// both multiplied, so the products keep about 16 bits of x's mantissa and
// every token's result is computed the same way whatever T is.
// Block: W warps (8, 16 or 32: gpu/cuda picks per matrix shape, never per
// T, so every T sums in the same order) own RT row tiles (16*RT rows; RT
// 1, 2 or 4 changes no sum: gpu/cuda picks 2 for gate/up) and split the
// k tiles in runs of U, max(U, RT) tiles in flight per warp (times 2 for
// GLU's two matrices); the hi and lo products go to one accumulator. NTT
// n-tiles of 8 tokens (T <= 8*NTT). mode, GLU, NORM as in mv_body.
// U is TC_U (2) for the plain and norm products, TC_UG (2) for GLU: with
// 2 tiles in flight the 16-warp plain kernels need 32-40 registers, so 3-4
// blocks fit on an SM where 4 tiles allowed 3 (tcn16_1: 40 -> 32), and
// llama-8b decode went from 224 to 233 tok/s (session 5). One accumulator
// instead of separate hi and lo ones (session 7): the GLU at U 2 needs 40
// registers instead of 54, 3 blocks per SM, and the 8B verify step took
// 4448 instead of 4650 us (decode unchanged; 1 or 8 tiles were slower).
// Variants for such comparisons are built with -D (bench/cuda/variants.sh);
// -DTC_LOADONLY keeps only the weight loads (what the access pattern alone
// costs: 8B step 4010 us against 4230).
#ifndef TC_U
#define TC_U 2
#endif
#ifndef TC_UG
#define TC_UG 2
#endif
__device__ __forceinline__ void mma_bf16(float* c, uint4 a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned bf16x2_bits(__nv_bfloat162 h) { return *reinterpret_cast<unsigned*>(&h); }

// Weight element types of tc_body (WT): frag is what a lane loads of a
// 16x16 tile (tiles of 32 frags), a(f) its A fragment as bf16 pairs; U and
// UG are the k tiles per run (TC_U, TC_UG above); SCALED: the tiles are
// multiplied by a scale grid (fp8.cu's TcF8). TcBF16: the tiles are the
// fragments already (gpu/cuda: tileBF16).
struct TcBF16 {
  typedef uint4 frag;
  enum { U = TC_U, UG = TC_UG, SCALED = 0 };
  static __device__ __forceinline__ frag ld(const frag* p) { return ld_stream(p); }
  static __device__ __forceinline__ frag ld_pinned(const frag* p) { return ld_stream_pinned(p); }
  static __device__ __forceinline__ frag zero() { return make_uint4(0, 0, 0, 0); }
  static __device__ __forceinline__ uint4 a(frag f) { return f; }
  static __device__ __forceinline__ unsigned bits(frag f) { return f.x ^ f.y ^ f.z ^ f.w; }
};

// XF: x comes split already (store_xf in kernels.cu): xf, 16 bytes a lane
// per k tile and token group. GLU: xfo, when set, receives the output split
// the same way (down's input). WT::SCALED: ws (and GLU's ws2) are the
// matrices' scale grids (fp8.cu's {rs, cs, gc} and floats), in one of the
// two layouts gpu/cuda makes: per row (cs 31): each row's sum is
// multiplied by its scale at the end; or in blocks of 128x128 (rs = cs =
// 7): a block's 16*RT rows (at most 64) lie in one row block, so one scale
// per run of U tiles (16*U columns: never two column blocks) serves the
// whole block, loaded with the run's first tiles. Either way each tile's
// product (hi + lo) is added with one fma per accumulator, times that run
// scale (1 for per-row grids).
template <int NTT, bool GLU, bool NORM, int W, int RT, bool XF = false, class WT = TcBF16>
__device__ __forceinline__ void tc_body(float* __restrict__ out, int ldo, const float* __restrict__ x,
                                        const typename WT::frag* w, const typename WT::frag* w2, int N, int K, int T, int mode,
                                        const float* __restrict__ g, float eps, const uint4* __restrict__ xf = nullptr,
                                        __nv_bfloat16* xfo = nullptr, int act = 0, const float* ws = nullptr,
                                        const float* ws2 = nullptr) {
  typedef typename WT::frag frag;
  constexpr int NW = GLU ? 2 : 1;
  constexpr int U = GLU ? WT::UG : WT::U;
  static_assert(!WT::SCALED || (U <= 8 && (U & (U - 1)) == 0), "a run of U scaled tiles must lie in one 128-column block");
  constexpr int LU = U >= RT ? U / RT : 1;  // tiles loaded per batch: RT*LU*NW frags (16 or 8 bytes) in flight per lane
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int grp = lane >> 2, tig = lane & 3;
  const int KT = K / 16, NT = N / 16;
  const frag* wt[NW][RT];
  bool rv[RT];  // row tile r of this block exists (N need not be a multiple of 16*RT)
#pragma unroll
  for (int r = 0; r < RT; r++) {
    const long nt = (long)blockIdx.x * RT + r;
    rv[r] = RT == 1 || nt < NT;
    wt[0][r] = w + nt * KT * 32 + lane;
    if (GLU) wt[NW - 1][r] = w2 + nt * KT * 32 + lane;
  }
  float acc[NW][RT][NTT][4];
  float ss[NTT];
#pragma unroll
  for (int j = 0; j < NTT; j++) {
    ss[j] = 0.f;
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < RT; r++)
#pragma unroll
        for (int i = 0; i < 4; i++) acc[m][r][j][i] = 0.f;
  }
  // Scales (WT::SCALED): grid m's header {rs, cs, gc} (fp8.cu), the scales
  // of its row block (block layout) or row 0 (per-row: hcs 31) at sp, and
  // sc, the current run's scale (1 for per-row grids).
  const float* sp[NW];
  int hcs[NW];
  float sc[NW];
  if (WT::SCALED) {
#pragma unroll
    for (int m = 0; m < NW; m++) {
      const float* v = m == 0 ? ws : ws2;
      const int* h = reinterpret_cast<const int*>(v);
      hcs[m] = __ldg(h + 1);
      sp[m] = v + 4 + (hcs[m] >= 31 ? 0 : ((int)blockIdx.x * RT * 16 >> __ldg(h)) * __ldg(h + 2));
    }
  }
  // load_tiles: the LU weight tiles from kt0+u0 of every matrix and row
  // tile into a (zeros past KT or the last row tile), and at a run's start
  // (u0 0) its scales. The first batch is
  // loaded before pdl_wait: weights are never written by the kernels
  // before, so its DRAM latency overlaps the previous kernel's tail (the
  // loads are volatile there, so that the compiler keeps the later
  // batches after the wait: hoisting them cost 24 to 100 registers).
  auto load_tiles = [&](frag (&a)[LU][NW][RT], int kt0, int u0, bool pin) {
    if (WT::SCALED && u0 == 0) {
#pragma unroll
      for (int m = 0; m < NW; m++) sc[m] = hcs[m] >= 31 ? 1.f : kt0 < KT ? __ldg(sp[m] + ((kt0 * 16) >> hcs[m])) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < LU; u++)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < RT; r++) {
          const bool in = kt0 + u0 + u < KT && rv[r];
          const frag* p = wt[m][r] + (long)(kt0 + u0 + u) * 32;
          a[u][m][r] = !in ? WT::zero() : pin ? WT::ld_pinned(p) : WT::ld(p);
        }
  };
  frag a0[LU][NW][RT];
  load_tiles(a0, warp * U, 0, true);
  pdl_wait();
  // Warp w owns k tiles [w*U + i*W*U, +U) for every RT: each row's
  // sum runs in the same order whatever RT and T are. mma_tiles multiplies
  // the LU tiles from kt0+u0 (weights in a) with x.
  // mma_hl adds a's products with x's hi (b0, b1) and lo (b2, b3) into c
  // (times the run's scale for WT::SCALED).
  auto mma_hl = [&](float (&c)[4], const uint4& a, unsigned b0, unsigned b1, unsigned b2, unsigned b3, int m) {
    if (WT::SCALED) {
      float p[4] = {0.f, 0.f, 0.f, 0.f};
      mma_bf16(p, a, b0, b1);
      mma_bf16(p, a, b2, b3);
#pragma unroll
      for (int i = 0; i < 4; i++) c[i] = fmaf(sc[m], p[i], c[i]);
    } else {
      mma_bf16(c, a, b0, b1);
      mma_bf16(c, a, b2, b3);
    }
  };
  auto mma_tiles = [&](int kt0, int u0, const frag (&a)[LU][NW][RT]) {
#ifdef TC_LOADONLY  // measurement builds: the weight loads alone (garbage results)
#pragma unroll
    for (int u = 0; u < LU; u++)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < RT; r++)
          acc[m][r][0][0] += __uint_as_float(WT::bits(a[u][m][r]) & 0x3f0fffffu);
    if (true) return;
#endif
#pragma unroll
    for (int u = 0; u < LU; u++) {
      if (kt0 + u0 + u >= KT) break;  // warp-uniform
      const int k = (kt0 + u0 + u) * 16 + 2 * tig;
      float2 g0 = make_float2(1.f, 1.f), g1 = g0;
      if (NORM) {
        g0 = *reinterpret_cast<const float2*>(g + k);
        g1 = *reinterpret_cast<const float2*>(g + k + 8);
      }
      uint4 af[NW][RT];  // the A fragments (bf16 pairs)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < RT; r++) af[m][r] = WT::a(a[u][m][r]);
#pragma unroll
      for (int j = 0; j < NTT; j++) {
        const int t = grp + 8 * j;
        if (XF) {
          const uint4 f = t < T ? xf[((long)j * KT + kt0 + u0 + u) * 32 + lane] : make_uint4(0, 0, 0, 0);
#pragma unroll
          for (int m = 0; m < NW; m++)
#pragma unroll
            for (int r = 0; r < RT; r++) mma_hl(acc[m][r][j], af[m][r], f.x, f.y, f.z, f.w, m);
          continue;
        }
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
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < RT; r++)
            mma_hl(acc[m][r][j], af[m][r], bf16x2_bits(h0), bf16x2_bits(h1), bf16x2_bits(l0), bf16x2_bits(l1), m);
      }
    }
  };
  mma_tiles(warp * U, 0, a0);  // the first batch, then the rest as loaded
#pragma unroll
  for (int u0 = LU; u0 < U; u0 += LU) {
    frag a[LU][NW][RT];
    load_tiles(a, warp * U, u0, false);
    mma_tiles(warp * U, u0, a);
  }
  for (int kt0 = warp * U + W * U; kt0 < KT; kt0 += W * U) {
#pragma unroll
    for (int u0 = 0; u0 < U; u0 += LU) {
      frag a[LU][NW][RT];
      load_tiles(a, kt0, u0, false);
      mma_tiles(kt0, u0, a);
    }
  }
  pdl_trigger();
  if (WT::SCALED) {  // per-row grids: each row's sum times its scale
#pragma unroll
    for (int m = 0; m < NW; m++) {
      if (hcs[m] < 31) continue;
      const int* h = reinterpret_cast<const int*>(m == 0 ? ws : ws2);
      const int rs = __ldg(h), gc = __ldg(h + 2);
#pragma unroll
      for (int r = 0; r < RT; r++)
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
          const int row = ((int)blockIdx.x * RT + r) * 16 + grp + 8 * hh;
          const float s = rv[r] ? __ldg(sp[m] + (row >> rs) * gc) : 0.f;
#pragma unroll
          for (int j = 0; j < NTT; j++) {
            acc[m][r][j][2 * hh] *= s;
            acc[m][r][j][2 * hh + 1] *= s;
          }
        }
    }
  }
  // acc[m][r][j]: rows grp, grp+8 of row tile r x tokens 8j+2tig, 8j+2tig+1.
  __shared__ float red[W][NW][16 * RT][8 * NTT];
  __shared__ float red_ss[W][8 * NTT];
#pragma unroll
  for (int j = 0; j < NTT; j++) {
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < RT; r++) {
        red[warp][m][16 * r + grp][8 * j + 2 * tig] = acc[m][r][j][0];
        red[warp][m][16 * r + grp][8 * j + 2 * tig + 1] = acc[m][r][j][1];
        red[warp][m][16 * r + grp + 8][8 * j + 2 * tig] = acc[m][r][j][2];
        red[warp][m][16 * r + grp + 8][8 * j + 2 * tig + 1] = acc[m][r][j][3];
      }
    if (NORM) {  // token grp+8j: the 4 lanes of the group hold its 16 k of each tile
      float v = ss[j];
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
      if (tig == 0) red_ss[warp][8 * j + grp] = v;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 16 * RT * 8 * NTT; i += blockDim.x) {
    const int r = i / (8 * NTT), t = i % (8 * NTT);
    const long row = (long)blockIdx.x * 16 * RT + r;
    if (t >= T || row >= N) continue;
    const float v = finish_out<NW, W, NORM, GLU>(
        out + (long)t * ldo + row, mode, [&](int wq, int m) { return red[wq][m][r][t]; },
        [&](int wq) { return red_ss[wq][t]; }, K, eps, act);
    if (GLU && xfo) store_xf(xfo, N / 16, t, (int)row, v);
  }
}

// tcW_N[rR]: plain (mode store/add); tcfW_N[rR]: the same with x split
// already (xf, store_xf); tcnW_N[rR]: of rmsnorm(x, g);
// tcgluW_N[rR]: GLU of rmsnorm(x, g) (act 1: gelu_tanh). W warps, N n-tiles (1: T <= 8, 2: T
// <= 16), R row tiles of 16 per block (suffix only when R > 1: each x
// fragment then feeds R row tiles, so a block reads x once per 16*R rows).
// grid ceil(rows/(16*R)).
#define TC_INST(NTT, W, RT, SUF)                                                                         \
  extern "C" __global__ void __launch_bounds__(W * 32) tc##W##_##NTT##SUF(                               \
      float* out, int ldo, const float* x, const uint4* w, int N, int K, int T, int mode) {             \
    tc_body<NTT, false, false, W, RT>(out, ldo, x, w, 0, N, K, T, mode, 0, 0.f);                        \
  }                                                                                                      \
  extern "C" __global__ void __launch_bounds__(W * 32) tcf##W##_##NTT##SUF(                              \
      float* out, int ldo, const uint4* xf, const uint4* w, int N, int K, int T, int mode) {             \
    tc_body<NTT, false, false, W, RT, true>(out, ldo, nullptr, w, 0, N, K, T, mode, 0, 0.f, xf);        \
  }                                                                                                      \
  extern "C" __global__ void __launch_bounds__(W * 32) tcn##W##_##NTT##SUF(                              \
      float* out, int ldo, const float* x, const uint4* w, int N, int K, int T, const float* g, float eps) { \
    tc_body<NTT, false, true, W, RT>(out, ldo, x, w, 0, N, K, T, 0, g, eps);                            \
  }
#define TCGLU_INST(NTT, W, RT, SUF)                                                                      \
  extern "C" __global__ void __launch_bounds__(W * 32) tcglu##W##_##NTT##SUF(                            \
      float* out, int ldo, const float* x, const uint4* w, const uint4* w2, int N, int K, int T,         \
      const float* g, float eps, __nv_bfloat16* xfo, int act) {                                          \
    tc_body<NTT, true, true, W, RT>(out, ldo, x, w, w2, N, K, T, 0, g, eps, nullptr, xfo, act);         \
  }
// GLU stops at 16 warps and, with 2 row tiles, at T <= 8; 4 row tiles only
// for T <= 8 and 16 warps (the reduction buffer would pass 48 KB).
TC_INST(1, 8, 1, ) TC_INST(1, 16, 1, ) TC_INST(1, 32, 1, ) TC_INST(2, 8, 1, ) TC_INST(2, 16, 1, ) TC_INST(2, 32, 1, )
TCGLU_INST(1, 8, 1, ) TCGLU_INST(1, 16, 1, ) TCGLU_INST(2, 8, 1, ) TCGLU_INST(2, 16, 1, )
TC_INST(1, 16, 2, r2) TC_INST(1, 32, 2, r2) TC_INST(2, 16, 2, r2) TC_INST(1, 16, 4, r4)
TCGLU_INST(1, 16, 2, r2)
