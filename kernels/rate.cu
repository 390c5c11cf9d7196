// Instruction throughput probes (included at the end of kernels.cu;
// measurements only: cuda-check -checks rates). Each thread runs n rounds
// of 8 independent chains of one instruction and stores a value that
// depends on all of them, so nothing is folded away; the host divides the
// instructions issued by the time. They tell the quantized products'
// designer what an integer dot costs against a float one and a tensor-core
// int8 product (a decode product's per-token cost is its instructions).

// rate_dp4a: 8 dp4a (4 int8 products each) per round.
extern "C" __global__ void rate_dp4a(int* out, int n) {
  int a[8];
  const int y = 0x01020304 ^ (int)threadIdx.x;
#pragma unroll
  for (int i = 0; i < 8; i++) a[i] = i + threadIdx.x;
  for (int k = 0; k < n; k++)
#pragma unroll
    for (int i = 0; i < 8; i++) a[i] = __dp4a(a[(i + 1) & 7], y, a[i]);
  int s = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) s ^= a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// rate_ffma: 8 float fma per round.
extern "C" __global__ void rate_ffma(int* out, int n) {
  float a[8];
  const float y = 1.0001f + threadIdx.x * 1e-7f;
#pragma unroll
  for (int i = 0; i < 8; i++) a[i] = i + threadIdx.x;
  for (int k = 0; k < n; k++)
#pragma unroll
    for (int i = 0; i < 8; i++) a[i] = fmaf(a[(i + 1) & 7], y, a[i]);
  float s = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = __float_as_int(s);
}

// rate_imma: 8 mma.sync m16n8k32 s8 (a warp: 16x8x32 int8 products each)
// per round, on sm_80 and later.
extern "C" __global__ void rate_imma(int* out, int n) {
  int c[8][4];
  unsigned a0 = threadIdx.x * 0x01010101u, a1 = a0 ^ 0x5a5a5a5au, a2 = a0 + 3, a3 = a0 ^ 0x11111111u;
  unsigned b0 = 0x01020304u ^ threadIdx.x, b1 = b0 + 7;
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) c[i][j] = i + j;
  for (int k = 0; k < n; k++) {
#pragma unroll
    for (int i = 0; i < 8; i++)
      asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+r"(c[i][0]), "+r"(c[i][1]), "+r"(c[i][2]), "+r"(c[i][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    b0 ^= c[0][0] & 0x01010101;
  }
  int s = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) s ^= c[i][0] ^ c[i][1] ^ c[i][2] ^ c[i][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// rate_hmma: 8 mma.sync m16n8k16 f16 -> f32 (16x8x16 products each) per
// round, for comparison with the int8 one.
extern "C" __global__ void rate_hmma(int* out, int n) {
  float c[8][4];
  unsigned a0 = 0x3c003c00u ^ (threadIdx.x & 7), a1 = a0, a2 = a0, a3 = a0, b0 = 0x3c003c00u, b1 = b0;
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) c[i][j] = 0.f;
  for (int k = 0; k < n; k++) {
#pragma unroll
    for (int i = 0; i < 8; i++)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(c[i][0]), "+f"(c[i][1]), "+f"(c[i][2]), "+f"(c[i][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) s += c[i][0] + c[i][1] + c[i][2] + c[i][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = __float_as_int(s);
}

// rate_cvt8: 8 e4m3x2 -> f16x2 conversions per round (the FP8 products'
// decode; one instruction on sm_89+, bit operations below).
extern "C" __global__ void rate_cvt8(int* out, int n) {
  unsigned a[8];
#pragma unroll
  for (int i = 0; i < 8; i++) a[i] = (i + threadIdx.x) & 0x3f3f;
  for (int k = 0; k < n; k++)
#pragma unroll
    for (int i = 0; i < 8; i++) {
      __half2_raw r = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(a[(i + 1) & 7] & 0x3f3f), __NV_E4M3);
      a[i] ^= r.x | ((unsigned)r.y << 16);
    }
  unsigned s = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) s ^= a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = (int)s;
}
