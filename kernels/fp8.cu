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

extern "C" __global__ void embed_f8(float* x, const void* w, const void* ws, const int* tok, int dim) { embed_body<WF8>(x, w, ws, tok, dim); }

// fill_f8: n e4m3 values of uniform [-448, 448) from a hash of (seed, i),
// for synthetic FP8 weights (gpu/cuda: syntheticModel with a scale a/448
// gives uniform [-a, a) at e4m3's precision).
extern "C" __global__ void fill_f8(__nv_fp8_storage_t* w, long n, unsigned seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    w[i] = __nv_cvt_float_to_fp8((uniform01(seed, (unsigned)(i >> 32), (unsigned)i) * 2.f - 1.f) * 448.f, __NV_SATFINITE, __NV_E4M3);
}
