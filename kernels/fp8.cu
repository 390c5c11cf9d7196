// FP8 (e4m3fn) weights, as FP8 checkpoints store them (included at the
// end of kernels.cu): one byte per element, times a float32 scale per
// block of the matrix. The products are mv_body's (kernels.cu) with WF8
// loads, so they split K and finish as the bf16 ones, with each 16-element
// chunk's partial sum times its scale (Scaled): the same bitwise-stable
// row sums for 1 and k tokens.
//
// ws is the scale grid (gpu/cuda: fp8ScaleGrid): a header of 4 ints
// {rs, cs, gc, 0} then the floats; element (row, k) has scale
// v[(row >> rs) * gc + (k >> cs)]. One scale per row: rs 0, cs 31, gc 1
// (per-tensor scales are uploaded per row); 128x128 blocks: rs 7, cs 7.
// A chunk (16 elements, k a multiple of 16) never straddles two column
// blocks, so each load takes one scale.
//
// Decoding: cuda_fp8.h's __nv_cvt_fp8x2_to_halfraw2 is one
// cvt.rn.f16x2.e4m3x2 on sm_89 and later (the sm_90 PTX) and exact bit
// operations below that (the sm_80 PTX); e4m3 values are exact in f16 and
// f16 in float32; the embedding's w = float(e4m3) * scale is one float32
// rounding, as the CPU's dequantFP8.
#include <cuda_fp8.h>

struct WF8 {
  enum { E = 16 };
  // load_raw: the chunk's e4m3 values, unscaled.
  static __device__ __forceinline__ void load_raw(const void* w, long row, int K, int c, float* o) {
    uint4 v = ld_stream(reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(w) + row * K) + c);
    const __nv_fp8x2_storage_t* p = reinterpret_cast<const __nv_fp8x2_storage_t*>(&v);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(p[i], __NV_E4M3);
      float2 f = __half22float2(*reinterpret_cast<__half2*>(&r));
      o[2 * i] = f.x;
      o[2 * i + 1] = f.y;
    }
  }
  // scale: the chunk's scale (one column block holds the whole chunk).
  static __device__ __forceinline__ float scale(const void* ws, long row, int c) {
    const int* h = static_cast<const int*>(ws);
    return static_cast<const float*>(ws)[4 + (row >> h[0]) * h[2] + ((c * E) >> h[1])];
  }
  // load: the values times their scale, as the CPU's dequantFP8 (embed_f8).
  static __device__ __forceinline__ void load(const void* w, const void* ws, long row, int K, int c, float* o) {
    load_raw(w, row, K, c, o);
    const float s = scale(ws, row, c);
#pragma unroll
    for (int i = 0; i < E; i++) o[i] *= s;
  }
};
template <> struct Scaled<WF8> { enum { value = 1 }; };

MV_ALL(f8, WF8)

// ------------------------------------- tensor-core product (FP8 weights)
// With gpu/cuda's Tuning.F8TC (RIGSCOPE_CUDA_F8TC=1) the layer matrices are
// tiled at upload as the bf16 ones (tileFP8: tileBF16's order, one byte an
// element), so a lane loads its A fragment's 8 elements as 8 bytes; tc_body
// (tc.cu) converts them to bf16 pairs exactly and multiplies each tile's
// product by its rows' scales (the scale grid above; per-row and 128x128
// block layouts alike). Runs of TC8_U (4) k tiles, TC8_UG (4) for GLU: half
// the bytes a tile of bf16's, so twice the tiles per run keep the same
// bytes in flight.
#ifndef TC8_U
#define TC8_U 4
#endif
#ifndef TC8_UG
#define TC8_UG 4
#endif
// f8x2_bf16x2: two e4m3 values (the low byte first) as bf16x2, exactly:
// cvt.rn.f16x2.e4m3x2 gives f16 normals (every nonzero e4m3 value is one,
// 2^-9 and above) or zeros, with at most 3 mantissa bits; keeping each
// half's sign and shifting its exponent and mantissa right by 3 puts them in
// bf16's fields, the value times 2^-112 (still normal, or zero), and one
// bf16x2 multiply by 2^112 restores it, exactly (gpu/cuda's
// TestFP8BF16Bits emulates these bit operations on every byte).
__device__ __forceinline__ unsigned f8x2_bf16x2(unsigned v) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v), __NV_E4M3);
  const unsigned u = *reinterpret_cast<const unsigned*>(&h);  // .x the low half
  unsigned b = (u & 0x80008000u) | ((u >> 3) & 0x0fff0fffu), k = 0x77807780u;  // k: bf16x2 (2^112, 2^112)
  __nv_bfloat162 r = __hmul2(*reinterpret_cast<__nv_bfloat162*>(&b), *reinterpret_cast<__nv_bfloat162*>(&k));
  return bf16x2_bits(r);
}
struct TcF8 {
  typedef uint2 frag;
  enum { U = TC8_U, UG = TC8_UG, SCALED = 1 };
  static __device__ __forceinline__ frag ld(const frag* p) {
    uint2 v;
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
  }
  static __device__ __forceinline__ frag ld_pinned(const frag* p) {
    uint2 v;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
  }
  static __device__ __forceinline__ frag zero() { return make_uint2(0, 0); }
  // a: bytes 0..7 are the fragment's elements 0..7 (tileFP8), bf16 pairs
  // (0,1) (2,3) (4,5) (6,7) its registers as tileBF16's 16 bytes.
  static __device__ __forceinline__ uint4 a(frag f) {
    return make_uint4(f8x2_bf16x2(f.x & 0xffffu), f8x2_bf16x2(f.x >> 16), f8x2_bf16x2(f.y & 0xffffu), f8x2_bf16x2(f.y >> 16));
  }
  static __device__ __forceinline__ unsigned bits(frag f) { return f.x ^ f.y; }
};

// f8tcW_N[rR], f8tcfW_N[rR], f8tcnW_N[rR], f8tcgluW_N[rR]: tc.cu's tc*,
// tcf*, tcn*, tcglu* kernels of FP8 tiles, each matrix followed by its
// scale grid; the same variants, so gpu/cuda picks them by the same policy.
// Blocks per SM the kernels are compiled for (__launch_bounds__): for one
// n-tile and row tile those the bf16 ones reach (tc32 and tcf32 2, tcn16
// 3-4, tcglu16 2), so that an SM holds as many weight bytes in flight (64
// KB): unbounded, ptxas gave the 32-warp plain kernels 40 registers (1
// block) and the GLU with 2 row tiles 99 (1 block); bounded, tcf32_1 and
// tcn32_1 spill ~30 bytes, the GLU with 2 row tiles 20 (TC8_UG 2 instead
// fits without). Two n-tiles or row tiles: 64 registers (bounded to 32 or
// 40 they spilled 100-700 bytes). Variants are built with -D.
#ifdef TC8_UNBOUNDED  // the variant without bounds
#define TC8_MINB(W, NTT, RT) 1
#define TC8_MINBG(W) 1
#endif
#ifndef TC8_MINB
#define TC8_MINB(W, NTT, RT) ((NTT) == 1 && (RT) == 1 ? ((W) == 32 ? 2 : 3) : 2048 / ((W) * 32) / 2)
#endif
#ifndef TC8_MINBG
#define TC8_MINBG(W) (1024 / ((W) * 32))
#endif
#define TC8_INST(NTT, W, RT, SUF)                                                                          \
  extern "C" __global__ void __launch_bounds__(W * 32, TC8_MINB(W, NTT, RT)) f8tc##W##_##NTT##SUF(                               \
      float* out, int ldo, const float* x, const uint2* w, const float* ws, int N, int K, int T, int mode) { \
    tc_body<NTT, false, false, W, RT, false, TcF8>(out, ldo, x, w, 0, N, K, T, mode, 0, 0.f, 0, 0, 0, ws);   \
  }                                                                                                        \
  extern "C" __global__ void __launch_bounds__(W * 32, TC8_MINB(W, NTT, RT)) f8tcf##W##_##NTT##SUF(                              \
      float* out, int ldo, const uint4* xf, const uint2* w, const float* ws, int N, int K, int T, int mode) { \
    tc_body<NTT, false, false, W, RT, true, TcF8>(out, ldo, nullptr, w, 0, N, K, T, mode, 0, 0.f, xf, 0, 0, ws); \
  }                                                                                                        \
  extern "C" __global__ void __launch_bounds__(W * 32, TC8_MINB(W, NTT, RT)) f8tcn##W##_##NTT##SUF(                              \
      float* out, int ldo, const float* x, const uint2* w, const float* ws, int N, int K, int T, const float* g, \
      float eps) {                                                                                         \
    tc_body<NTT, false, true, W, RT, false, TcF8>(out, ldo, x, w, 0, N, K, T, 0, g, eps, 0, 0, 0, ws);       \
  }
#define TC8GLU_INST(NTT, W, RT, SUF)                                                                       \
  extern "C" __global__ void __launch_bounds__(W * 32, TC8_MINBG(W)) f8tcglu##W##_##NTT##SUF(                            \
      float* out, int ldo, const float* x, const uint2* w, const float* ws, const uint2* w2, const float* ws2, \
      int N, int K, int T, const float* g, float eps, __nv_bfloat16* xfo, int act) {                       \
    tc_body<NTT, true, true, W, RT, false, TcF8>(out, ldo, x, w, w2, N, K, T, 0, g, eps, nullptr, xfo, act, ws, ws2); \
  }
TC8_INST(1, 8, 1, ) TC8_INST(1, 16, 1, ) TC8_INST(1, 32, 1, ) TC8_INST(2, 8, 1, ) TC8_INST(2, 16, 1, ) TC8_INST(2, 32, 1, )
TC8GLU_INST(1, 8, 1, ) TC8GLU_INST(1, 16, 1, ) TC8GLU_INST(2, 8, 1, ) TC8GLU_INST(2, 16, 1, )
TC8_INST(1, 16, 2, r2) TC8_INST(1, 32, 2, r2) TC8_INST(2, 16, 2, r2) TC8_INST(1, 16, 4, r4)
TC8GLU_INST(1, 16, 2, r2)

extern "C" __global__ void embed_f8(float* x, const void* w, const void* ws, const int* tok, int dim) { embed_body<WF8>(x, w, ws, tok, dim); }

// fill_f8: n e4m3 values of uniform [-448, 448) from a hash of (seed, i),
// for synthetic FP8 weights (gpu/cuda: syntheticModel with a scale a/448
// gives uniform [-a, a) at e4m3's precision).
extern "C" __global__ void fill_f8(__nv_fp8_storage_t* w, long n, unsigned seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    w[i] = __nv_cvt_float_to_fp8((uniform01(seed, (unsigned)(i >> 32), (unsigned)i) * 2.f - 1.f) * 448.f, __NV_SATFINITE, __NV_E4M3);
}
#include "fp8_mv.cu"
#include "fp8_mvs.cu"
