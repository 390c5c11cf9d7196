// rigscope CUDA kernels: products with quantized weights read as the GGUF
// file stores them (included by kernels.cu after the float weight loaders):
// Q4_K, Q5_K, Q6_K (super-blocks of 256), Q4_0 and Q8_0 (blocks of 32),
// ggml's block layouts (engine/tensor/cpu/dequant.go is the Go oracle).
//
// As llama.cpp's mmvq does, the activation is quantized once per product
// (qx: int8 per element and one float scale per 32, the sum of each 16) and
// every weight block is dotted with it in integers (dp4a): the weights of a
// 16-element group g of a row are w_i = a_g*q_i - b_g with small integers
// q_i, and x_i ~ dx*xq_i, so over the group
//   sum_i w_i x_i = a_g*dx * sum_i q_i xq_i - b_g * (dx * sum_i xq_i)
// with a_g, b_g per type:
//   Q8_0: a = d, b = 0          Q4_0: a = d, b = 8d
//   Q4_K, Q5_K: a = d*sc_j, b = dmin*m_j (j: the group's 32-sub-block)
//   Q6_K: a = d*sc_g, b = 32*d*sc_g
// The integer dots are exact; the float combination of one row's groups runs
// in the same order whatever the token count, so a row's result is bitwise
// the same for 1 and for k tokens (cuda-check -checks quant asserts it).
//
// Work unit: 32 weights of a row = two 16-element groups (for the k-quants
// the two groups share the 16 bytes of 4-bit quants a lane loads, one from
// the low and one from the high nibbles). A lane takes every ks*32-th unit
// of R rows (mq_body), the same split for every token count, so the
// weights are read once per pass and each unit is unpacked to int8 in
// registers once and applied to all T tokens. gpu/cuda/quant_layout_test.go
// is a Go model of the unpacking and of the units' groups (unitGroups), checked against the
// CPU's DequantRow without a GPU.

// Activation scratch (gpu/cuda: dweight.xq) for rows of K: xq int8 (T,
// K/16 slots of 16); xm float2 (T, K/16 slots) {dx of the group's 32-block,
// dx * sum of its 16 q}; ssp float (T, K/32) sums of squares of the raw x
// per 32-block (the fused RMSNorm's). The 16-element groups are stored in
// plain order (slot g: elements [16g, 16g+16)) for every type.

// Unaligned blocks (Q4_0, Q8_0, Q6_K are 18, 34, 210 bytes: 2-aligned)
// are read through aligned 16-byte loads: win<N> loads the N*16 bytes from
// p rounded down to 16 (L1-caching: neighbouring lanes share chunks), and
// extract<M> takes M words at a byte offset into them. Against 4-byte loads
// of each word this is 2 or 3 load instructions per lane instead of 5 or
// 9, each touching a few 128-byte lines (lanes 16 or 34 bytes apart), so
// the L1 handles a warp's weights in about 1/3 of the wavefronts.
// Quantized weights are uploaded with 32 bytes of padding, so a window may
// run past the last block.
template <int N>
__device__ __forceinline__ void win(const uint8_t* p, unsigned (&w)[4 * N]) {
  const uint4* a = reinterpret_cast<const uint4*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(15));
#pragma unroll
  for (int i = 0; i < N; i++) {
    const uint4 v = __ldg(a + i);
    w[4 * i] = v.x; w[4 * i + 1] = v.y; w[4 * i + 2] = v.z; w[4 * i + 3] = v.w;
  }
}
// extract: o[i] = bytes [off + 4i, off + 4i + 4) of w (off < 16; words
// past the window read as 0), by selects on the two bits of off/4 (no
// dynamic register indexing) and a funnel shift.
template <int NW, int M>
__device__ __forceinline__ void extract(const unsigned (&w)[NW], int off, unsigned (&o)[M]) {
  const int ws = off >> 2, bs = (off & 3) * 8;
  unsigned a[NW], b[NW];
#pragma unroll
  for (int j = 0; j < NW; j++) a[j] = (ws & 1) ? (j + 1 < NW ? w[j + 1] : 0u) : w[j];
#pragma unroll
  for (int j = 0; j < NW; j++) b[j] = (ws & 2) ? (j + 2 < NW ? a[j + 2] : 0u) : a[j];
#pragma unroll
  for (int i = 0; i < M; i++) o[i] = __funnelshift_r(b[i], i + 1 < NW ? b[i + 1] : 0u, bs);
}
__device__ __forceinline__ uint4 as_uint4(const unsigned* o) { return make_uint4(o[0], o[1], o[2], o[3]); }
// ld16_u: 16 bytes at p (2-aligned) through a 32-byte window.
__device__ __forceinline__ uint4 ld16_u(const uint8_t* p) {
  unsigned w[8], o[4];
  win<2>(p, w);
  extract(w, reinterpret_cast<uintptr_t>(p) & 15, o);
  return as_uint4(o);
}
__device__ __forceinline__ float ld_f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(__ldg(reinterpret_cast<const unsigned short*>(p))));
}
// i2f converts |v| < 2^22 exactly with an add instead of a conversion
// (16 per clock per SM on sm_80/90, against 64+ integer adds).
__device__ __forceinline__ float i2f(int v) { return __int_as_float(v + 0x4B400000) - 12582912.f; }
// dp4a_us: c + the dot of a's 4 unsigned bytes with b's 4 signed ones.
__device__ __forceinline__ int dp4a_us(unsigned a, int b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// i2f_biased is i2f of v - 0x4B400000 (v carries the bias already).
__device__ __forceinline__ float i2f_biased(int v) { return __int_as_float(v) - 12582912.f; }
__device__ __forceinline__ unsigned byte_at(unsigned w, int i) { return (w >> (8 * i)) & 0xffu; }

// QU is one work unit of one row: int8 quants (values < 64, so signed dp4a
// reads them right) of its two groups and their a, b. With HI16 (Q4_K,
// Q4_0: the second group is the high nibbles) the second group's bytes are
// 16 q (v & 0xf0, one operation instead of a shift and a mask), dotted as
// unsigned, and its a is a/16: exact, so the sums are those of q. The
// 32-blocks (Q8_0, Q4_0) share dx between their groups and sum them in one
// integer chain (Q4_0: 16 * the low dot + the high one, times a/16): one
// conversion and one scale per token instead of two.
struct QU {
  int q[2][4];
  float a[2], b[2];
};
__device__ __forceinline__ void set_q(QU& o, int j, uint4 v) { o.q[j][0] = v.x; o.q[j][1] = v.y; o.q[j][2] = v.z; o.q[j][3] = v.w; }
__device__ __forceinline__ uint4 hi16(uint4 v) {
  return make_uint4(v.x & 0xf0f0f0f0u, v.y & 0xf0f0f0f0u, v.z & 0xf0f0f0f0u, v.w & 0xf0f0f0f0u);
}
__device__ __forceinline__ uint4 nib(uint4 v, int hi) {
  const int s = 4 * hi;
  return make_uint4((v.x >> s) & 0x0f0f0f0fu, (v.y >> s) & 0x0f0f0f0fu, (v.z >> s) & 0x0f0f0f0fu, (v.w >> s) & 0x0f0f0f0fu);
}
// or_hi ORs bits [sh, sh+nb) of each byte of h, moved to bits 4.., into q.
__device__ __forceinline__ uint4 or_hi(uint4 q, uint4 h, int sh, unsigned mask) {
  return make_uint4(q.x | (((h.x >> sh) & mask) << 4), q.y | (((h.y >> sh) & mask) << 4),
                    q.z | (((h.z >> sh) & mask) << 4), q.w | (((h.w >> sh) & mask) << 4));
}
// Q4_K / Q5_K 6-bit scale and min of sub-block j (ggml get_scale_min_k4)
// from the 12 scale bytes in words s0 (bytes 0-3), s1 (4-7), s2 (8-11).
__device__ __forceinline__ void scale_min_k4(int j, unsigned s0, unsigned s1, unsigned s2, float& sc, float& m) {
  const int i = j & 3;
  if (j < 4) {
    sc = float(byte_at(s0, i) & 63);
    m = float(byte_at(s1, i) & 63);
  } else {
    sc = float((byte_at(s2, i) & 0xf) | ((byte_at(s0, i) >> 6) << 4));
    m = float((byte_at(s2, i) >> 4) | ((byte_at(s1, i) >> 6) << 4));
  }
}

// scale_min_pair: the scales and mins of sub-blocks 2p and 2p+1 (a Q4_K
// or Q5_K unit's two), scale_min_k4's cases for both at once on the two
// bytes they share in each word (branch-free but for a select on p < 2).
__device__ __forceinline__ void scale_min_pair(int p, unsigned s0, unsigned s1, unsigned s2, float& sc0, float& sc1, float& m0,
                                               float& m1) {
  const int sh = 16 * (p & 1);
  const unsigned a = s0 >> sh, b = s1 >> sh, c = s2 >> sh;
  const unsigned sc = p < 2 ? a & 0x3f3fu : (c & 0x0f0fu) | ((a >> 2) & 0x3030u);
  const unsigned m = p < 2 ? b & 0x3f3fu : ((c >> 4) & 0x0f0fu) | ((b >> 2) & 0x3030u);
  sc0 = float(sc & 0xffu); sc1 = float((sc >> 8) & 0xffu);
  m0 = float(m & 0xffu); m1 = float((m >> 8) & 0xffu);
}

// Each type: BS elements in BB bytes per block; unit(rp, u, o) unpacks
// unit u of the row at rp; grp(u) is the activation slot (16-element
// group) of its first half, grp(u) + GS that of its second;
// deq32(rp, c, o) writes elements [32c, 32c+32) as float (embedding rows).
// MIN: b is used.
struct QQ4K {
  enum { BS = 256, BB = 144, MIN = 1, GS = 2, HI16 = 1 };
  static __device__ __forceinline__ int grp(int u) { return 16 * (u >> 3) + 4 * ((u & 7) >> 1) + (u & 1); }
  // Block: f16 d, f16 dmin, 12 bytes scales, 128 bytes qs; unit c (of 8)
  // is qs bytes [16c, 16c+16): low nibbles = sub-block 2(c/2), elements
  // 16(c%2).., high nibbles = sub-block 2(c/2)+1.
  static __device__ __forceinline__ void unit(const uint8_t* rp, int u, QU& o) {
    const uint8_t* bp = rp + (long)(u >> 3) * BB;
    const int c = u & 7;
    const uint4 h = ld_stream(bp), q = ld_stream(bp + 16 + 16 * c);
    const float2 dm = __half22float2(*reinterpret_cast<const __half2*>(&h.x));
    float sc0, m0, sc1, m1;
    scale_min_pair(c >> 1, h.y, h.z, h.w, sc0, sc1, m0, m1);
    o.a[0] = dm.x * sc0; o.b[0] = dm.y * m0;
    o.a[1] = dm.x * sc1 * 0.0625f; o.b[1] = dm.y * m1;
    set_q(o, 0, nib(q, 0));
    set_q(o, 1, hi16(q));
  }
  static __device__ void deq32(const uint8_t* rp, int c, float* o) {
    const uint8_t* bp = rp + (long)(c >> 3) * BB;
    const int j = c & 7;
    const unsigned* s = reinterpret_cast<const unsigned*>(bp + 4);
    float sc, m;
    scale_min_k4(j, s[0], s[1], s[2], sc, m);
    const float d = __half2float(*reinterpret_cast<const __half*>(bp)), dmin = __half2float(*reinterpret_cast<const __half*>(bp + 2));
    const float a = d * sc, b = dmin * m;
    for (int l = 0; l < 32; l++) o[l] = __fmul_rn(a, float((bp[16 + (j >> 1) * 32 + l] >> (4 * (j & 1))) & 0xf)) - b;
  }
};

struct QQ5K {
  enum { BS = 256, BB = 176, MIN = 1, GS = 2, HI16 = 0 };
  static __device__ __forceinline__ int grp(int u) { return 16 * (u >> 3) + 4 * ((u & 7) >> 1) + (u & 1); }
  // Block: d, dmin, 12 bytes scales, qh[32] (bit j of byte l: fifth bit of
  // element l of sub-block j), qs[128] as Q4_K's.
  static __device__ __forceinline__ void unit(const uint8_t* rp, int u, QU& o) {
    const uint8_t* bp = rp + (long)(u >> 3) * BB;
    const int c = u & 7;
    const int j0 = 2 * (c >> 1);
    const uint4 h = ld_stream(bp), qh = ld_stream(bp + 16 + 16 * (c & 1)), q = ld_stream(bp + 48 + 16 * c);
    const float2 dm = __half22float2(*reinterpret_cast<const __half2*>(&h.x));
    float sc0, m0, sc1, m1;
    scale_min_pair(c >> 1, h.y, h.z, h.w, sc0, sc1, m0, m1);
    o.a[0] = dm.x * sc0; o.b[0] = dm.y * m0;
    o.a[1] = dm.x * sc1; o.b[1] = dm.y * m1;
    set_q(o, 0, or_hi(nib(q, 0), qh, j0, 0x01010101u));
    set_q(o, 1, or_hi(nib(q, 1), qh, j0 + 1, 0x01010101u));
  }
  static __device__ void deq32(const uint8_t* rp, int c, float* o) {
    const uint8_t* bp = rp + (long)(c >> 3) * BB;
    const int j = c & 7;
    const unsigned* s = reinterpret_cast<const unsigned*>(bp + 4);
    float sc, m;
    scale_min_k4(j, s[0], s[1], s[2], sc, m);
    const float d = __half2float(*reinterpret_cast<const __half*>(bp)), dmin = __half2float(*reinterpret_cast<const __half*>(bp + 2));
    const float a = d * sc, b = dmin * m;
    for (int l = 0; l < 32; l++) {
      const int q = ((bp[48 + (j >> 1) * 32 + l] >> (4 * (j & 1))) & 0xf) | (((bp[16 + l] >> j) & 1) << 4);
      o[l] = __fmul_rn(a, float(q)) - b;
    }
  }
};

struct QQ6K {
  enum { BS = 256, BB = 210, MIN = 1, GS = 4, HI16 = 0 };
  static __device__ __forceinline__ int grp(int u) { return 16 * (u >> 3) + (u & 7) + 4 * ((u & 7) >> 2); }
  // Block: ql[128], qh[64], int8 scales[16], f16 d. Element n*128 + 32k +
  // l (n < 2, k < 4, l < 32) is ql[64n + l + 32(k%2)] nibble k/2, qh[32n +
  // l] bits 2k.., scale 8n + 2k + l/16. Unit c = 4n + 2kk + h (of 8): ql
  // bytes [16c, 16c+16), elements l in [16h, 16h+16) of k = kk (low
  // nibbles) and k = kk+2 (high nibbles).
  static __device__ __forceinline__ void unit(const uint8_t* rp, int u, QU& o) {
    const uint8_t* bp = rp + (long)(u >> 3) * BB;
    const int c = u & 7, n = c >> 2, kk = (c >> 1) & 1, h = c & 1;
    const uint4 ql = ld16_u(bp + 16 * c), qh = ld16_u(bp + 128 + 32 * n + 16 * h);
    const float d = ld_f16(bp + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(bp + 192 + 8 * n + 2 * kk + h);
    o.a[0] = d * float(__ldg(sc)); o.b[0] = 32.f * o.a[0];
    o.a[1] = d * float(__ldg(sc + 4)); o.b[1] = 32.f * o.a[1];
    // The high bits of quarter k are bits 2k, 2k+1 of each qh byte: to
    // bits 4, 5 by a left shift of 4 - 2kk (k = kk) or a right shift of
    // 2kk (k = kk + 2), one shift and a mask each (no bit crosses into
    // another byte's bits 4, 5).
    const unsigned s0 = 4 - 2 * kk, s1 = 2 * kk;
    set_q(o, 0, make_uint4((ql.x & 0x0f0f0f0fu) | ((qh.x << s0) & 0x30303030u), (ql.y & 0x0f0f0f0fu) | ((qh.y << s0) & 0x30303030u),
                           (ql.z & 0x0f0f0f0fu) | ((qh.z << s0) & 0x30303030u), (ql.w & 0x0f0f0f0fu) | ((qh.w << s0) & 0x30303030u)));
    set_q(o, 1, make_uint4(((ql.x >> 4) & 0x0f0f0f0fu) | ((qh.x >> s1) & 0x30303030u), ((ql.y >> 4) & 0x0f0f0f0fu) | ((qh.y >> s1) & 0x30303030u),
                           ((ql.z >> 4) & 0x0f0f0f0fu) | ((qh.z >> s1) & 0x30303030u), ((ql.w >> 4) & 0x0f0f0f0fu) | ((qh.w >> s1) & 0x30303030u)));
  }
  static __device__ void deq32(const uint8_t* rp, int c, float* o) {
    const uint8_t* bp = rp + (long)(c >> 3) * BB;
    const int n = (c & 7) >> 2, k = c & 3;
    const float d = __half2float(*reinterpret_cast<const __half*>(bp + 208));
    for (int l = 0; l < 32; l++) {
      const int q = ((bp[64 * n + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0xf) | (((bp[128 + 32 * n + l] >> (2 * k)) & 3) << 4);
      o[l] = d * float(reinterpret_cast<const int8_t*>(bp)[192 + 8 * n + 2 * k + l / 16]) * float(q - 32);
    }
  }
};

struct QQ40 {
  enum { BS = 32, BB = 18, MIN = 1, GS = 1, HI16 = 1 };
  static __device__ __forceinline__ int grp(int u) { return 2 * u; }
  // Block: f16 d, qs[16]: element i = low nibble of qs[i], i+16 its high
  // nibble; weight d*(q-8). Unit = block.
  static __device__ __forceinline__ void unit(const uint8_t* rp, int u, QU& o) {
    const uint8_t* bp = rp + (long)u * BB;
    unsigned w[8], o4[5];  // the block: bytes [off, off+18) of the window
    win<2>(bp, w);
    const int off = reinterpret_cast<uintptr_t>(bp) & 15;
    extract(w, off, o4);  // o4: d, qs[0..15] from byte 2 of o4[0]
    const uint4 q = make_uint4(__funnelshift_r(o4[0], o4[1], 16), __funnelshift_r(o4[1], o4[2], 16),
                               __funnelshift_r(o4[2], o4[3], 16), __funnelshift_r(o4[3], o4[4], 16));
    const float d = __half2float(__ushort_as_half((unsigned short)(o4[0] & 0xffffu)));
    o.a[0] = d;
    o.a[1] = d * 0.0625f;
    o.b[0] = o.b[1] = 8.f * d;
    set_q(o, 0, nib(q, 0));
    set_q(o, 1, hi16(q));
  }
  static __device__ void deq32(const uint8_t* rp, int c, float* o) {
    const uint8_t* bp = rp + (long)c * BB;
    const float d = __half2float(*reinterpret_cast<const __half*>(bp));
    for (int i = 0; i < 16; i++) {
      o[i] = d * float((bp[2 + i] & 0xf) - 8);
      o[i + 16] = d * float((bp[2 + i] >> 4) - 8);
    }
  }
};

struct QQ80 {
  enum { BS = 32, BB = 34, MIN = 0, GS = 1, HI16 = 0 };
  static __device__ __forceinline__ int grp(int u) { return 2 * u; }
  // Block: f16 d, int8 qs[32]; weight d*q. Unit = block.
  static __device__ __forceinline__ void unit(const uint8_t* rp, int u, QU& o) {
    const uint8_t* bp = rp + (long)u * BB;
    unsigned w[12], q[9];  // the block: bytes [off, off+34) of the window
    win<3>(bp, w);
    const int off = reinterpret_cast<uintptr_t>(bp) & 15;
    extract(w, off, q);  // q[0] low half: d; qs from byte 2
#pragma unroll
    for (int i = 0; i < 4; i++) {
      o.q[0][i] = __funnelshift_r(q[i], q[i + 1], 16);
      o.q[1][i] = __funnelshift_r(q[i + 4], q[i + 5], 16);
    }
    o.a[0] = o.a[1] = __half2float(__ushort_as_half((unsigned short)(q[0] & 0xffffu)));
    o.b[0] = o.b[1] = 0.f;
  }
  static __device__ void deq32(const uint8_t* rp, int c, float* o) {
    const uint8_t* bp = rp + (long)c * BB;
    const float d = __half2float(*reinterpret_cast<const __half*>(bp));
    for (int i = 0; i < 32; i++) o[i] = d * float(reinterpret_cast<const int8_t*>(bp)[2 + i]);
  }
};

// WQ adapts a type to the float loader interface (E elements of chunk c of
// row row) of embed_body and eagle_in_body.
template <class QT>
struct WQ {
  enum { E = 32 };
  static __device__ __forceinline__ void load(const void* w, const void*, long row, int K, int c, float* o) {
    QT::deq32(static_cast<const uint8_t*>(w) + row * (long)(K / QT::BS) * QT::BB, c, o);
  }
};

// ------------------------------------------------ activation quantization
// The activation is stored in plain order (group g = elements [16g,
// 16g+16) at slot g) for every weight type: a unit's two groups are slots
// grp(u) and grp(u) + GS of its type, two 16-byte loads either way, and a
// warp's 32 consecutive units cover whole super-blocks, so its loads touch
// the same sectors as a permuted order would. One quantized activation
// therefore serves every type (a Q4_K_M file's Q4_K and Q6_K parts), and a
// producer can quantize its output without knowing its consumer's type.

// qx32: the calling warp quantizes 32-block b of row t of an activation
// of K values (lane l holds element 32b + l, raw, in v; times g[32b + l]
// when g is set) into xq, xm, ssp (above): dx = amax/127, q = round(v/dx),
// the sums xor-trees in a fixed order. qx and the products' fused output
// quantization (mq_quant_out) both call it, so they write the same bits.
__device__ __forceinline__ void qx32(int8_t* xq, float2* xm, float* ssp, float v, const float* g, int t, int b, int K,
                                     int lane) {
  const int k = 32 * b + lane;
  float s = v * v;
  if (g) v *= g[k];
  float amax = fabsf(v);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    s += __shfl_xor_sync(0xffffffffu, s, o);
  }
  const float d = amax / 127.f;
  const int q = d == 0.f ? 0 : (int)roundf(v / d);
  int sum = q;
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);  // within each half of 16
  const long slot = (long)t * (K / 16) + 2 * b + (lane >> 4);
  xq[slot * 16 + (lane & 15)] = (int8_t)q;
  if ((lane & 15) == 0) xm[slot] = make_float2(d, d * float(sum));
  if (lane == 0) ssp[(long)t * (K / 32) + b] = s;
}

// qx_parts: where the activation of rows of K values lies in a scratch
// buffer at p (gpu/cuda: qxPtrs): int8 (MAXT, K), float2 (MAXT, K/16),
// float (MAXT, K/32).
__device__ __forceinline__ void qx_parts(int8_t* p, int K, int8_t*& xq, float2*& xm, float*& ssp) {
  xq = p;
  xm = reinterpret_cast<float2*>(p + (long)MAXT * K);
  ssp = reinterpret_cast<float*>(p + (long)MAXT * K + (long)MAXT * (K / 16) * 8);
}

// qx: x (T, K) [times g elementwise, when g is set] to xq, xm;
// ssp[t][b] = the sum of the raw x[t]^2 over 32-block b (the fused norm's,
// summed by mq_body). grid (ceil(K/256), T), block 256: a warp per
// 32-block, a lane per element, so that the step waits for one load and a
// few shuffles rather than a thread's 32 elements (a block per row took
// ~2-3 us at K=4096, four times a layer). Most products get their x
// quantized by the kernel that wrote it instead (mq_quant_out; wo's by
// the attention, att_quant); qx serves the rest (the first layer's qkv, TP
// and Gemma 3's post-norms).
extern "C" __global__ void __launch_bounds__(256) qx(int8_t* xq, float2* xm, float* ssp, const float* x, const float* g, int K) {
  pdl_wait();
  const int t = blockIdx.y, lane = threadIdx.x & 31, b = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (b < K / 32) qx32(xq, xm, ssp, x[(long)t * K + 32 * b + lane], g, t, b, K, lane);
  pdl_trigger();
}

// mq_quant_out: a product's fused output quantization (qx of out (T, N)
// [times g] into the scratch buffer qo), after the block stored its
// outputs. Blocks own rpb rows (4 to 16, dividing 32); the last block of
// each 32-row group to finish (counted in cnt[group], reset after)
// quantizes the group's 32 columns of every token, reading them back from
// L2. N must be a multiple of 32 (gpu/cuda checks). This replaces a qx
// launch (~5 us on the step's critical path) by a fence, an atomic and a
// few shuffles at the end of the producer.
__device__ __forceinline__ void mq_quant_out(const float* out, int ldo, int8_t* qo, const float* g, unsigned* cnt, int N,
                                             int T, int rpb) {
  __shared__ int last;
  __threadfence();  // this thread's outputs, before the block is counted
  __syncthreads();
  const int grp = blockIdx.x * rpb / 32;
  if (threadIdx.x == 0) last = atomicAdd(cnt + grp, 1u) == unsigned(32 / rpb - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (threadIdx.x == 0) cnt[grp] = 0;
  int8_t* xq;
  float2* xm;
  float* ssp;
  qx_parts(qo, N, xq, xm, ssp);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int t = warp; t < T; t += MV_WARPS) qx32(xq, xm, ssp, __ldcg(out + (long)t * ldo + 32 * grp + lane), g, t, grp, N, lane);
}

// ------------------------------------------------------- the products
// Rows per block by token bucket (gpu/cuda: mqRows): 4 up to 8 tokens (a
// unit's activation loads serve 4 rows: at 5 tokens with 2 rows they would
// take the L1 about as long as the weights), 2 for 16 (16 tokens x 2
// matrices x 4 rows of accumulators would spill). The split of a row over
// the threads does not depend on it.
#define MQ_ROWS(NT) ((NT) <= 8 ? 4 : 2)
// The unit loop is not unrolled: unrolled by 2 (ptxas sm_90) nvcc issued
// the second unit's loads after the first's arithmetic anyway, for 15
// more registers.

// mq_sumsq adds to ss[t] the sum of x[t]^2 (qx's per-32-block sums ssp,
// (T, units)) for every token t < T: lane i takes blocks i, i+32, ...,
// then an xor-tree, so every lane has the same sums in the same order.
template <int NT>
__device__ __forceinline__ void mq_sumsq(float (&ss)[NT], const float* __restrict__ ssp, int units, int T, int lane) {
#pragma unroll
  for (int t = 0; t < NT; t++) {
    if (t < T) {
      for (int i = lane; i < units; i += 32) ss[t] += __ldg(ssp + (long)t * units + i);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) ss[t] += __shfl_xor_sync(0xffffffffu, ss[t], o);
    }
  }
}

// mq_body: out (T, ldo) [+]= x (T, K) . W(N, K)^T as mv_body (mode, GLU,
// NORM), x given quantized by qx (xq, xm; with NORM, ssp: rmsnorm(x).w =
// rsqrt(sum(x*x)/K + eps) * ((x*g).w), qx having applied g).
// The block's MV_WARPS warps form MV_WARPS/ks groups of ks warps; a group
// owns R rows and its ks warps split their units (lane l of warp s takes
// units 32s + l, 32(s + ks) + l, ...); every lane keeps R rows' sums for
// all tokens. ks (1, 2 or 4) is chosen per matrix shape by gpu/cuda
// (mqSplit), never per T, so every T sums a row in the same order: lane
// order within a unit stride, xor-tree over the lanes, then the ks warps in
// order. Several units per lane (ks 1 on the wide matrices) amortize the
// per-thread address setup and reduction that a unit per thread (K = 4096
// over 128 threads) paid for every 32 weights.
template <class QT, int NT, bool GLU, bool NORM>
__device__ __forceinline__ void mq_body(float* __restrict__ out, int ldo, const int8_t* __restrict__ xq,
                                        const float2* __restrict__ xm, const float* __restrict__ ssp, const void* w,
                                        const void* w2, int N, int K, int T, int mode, float eps, int ks, int act,
                                        int8_t* qo, const float* qg, unsigned* qcnt) {
  constexpr int R = MQ_ROWS(NT);
  constexpr int NW = GLU ? 2 : 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int grp = warp / ks, sl = warp - grp * ks;
  const int row0 = (blockIdx.x * (MV_WARPS / ks) + grp) * R;
  const long rb = (long)(K / QT::BS) * QT::BB;
  const int units = K / 32, G = K / 16;
  const uint8_t* rp[NW][R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const long row = min(row0 + r, N - 1);
    rp[0][r] = static_cast<const uint8_t*>(w) + row * rb;
    if (GLU) rp[NW - 1][r] = static_cast<const uint8_t*>(w2) + row * rb;
  }
  float acc[NW][R][NT];
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int t = 0; t < NT; t++) acc[m][r][t] = 0.f;
  // Before pdl_wait: the lane's weight bytes into L2 (prefetch_l2; unit
  // u's 32 weights lie about 32*BB/BS bytes into the row at u*32*BB/BS,
  // and the lanes' units are consecutive, so every line is touched).
  if (l2_prefetch) {
    for (int v = sl * 32 + lane; v < units; v += ks * 32)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < R; r++) prefetch_l2(rp[m][r] + (long)v * (32 * QT::BB / QT::BS));
  }
  pdl_wait();
  // NORM: sum(x*x) of each token, from qx's per-32-block sums, in a fixed
  // order; up to 2 tokens before the unit loop, its latency under the
  // weights' (at 8, ptxas gave mqg_q4k_8 212 registers instead of 166).
  float ss[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) ss[t] = 0.f;
  if (NORM && NT <= 2) mq_sumsq<NT>(ss, ssp, units, T, lane);
  for (int u = sl * 32 + lane; u < units; u += ks * 32) {
    const int g0 = QT::grp(u);  // the unit's groups: slots g0 and g0 + GS (plain order)
    QU wu[NW][R];
#pragma unroll
    for (int m = 0; m < NW; m++)
#pragma unroll
      for (int r = 0; r < R; r++) QT::unit(rp[m][r], u, wu[m][r]);
#pragma unroll
    for (int t = 0; t < NT; t++) {
      if (t < T) {
        const int4* xr = reinterpret_cast<const int4*>(xq) + (long)t * G + g0;
        const int4 x0 = __ldg(xr), x1 = __ldg(xr + QT::GS);
        float4 mm;
        if (QT::GS == 1) {  // adjacent: one 16-byte load (g0 even)
          mm = __ldg(reinterpret_cast<const float4*>(xm + (long)t * G + g0));
        } else {
          const float2 m0 = __ldg(xm + (long)t * G + g0), m1 = __ldg(xm + (long)t * G + g0 + QT::GS);
          mm = make_float4(m0.x, m0.y, m1.x, m1.y);
        }
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
          for (int r = 0; r < R; r++) {
            const QU& q = wu[m][r];
            // The dots start from i2f's bias (0x4B400000): i2f_biased
            // then needs only the float subtraction.
            float a = acc[m][r][t];
            if (QT::BS == 32) {  // Q8_0, Q4_0: both groups in one 32-block, one dx
              int d = __dp4a(q.q[0][0], x0.x, QT::HI16 ? 0 : 0x4B400000);
              d = __dp4a(q.q[0][1], x0.y, d);
              d = __dp4a(q.q[0][2], x0.z, d);
              d = __dp4a(q.q[0][3], x0.w, d);
              if (QT::HI16) {  // Q4_0: 16 * (low dot) + (high dot, as 16q), a[1] = d/16
                d = 16 * d + 0x4B400000;
                d = dp4a_us(q.q[1][0], x1.x, d);
                d = dp4a_us(q.q[1][1], x1.y, d);
                d = dp4a_us(q.q[1][2], x1.z, d);
                d = dp4a_us(q.q[1][3], x1.w, d);
              } else {
                d = __dp4a(q.q[1][0], x1.x, d);
                d = __dp4a(q.q[1][1], x1.y, d);
                d = __dp4a(q.q[1][2], x1.z, d);
                d = __dp4a(q.q[1][3], x1.w, d);
              }
              a = fmaf(i2f_biased(d), __fmul_rn(q.a[QT::HI16 ? 1 : 0], mm.x), a);
              if (QT::MIN) a = fmaf(-q.b[0], mm.y + mm.w, a);
            } else {
              int d0 = __dp4a(q.q[0][0], x0.x, 0x4B400000);
              d0 = __dp4a(q.q[0][1], x0.y, d0);
              d0 = __dp4a(q.q[0][2], x0.z, d0);
              d0 = __dp4a(q.q[0][3], x0.w, d0);
              int d1;
              if (QT::HI16) {
                d1 = dp4a_us(q.q[1][0], x1.x, 0x4B400000);
                d1 = dp4a_us(q.q[1][1], x1.y, d1);
                d1 = dp4a_us(q.q[1][2], x1.z, d1);
                d1 = dp4a_us(q.q[1][3], x1.w, d1);
              } else {
                d1 = __dp4a(q.q[1][0], x1.x, 0x4B400000);
                d1 = __dp4a(q.q[1][1], x1.y, d1);
                d1 = __dp4a(q.q[1][2], x1.z, d1);
                d1 = __dp4a(q.q[1][3], x1.w, d1);
              }
              a = fmaf(i2f_biased(d0), __fmul_rn(q.a[0], mm.x), a);
              if (QT::MIN) a = fmaf(-q.b[0], mm.y, a);
              a = fmaf(i2f_biased(d1), __fmul_rn(q.a[1], mm.z), a);
              if (QT::MIN) a = fmaf(-q.b[1], mm.w, a);
            }
            acc[m][r][t] = a;
          }
      }
    }
  }
  pdl_trigger();
  // Each warp: xor-trees over its lanes (every lane gets the same sums).
#pragma unroll
  for (int m = 0; m < NW; m++)
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int t = 0; t < NT; t++)
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[m][r][t] += __shfl_xor_sync(0xffffffffu, acc[m][r][t], o);
  if (NORM && NT > 2) mq_sumsq<NT>(ss, ssp, units, T, lane);
  __shared__ float red[MV_WARPS][NW][R][NT];
  if (ks > 1) {  // the group's ks warps, in order
    if (lane == 0)
#pragma unroll
      for (int m = 0; m < NW; m++)
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
          for (int t = 0; t < NT; t++) red[warp][m][r][t] = acc[m][r][t];
    __syncthreads();
  }
  if (sl == 0) {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int t = 0; t < NT; t++) {
        if (lane != ((r * NT + t) & 31) || t >= T || row0 + r >= N) continue;
        finish_out<NW, MV_WARPS, NORM, GLU>(
            out + (long)t * ldo + row0 + r, mode,
            [&](int q, int m) { return ks == 1 ? (q == 0 ? acc[m][r][t] : 0.f) : (q < ks ? red[warp + q][m][r][t] : 0.f); },
            [&](int q) { return q == 0 ? ss[t] : 0.f; }, K, eps, act);
      }
  }
  if (qo) mq_quant_out(out, ldo, qo, qg, qcnt, N, T, (MV_WARPS / ks) * R);
}

// mq_*: plain product (mode store/add); mqn_*: of rmsnorm(x, g) (qx applied
// g, ssp its sums of squares); mqg_*: act(rmsnorm(x, g).gate) * (... .up),
// act 0 SiLU, 1 GELU-tanh (Gemma 3). mq_* and mqg_* quantize their output
// into qo when it is set (mq_quant_out: times qg, counted in qcnt).
#define MQ_INST(NAME, QT, NT)                                                                                   \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mq_##NAME##_##NT(                                  \
      float* out, int ldo, const int8_t* xq, const float2* xm, const void* w, int N, int K, int T, int mode,      \
      int ks, int8_t* qo, const float* qg, unsigned* qcnt) {                                                    \
    mq_body<QT, NT, false, false>(out, ldo, xq, xm, 0, w, 0, N, K, T, mode, 0.f, ks, 0, qo, qg, qcnt);          \
  }                                                                                                             \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mqn_##NAME##_##NT(                                 \
      float* out, int ldo, const int8_t* xq, const float2* xm, const float* ssp, const void* w, int N, int K,     \
      int T, float eps, int ks) {                                                                               \
    mq_body<QT, NT, false, true>(out, ldo, xq, xm, ssp, w, 0, N, K, T, 0, eps, ks, 0, nullptr, nullptr, nullptr); \
  }                                                                                                             \
  extern "C" __global__ void __launch_bounds__(MV_WARPS * 32) mqg_##NAME##_##NT(                                 \
      float* out, int ldo, const int8_t* xq, const float2* xm, const float* ssp, const void* w, const void* w2,   \
      int N, int K, int T, float eps, int ks, int act, int8_t* qo, const float* qg, unsigned* qcnt) {             \
    mq_body<QT, NT, true, true>(out, ldo, xq, xm, ssp, w, w2, N, K, T, 0, eps, ks, act, qo, qg, qcnt);          \
  }
#define MQ_ALL(NAME, QT) MQ_INST(NAME, QT, 1) MQ_INST(NAME, QT, 2) MQ_INST(NAME, QT, 4) MQ_INST(NAME, QT, 8) MQ_INST(NAME, QT, 16)
MQ_ALL(q4k, QQ4K)
MQ_ALL(q5k, QQ5K)
MQ_ALL(q6k, QQ6K)
MQ_ALL(q40, QQ40)
MQ_ALL(q80, QQ80)
