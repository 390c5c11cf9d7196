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

// Each type: BS elements in BB bytes per block; load(rp, u, w) issues the
// loads of unit u of the row at rp into w (Raw: the bytes as loaded, no
// arithmetic on them), dec(w, u, o) unpacks them (mq_body issues a unit's
// loads for all its rows before it unpacks any: quant_mv.cu); grp(u) is the activation slot (16-element
// group) of its first half, grp(u) + GS that of its second;
// deq32(rp, c, o) writes elements [32c, 32c+32) as float (embedding rows).
// MIN: b is used. BOTTOM: which of its one-token products load their
// next unit at the loop's bottom (quant_mv.cu). XPRE: its products of 2 to
// 5 tokens load every token's activation before the arithmetic (quant_mv.cu
// mq_body; measured per type, bench/cuda/results/s40).
struct QQ4K {
  enum { BS = 256, BB = 144, MIN = 1, GS = 2, HI16 = 1, BOTTOM = 1, XPRE = 0 };
  static __device__ __forceinline__ int grp(int u) { return 16 * (u >> 3) + 4 * ((u & 7) >> 1) + (u & 1); }
  // Block: f16 d, f16 dmin, 12 bytes scales, 128 bytes qs; unit c (of 8)
  // is qs bytes [16c, 16c+16): low nibbles = sub-block 2(c/2), elements
  // 16(c%2).., high nibbles = sub-block 2(c/2)+1.
  struct Raw { uint4 h, q; };
  static __device__ __forceinline__ void load(const uint8_t* rp, int u, Raw& w) {
    const uint8_t* bp = rp + (long)(u >> 3) * BB;
    w.h = ld_stream(bp); w.q = ld_stream(bp + 16 + 16 * (u & 7));
  }
  static __device__ __forceinline__ void dec(const Raw& w, int u, QU& o) {
    const int c = u & 7;
    const uint4 h = w.h, q = w.q;
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
  enum { BS = 256, BB = 176, MIN = 1, GS = 2, HI16 = 0, BOTTOM = 2, XPRE = 0 };
  static __device__ __forceinline__ int grp(int u) { return 16 * (u >> 3) + 4 * ((u & 7) >> 1) + (u & 1); }
  // Block: d, dmin, 12 bytes scales, qh[32] (bit j of byte l: fifth bit of
  // element l of sub-block j), qs[128] as Q4_K's.
  struct Raw { uint4 h, qh, q; };
  static __device__ __forceinline__ void load(const uint8_t* rp, int u, Raw& w) {
    const uint8_t* bp = rp + (long)(u >> 3) * BB;
    const int c = u & 7;
    w.h = ld_stream(bp); w.qh = ld_stream(bp + 16 + 16 * (c & 1)); w.q = ld_stream(bp + 48 + 16 * c);
  }
  static __device__ __forceinline__ void dec(const Raw& w, int u, QU& o) {
    const int c = u & 7;
    const int j0 = 2 * (c >> 1);
    const uint4 h = w.h, qh = w.qh, q = w.q;
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
  enum { BS = 256, BB = 210, MIN = 1, GS = 4, HI16 = 0, BOTTOM = 2, XPRE = 1 };
  static __device__ __forceinline__ int grp(int u) { return 16 * (u >> 3) + (u & 7) + 4 * ((u & 7) >> 2); }
  // Block: ql[128], qh[64], int8 scales[16], f16 d. Element n*128 + 32k +
  // l (n < 2, k < 4, l < 32) is ql[64n + l + 32(k%2)] nibble k/2, qh[32n +
  // l] bits 2k.., scale 8n + 2k + l/16. Unit c = 4n + 2kk + h (of 8): ql
  // bytes [16c, 16c+16), elements l in [16h, 16h+16) of k = kk (low
  // nibbles) and k = kk+2 (high nibbles).
  // Raw: the 32-byte windows of the unit's ql and qh bytes (both at the
  // block's offset mod 16: 16c and 128 + 32n + 16h are multiples of 16),
  // d, and the two scales.
  struct Raw { unsigned l[8], h[8]; int off; unsigned short d; int8_t s0, s1; };
  static __device__ __forceinline__ void load(const uint8_t* rp, int u, Raw& w) {
    const uint8_t* bp = rp + (long)(u >> 3) * BB;
    const int c = u & 7, n = c >> 2, kk = (c >> 1) & 1, h = c & 1;
    win<2>(bp + 16 * c, w.l);
    win<2>(bp + 128 + 32 * n + 16 * h, w.h);
    w.off = reinterpret_cast<uintptr_t>(bp) & 15;
    w.d = __ldg(reinterpret_cast<const unsigned short*>(bp + 208));
    const int8_t* sc = reinterpret_cast<const int8_t*>(bp + 192 + 8 * n + 2 * kk + h);
    w.s0 = __ldg(sc); w.s1 = __ldg(sc + 4);
  }
  static __device__ __forceinline__ void dec(const Raw& w, int u, QU& o) {
    const int kk = (u >> 1) & 1;
    unsigned ol[4], oh[4];
    extract(w.l, w.off, ol);
    extract(w.h, w.off, oh);
    const uint4 ql = as_uint4(ol), qh = as_uint4(oh);
    const float d = __half2float(__ushort_as_half(w.d));
    o.a[0] = d * float(w.s0); o.b[0] = 32.f * o.a[0];
    o.a[1] = d * float(w.s1); o.b[1] = 32.f * o.a[1];
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
  enum { BS = 32, BB = 18, MIN = 1, GS = 1, HI16 = 1, BOTTOM = 2, XPRE = 0 };
  static __device__ __forceinline__ int grp(int u) { return 2 * u; }
  // Block: f16 d, qs[16]: element i = low nibble of qs[i], i+16 its high
  // nibble; weight d*(q-8). Unit = block.
  struct Raw { unsigned w[8]; int off; };  // the block: bytes [off, off+18) of the window
  static __device__ __forceinline__ void load(const uint8_t* rp, int u, Raw& r) {
    const uint8_t* bp = rp + (long)u * BB;
    win<2>(bp, r.w);
    r.off = reinterpret_cast<uintptr_t>(bp) & 15;
  }
  static __device__ __forceinline__ void dec(const Raw& r, int, QU& o) {
    unsigned o4[5];
    extract(r.w, r.off, o4);  // o4: d, qs[0..15] from byte 2 of o4[0]
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
  enum { BS = 32, BB = 34, MIN = 0, GS = 1, HI16 = 0, BOTTOM = 0, XPRE = 1 };
  static __device__ __forceinline__ int grp(int u) { return 2 * u; }
  // Block: f16 d, int8 qs[32]; weight d*q. Unit = block.
  struct Raw { unsigned w[12]; int off; };  // the block: bytes [off, off+34) of the window
  static __device__ __forceinline__ void load(const uint8_t* rp, int u, Raw& r) {
    const uint8_t* bp = rp + (long)u * BB;
    win<3>(bp, r.w);
    r.off = reinterpret_cast<uintptr_t>(bp) & 15;
  }
  static __device__ __forceinline__ void dec(const Raw& r, int, QU& o) {
    unsigned q[9];
    extract(r.w, r.off, q);  // q[0] low half: d; qs from byte 2
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

// mq_quant_group: the block's first warps quantize the 32 columns of group
// grp of out for every token (warp w: tokens w, w + warps, ...).
__device__ __forceinline__ void mq_quant_group(const float* out, int ldo, int8_t* qo, const float* g, int N, int T,
                                               int grp, int warps) {
  int8_t* xq;
  float2* xm;
  float* ssp;
  qx_parts(qo, N, xq, xm, ssp);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int t = warp; t < T; t += warps) qx32(xq, xm, ssp, __ldcg(out + (long)t * ldo + 32 * grp + lane), g, t, grp, N, lane);
}

// mq_quant_out: a product's fused output quantization (qx of out (T, N)
// [times g] into the scratch buffer qo), after the block stored its
// outputs. Blocks own rpb rows (2 to 16, dividing 32); the last block of
// each 32-row group to finish (counted in cnt[group], reset after)
// quantizes the group's 32 columns of every token, reading them back from
// L2. N must be a multiple of 32 (gpu/cuda checks). This replaces a qx
// launch (~5 us on the step's critical path) by one acq_rel atomic
// (arrive_last) and a few shuffles at the end of the producer.
__device__ __forceinline__ void mq_quant_out(const float* out, int ldo, int8_t* qo, const float* g, unsigned* cnt, int N,
                                             int T, int rpb) {
  __shared__ int last;
  const int grp = blockIdx.x * rpb / 32;
  if (!arrive_last(cnt + grp, 32 / rpb, last)) return;
  if (threadIdx.x == 0) cnt[grp] = 0;
  mq_quant_group(out, ldo, qo, g, N, T, grp, MV_WARPS);
}

// mq_quant_own: mq_quant_out for a block that owns the whole 32-row group
// grp of out (the wide one-token variants): its stores are visible to its
// threads after the barrier, so it quantizes them at once (one trip to L2,
// against the atomic and a read back from the last block).
__device__ __forceinline__ void mq_quant_own(const float* out, int ldo, int8_t* qo, const float* g, int N, int T, int grp,
                                             int warps) {
  __syncthreads();
  mq_quant_group(out, ldo, qo, g, N, T, grp, warps);
}

// ------------------------------------------------------- the products
// mq_body and its kernels: quant_mv.cu.
#include "quant_mv.cu"
