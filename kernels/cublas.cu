// rigscope CUDA kernels: the glue around the prefill path's cuBLAS
// products (included by kernels.cu, after gemm.cu; gpu/cuda:
// prefill_cublas.go). cuBLAS multiplies row-major bf16 weights by bf16 x
// into float32 and takes no per-token scale or activation, so per layer
//
//   cb_prep   x (T, dim) f32 -> bf16 rmsnorm(x) * g (the scale before the
//             rounding, as llama.cpp; pf_prep applies it after the product)
//   cuBLAS    qkv (T, nqkv) f32 = xn . Wqkv^T
//   pf_kv, pf_attn (gemm.cu; attention's output in bf16)
//   cuBLAS    x += att . Wo^T (beta 1)
//   cb_prep   (FFN norm)
//   cuBLAS    gu (T, 2 ffn) f32 = xn . [Wg; Wu]^T
//   cb_glu    h (T, ffn) bf16 = silu(gate) * up
//   cuBLAS    x += h . Wd^T (beta 1)
//
// cb_untile makes the row-major copy of a tiled weight matrix cuBLAS reads.

// cb_untile: dst (N, K) row-major bf16 from src in tileBF16's order (tile
// (nt, kt) of 16x16 at ((nt*K/16)+kt)*256 elements; inside it lane L = 4g
// + c holds its mma A fragment W[g][2c+e], W[g+8][2c+e], W[g][2c+8+e],
// W[g+8][2c+8+e], e = 0, 1: word j of the lane's 16 bytes is row g + 8(j&1),
// columns 8(j>>1) + 2c, +1). One thread a lane's 16 bytes: grid
// ceil(N*K/8/256), block 256. N and K multiples of 16.
extern "C" __global__ void __launch_bounds__(256) cb_untile(__nv_bfloat16* dst, const uint4* src, int N, int K) {
  pdl_wait();
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)N * K / 8) return;
  const long tile = i >> 5;
  const int KT = K / 16, lane = (int)(i & 31), g = lane >> 2, c = lane & 3;
  const long nt = tile / KT, kt = tile % KT;
  const uint4 v = src[i];
  const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const long row = nt * 16 + 8 * (j & 1) + g, col = kt * 16 + 8 * (j >> 1) + 2 * c;
    *reinterpret_cast<unsigned*>(dst + row * K + col) = u[j];
  }
}

// cb_prep: xh (T, K) bf16 = x * rsqrt(mean(x^2) + eps) * g, one token a
// block (grid T, block 256; K even).
extern "C" __global__ void __launch_bounds__(256) cb_prep(__nv_bfloat16* xh, const float* x, const float* g, int K,
                                                          float eps) {
  pdl_wait();
  const long t = blockIdx.x;
  const float* xr = x + t * K;
  float ss = 0.f;
  for (int k = 2 * threadIdx.x; k < K; k += 2 * blockDim.x) {
    const float2 v = *reinterpret_cast<const float2*>(xr + k);
    ss = fmaf(v.x, v.x, fmaf(v.y, v.y, ss));
  }
  const float r = rsqrtf(block_sum2(ss, 0.f).x / K + eps);
  for (int k = 2 * threadIdx.x; k < K; k += 2 * blockDim.x) {
    const float2 v = *reinterpret_cast<const float2*>(xr + k);
    *reinterpret_cast<__nv_bfloat162*>(xh + t * K + k) = __floats2bfloat162_rn(v.x * r * g[k], v.y * r * g[k + 1]);
  }
}

// cb_glu: h (T, F) bf16 = silu(gate) * up for gu (T, 2F) f32, a token's
// F gate products then its F up products (pf_glu's formula). One thread
// two columns: grid ceil(T*F/2/256), block 256; F even.
extern "C" __global__ void __launch_bounds__(256) cb_glu(__nv_bfloat16* h, const float* gu, int F, int T) {
  pdl_wait();
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)T * F / 2) return;
  const long t = 2 * i / F, f = 2 * i % F;
  const float2 v = *reinterpret_cast<const float2*>(gu + t * 2 * F + f);
  const float2 u = *reinterpret_cast<const float2*>(gu + t * 2 * F + F + f);
  *reinterpret_cast<__nv_bfloat162*>(h + t * F + f) =
      __floats2bfloat162_rn(v.x / (1.f + expf(-v.x)) * u.x, v.y / (1.f + expf(-v.y)) * u.y);
}
