// rigscope CUDA kernels: the batch-invariant attention (included by
// attention.cu, after attn_body).
//
// attn_fixed is attn_body's work (RoPE, the cache store, attention for T
// tokens with a causal or tree mask) split by FIXED chunk boundaries
// instead of by the step's length, so that a query row at position p gets
// the same bits whether it is alone (decode) or one of T rows of a verify
// (chain or tree): speculative decoding then reproduces plain greedy
// exactly, with a float32 or a bf16 cache.
//
// Positions, not slots, place a key: the key of position q sits in
// "virtual slot" q. A cached slot j < base is position j; the step's new
// token a (stored in slot base+a) is at pos[a]. In a chain pos[a] = base+a
// (the same); in a tree a row's ancestors are at base + their depth, which
// is where decode finds them after KeepPath. anc[t][v] is the new token
// row t sees at position base+v (-1: none). When the step's positions are
// not base + 0..T-1 per row (two visible tokens at one position, or one
// outside), the slots are used as they are (anc[t][a] = a when t sees a).
//
// The virtual slots [c0, base+T) are cut into chunks of CH (a multiple of
// 32, fixed per target: the kernel argument chunk) at multiples of CH, each
// chunk into 32-slot subchunks at multiples of 32; lane l of a subchunk
// holds slot j0+l. Each chunk's (max, sum, acc) is the online softmax over
// its subchunks in ascending order, from an empty state; chunk k's partial
// goes to column k of pm, pl, pacc ((hk, G*MAXT, NP[, HD]), NP >= the
// chunks of the longest step), and the last block to finish merges
// columns in one fixed order. Flat plans (GS = 1): over the chunks
// [k0, k1), the max, each lane's sum of f*l over the columns k = lane mod
// 32 ascending then a butterfly, the numerator sequentially over k.
// Grouped plans (GS = 4, the default): chunks 4g..4g+3 combined as the
// fixed tree ((c0 (+) c1) (+) (c2 (+) c3)) (att_group; (+) rescales two
// partials to the larger max), then the groups merged in order (den and
// numerator sequential). A row's invisible slots add exact zeros (p = 0,
// alpha = 1; an invisible chunk or group: f = 0, or (+)'s identity), so
// the slots past a row's position, a verify's other rows, and chunks that
// exist in one step but not in the other leave its bits alone. With one
// chunk in all the block writes acc/l directly, which is what the merge
// of one column gives.
//
// Block (h, s, rg) takes chunks [k0 + s*q, +q), q = ceil(chunks / S): at
// long contexts a block walks several chunks (one partial each), at short
// ones blocks sit idle (S is fixed per CUDA graph; the length is not).
// Grouped plans with more chunks than blocks hand out whole groups
// instead, and each block writes its groups' partials after its loop
// (att_group on the chunks it wrote), so that the last block merges about
// S groups rather than every chunk; with fewer chunks than blocks the
// last block builds the groups from the chunks with the same code.
// Every block whose chunks hold new virtual slots stores all T new slots
// (the same values from every such block and row group, as attn_body's
// row groups do) and reads them back through the cache (so a bf16 cache's
// rounding is what every step attends to). A subchunk that mixes cached
// slots and tree-placed new ones (anc not the identity) is done in two
// passes over the shared buffer: the cached lanes, then the new lanes
// gathering their row's ancestor; the arithmetic per lane is the same
// fmaf chain in the same order as the one-pass subchunk.
//
// ONE (the _t1 kernels, launched for steps of one token: a decode, an
// EAGLE-3 head's draft step): T is 1 at compile time. A lone row's table
// is the identity whatever its position (anc[0][0] is 0 or -1), so the
// two-pass subchunks and the loops over T fold away: attn_128_1_kb has
// 7,295 SASS instructions against 8,701 (sm_90). The code a row runs is
// the same, so its bits are those of the general kernel (-checks kv).
//
// CHAIN (the _ch kernels, launched for the verify of a speculative cycle,
// gpu/cuda cycle.go: always a chain, positions base + t with the causal
// mask): row t sees new token a at position base+a for a <= t, which is
// the table the general kernel builds from such a step's mask and
// positions; it is used as such, so the table's set-up and the two-pass
// subchunks fold away. The same bits again (-checks kv runs its chains on
// them).

#include "attn_partials.cu"

template <int HD, int RPW, bool EXT, typename KT, bool ONE = false, bool CHAIN = false>
__device__ __forceinline__ void attn_fixed(AttSmem<HD, ATT_WARPS * RPW>& sm, float* out, float* pm, float* pl,
                                           float* pacc, unsigned* cnt, const float* qkv, int ldq, KT* Kc, KT* Vc,
                                           const Step* st, const float* __restrict__ cs,
                                           const float* __restrict__ sn, int hq, int hk, float scale,
                                           int interleaved, __nv_bfloat16* xf, const float* __restrict__ bias,
                                           const float* __restrict__ qkn, float eps, int window, int8_t* qo,
                                           int CH, int NP, int GS) {
  constexpr int RB = ATT_WARPS * RPW, HALF = HD / 2, EPL = Vec<HD>::EPL;
  auto& qs = sm.qs;
  auto& buf = sm.buf;
  const int h = blockIdx.x, s = blockIdx.y, S = gridDim.y, rg = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  ATT_TRSTART();
  const int T = ONE ? 1 : st->T, base = st->base, G = hq / hk, R = G * T;
  const int r0 = rg * RB, rn = min(RB, R - r0);
  const int width = hk * HD;
  int c0 = 0;  // the first virtual slot any row of the step sees
  if (EXT && window > 0) {
    int pmin = st->pos[0];
    for (int t = 1; t < T; t++) pmin = min(pmin, st->pos[t]);
    c0 = min(base, max(0, pmin - window + 1));
  }
  const int end = base + T;  // one past the last virtual slot
  const int k0 = c0 / CH, k1 = (end + CH - 1) / CH, nk = k1 - k0;
  const bool direct = nk == 1;  // one chunk: block 0 writes the rows
  // Grouped plans (GS = 4): groups of 4 chunks at multiples of 4, each
  // combined as a fixed tree (att_group), the merge over groups. With
  // more chunks than blocks a block takes whole groups and writes their
  // partials (byGroup); else a block takes one chunk and the merger
  // builds the groups. Flat plans (GS = 1): the merge over chunks.
  const bool byGroup = GS > 1 && nk > S;
  const int NPS = GS > 1 ? NP + (NP + 3) / 4 : NP;  // partial columns: chunks, then groups
  int kb, ke;
  if (byGroup) {
    const int ga = k0 / 4, gz = (k1 - 1) / 4, qg = (gz - ga + S) / S, gb = ga + s * qg, ge = min(gz + 1, gb + qg);
    kb = gb < ge ? max(k0, 4 * gb) : k1;
    ke = gb < ge ? min(k1, 4 * ge) : k1;
  } else {
    const int q = (nk + S - 1) / S;
    kb = k0 + s * q, ke = min(k1, kb + q);
  }
  const int lo = max(kb * CH, c0 / 32 * 32), hi = min(ke * CH, end);
  const int nc = kb < ke ? (hi - lo + 31) / 32 : 0;             // subchunks
  const int n0 = nc > 0 ? max(0, min(nc, (base - lo) / 32)) : 0;  // those with cached slots only
  const bool tail = nc > n0;                                     // the block sees new virtual slots
  const long rows = (long)G * MAXT;  // partial rows per KV head
  if (nc == 0) {
    if (direct) return;
    pdl_wait();
    ATT_TRG(1), ATT_TR(4), ATT_TRF(1);
    goto merge;  // an idle block still counts as finished
  }
  {
    typedef KVChunk<HD, KT> Chunk;
    constexpr int DEPTH = Chunk::DEPTH;
    Chunk ch[DEPTH];
    // load_chunk: subchunk c's cached slots, and with the identity layout
    // its new ones too (after the prologue stored them).
    auto load_chunk = [&](Chunk& k, int c, bool ident) {
      const int j0 = lo + 32 * c, lim = c < n0 || !ident ? base : end;
      k.load(Kc, Vc, j0, max(0, min(32, lim - j0)), width, h);
    };
#pragma unroll
    for (int u = 0; u < DEPTH; u++)
      if (u < n0) load_chunk(ch[u], u, true);
    pdl_wait();
    ATT_TRG(1), ATT_TR(4);

    constexpr int NT = ATT_WARPS * 32, RQ = (RB * HALF + NT - 1) / NT, KB = 4;
    if (!CHAIN && tail) {  // anc: which new token row t sees at position base+v
      if (threadIdx.x == 0) sm.virt = 1, sm.ident = 1;
      __syncthreads();
      if (threadIdx.x < T) {
        const int t = threadIdx.x;
        const unsigned m = st->mask[t];
        for (int v = 0; v < MAXT; v++) sm.anc[t][v] = -1;
        for (int a = 0; a < T; a++)
          if ((m >> a) & 1u) {
            const int v = st->pos[a] - base;
            if (v < 0 || v >= T || sm.anc[t][v] >= 0)
              sm.virt = 0;
            else
              sm.anc[t][v] = (signed char)a;
          }
      }
      __syncthreads();
      if (threadIdx.x < T) {
        const int t = threadIdx.x;
        if (!sm.virt)
          for (int a = 0; a < MAXT; a++) sm.anc[t][a] = a < T && ((st->mask[t] >> a) & 1u) ? a : -1;
        for (int v = 0; v < MAXT; v++)
          if (sm.anc[t][v] >= 0 && sm.anc[t][v] != v) sm.ident = 0;
      }
    }
    if (EXT && qkn) {  // as attn_body
      for (int rl = warp; rl < rn; rl += ATT_WARPS) {
        const int r = r0 + rl, off = (h * G + r % G) * HD;
        const float inv = head_inv_rms<HD>(qkv + (long)(r / G) * ldq + off, bias ? bias + off : nullptr, eps, lane);
        if (lane == 0) sm.qinv[rl] = inv;
      }
      if (tail)
        for (int t = warp; t < T; t += ATT_WARPS) {
          const int off = hq * HD + h * HD;
          const float inv = head_inv_rms<HD>(qkv + (long)t * ldq + off, bias ? bias + off : nullptr, eps, lane);
          if (lane == 0) sm.kinv[t] = inv;
        }
      __syncthreads();
    }
    {  // RoPE on the block's query rows (as attn_body)
      float xa[RQ], xb[RQ], c[RQ], sv[RQ], ba[RQ], bb[RQ], wa[RQ], wb[RQ];
#pragma unroll
      for (int qq = 0; qq < RQ; qq++) {
        const int i = threadIdx.x + qq * NT, rl = i / HALF, j = i % HALF, r = r0 + rl, t = r / G;
        if (i < rn * HALF) {
          const int off = (h * G + r % G) * HD, a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
          const float* x = qkv + (long)t * ldq + off;
          const int p = st->pos[t];
          c[qq] = cs[(long)p * HALF + j];
          sv[qq] = sn[(long)p * HALF + j];
          xa[qq] = x[a];
          xb[qq] = x[b];
          if (EXT) {
            ba[qq] = bias ? bias[off + a] : 0.f;
            bb[qq] = bias ? bias[off + b] : 0.f;
            wa[qq] = qkn ? qkn[a] : 1.f;
            wb[qq] = qkn ? qkn[b] : 1.f;
          }
        }
      }
#pragma unroll
      for (int qq = 0; qq < RQ; qq++) {
        const int i = threadIdx.x + qq * NT, rl = i / HALF, j = i % HALF;
        if (i < rn * HALF) {
          const int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
          float va = xa[qq], vb = xb[qq];
          if (EXT && bias) va += ba[qq], vb += bb[qq];
          if (EXT && qkn) va = va * sm.qinv[rl] * wa[qq], vb = vb * sm.qinv[rl] * wb[qq];
          qs[rl][a] = fmaf(va, c[qq], -__fmul_rn(vb, sv[qq]));  // pinned: no contraction left to the compiler
          qs[rl][b] = fmaf(va, sv[qq], __fmul_rn(vb, c[qq]));
        }
      }
    }
    ATT_TR(24);
    if (tail) {  // every new slot, rotated and stored (as attn_body's last split)
      for (int i0 = 0; i0 < T * HALF; i0 += KB * NT) {
        float ka[KB], kb2[KB], va[KB], vb[KB], c[KB], sv[KB], bk[KB][4], wk[KB][2];
#pragma unroll
        for (int qq = 0; qq < KB; qq++) {
          const int i = i0 + threadIdx.x + qq * NT, t = i / HALF, j = i % HALF;
          if (i < T * HALF) {
            const int koff = hq * HD + h * HD, voff = koff + hk * HD;
            const float* k = qkv + (long)t * ldq + koff;
            const float* v = qkv + (long)t * ldq + voff;
            const int p = st->pos[t], a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
            c[qq] = cs[(long)p * HALF + j];
            sv[qq] = sn[(long)p * HALF + j];
            ka[qq] = k[a];
            kb2[qq] = k[b];
            va[qq] = v[a];
            vb[qq] = v[b];
            if (EXT) {
              bk[qq][0] = bias ? bias[koff + a] : 0.f;
              bk[qq][1] = bias ? bias[koff + b] : 0.f;
              bk[qq][2] = bias ? bias[voff + a] : 0.f;
              bk[qq][3] = bias ? bias[voff + b] : 0.f;
              wk[qq][0] = qkn ? qkn[HD + a] : 1.f;
              wk[qq][1] = qkn ? qkn[HD + b] : 1.f;
            }
          }
        }
#pragma unroll
        for (int qq = 0; qq < KB; qq++) {
          const int i = i0 + threadIdx.x + qq * NT, t = i / HALF, j = i % HALF;
          if (i < T * HALF) {
            const int a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + HALF;
            if (EXT && bias) ka[qq] += bk[qq][0], kb2[qq] += bk[qq][1], va[qq] += bk[qq][2], vb[qq] += bk[qq][3];
            if (EXT && qkn) ka[qq] = ka[qq] * sm.kinv[t] * wk[qq][0], kb2[qq] = kb2[qq] * sm.kinv[t] * wk[qq][1];
            KT* kc = Kc + (long)(base + t) * width + h * HD;
            KT* vc = Vc + (long)(base + t) * width + h * HD;
            kv_st(kc + a, fmaf(ka[qq], c[qq], -__fmul_rn(kb2[qq], sv[qq])));
            kv_st(kc + b, fmaf(ka[qq], sv[qq], __fmul_rn(kb2[qq], c[qq])));
            kv_st(vc + a, va[qq]);
            kv_st(vc + b, vb[qq]);
          }
        }
      }
    }
    ATT_TR(25);
    __syncthreads();  // stores, anc, qs
    ATT_TR(5);

    const bool ident = ONE || CHAIN || !tail || sm.ident;
    // The pipelined loop takes the one-pass subchunks [0, n1); with a tree
    // layout (anc not the identity) the subchunks holding new virtual
    // slots, [n1, nc), follow in the two-pass loop (no chunks in flight:
    // its gathers would otherwise cost the pipelined loop registers).
    const int n1 = ident ? nc : n0;
    float mrun[RPW], lrun[RPW];
    Vec<HD> acc[RPW];
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      mrun[i] = -INFINITY;
      lrun[i] = 0.f;
#pragma unroll
      for (int e = 0; e < EPL; e++) acc[i].v[e] = 0.f;
    }
#pragma unroll
    for (int u = 0; u < DEPTH; u++)
      if (u >= n0 && u < n1) load_chunk(ch[u], u, ident);
    // update: the online softmax step of each row over subchunk j0's
    // scores (sc: lane's slot j0+lane; then its p).
    auto update = [&](float* sc, int j0) {
      const int j = j0 + lane;
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        const int rl = warp * RPW + i;
        if (rl >= rn) break;  // warp-uniform
        const int t = (r0 + rl) / G;
        bool vis;
        int kp = j;  // the key's position
        if (j < base) {
          vis = true;
        } else {
          const int v = j - base, a = CHAIN ? (v <= t ? v : -1) : v < T ? sm.anc[t][v] : -1;
          vis = a >= 0;
          kp = vis ? st->pos[a] : 0;
        }
        if (EXT && window > 0 && vis) vis = st->pos[t] - kp < window;
        const float x = vis ? sc[i] * scale : -INFINITY;
        float mx = x;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float mnew = fmaxf(mrun[i], mx);
        const float p = mnew == -INFINITY ? 0.f : __expf(x - mnew);
        const float alpha = mrun[i] == -INFINITY ? 0.f : __expf(mrun[i] - mnew);
        float sum = p;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        mrun[i] = mnew;
        lrun[i] = fmaf(lrun[i], alpha, sum);
#pragma unroll
        for (int e = 0; e < EPL; e++) acc[i].v[e] = __fmul_rn(acc[i].v[e], alpha);
        sc[i] = p;
      }
    };
    // flush: after subchunk c, the chunk's partial when the chunk ends
    // there, then an empty state.
    auto flush = [&](int c) {
      const int j0 = lo + 32 * c;
      if (direct || (c != nc - 1 && (j0 + 32) % CH != 0)) return;
      const int k = j0 / CH;
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        const int rl = warp * RPW + i;
        if (rl < rn) {
          const long idx = ((long)h * rows + r0 + rl) * NPS + k;
          if (lane == 0) pm[idx] = mrun[i], pl[idx] = lrun[i];
          if (lane * EPL < HD) st_run<EPL>(pacc + idx * HD + lane * EPL, acc[i].v);
        }
        mrun[i] = -INFINITY;
        lrun[i] = 0.f;
#pragma unroll
        for (int e = 0; e < EPL; e++) acc[i].v[e] = 0.f;
      }
    };
    const int col = min(lane * EPL, HD - EPL);
    for (int cd = 0; cd < n1; cd += DEPTH) {
#pragma unroll
      for (int u = 0; u < DEPTH; u++) {  // unrolled: ch[u] stays in registers
        const int c = cd + u;
        if (c >= n1) break;  // block-uniform
        __syncthreads();     // the previous chunk's V reads are done
        if (c == 0) ATT_TR(11);
        ch[u].put(buf, false);
        __syncthreads();
        if (c == 0) ATT_TR(12);
        float sc[RPW];
#pragma unroll
        for (int i = 0; i < RPW; i++) sc[i] = 0.f;
#pragma unroll 8
        for (int d = 0; d < HD; d += 4) {  // att_dot's chain, the rows interleaved
          const float4 k4 = *reinterpret_cast<const float4*>(&buf[lane][d]);
#pragma unroll
          for (int i = 0; i < RPW; i++) {
            const float4 q4 = *reinterpret_cast<const float4*>(&qs[warp * RPW + i][d]);
            sc[i] = fmaf(k4.x, q4.x, fmaf(k4.y, q4.y, fmaf(k4.z, q4.z, fmaf(k4.w, q4.w, sc[i]))));
          }
        }
        if (c == 0) ATT_TR(13);
        update(sc, lo + 32 * c);
        if (c == 0) ATT_TR(14);
        __syncthreads();  // K reads are done
        ch[u].put(buf, true);
        __syncthreads();
        if (c == 0) ATT_TR(15);
        if (c + DEPTH < n1) load_chunk(ch[u], c + DEPTH, ident);
#pragma unroll 4
        for (int jj = 0; jj < 32; jj++) {
          Vec<HD> vv;
          vv.load(&buf[jj][col]);
#pragma unroll
          for (int i = 0; i < RPW; i++) {
            const float pj = __shfl_sync(0xffffffffu, sc[i], jj);
#pragma unroll
            for (int e = 0; e < EPL; e++) acc[i].v[e] = fmaf(pj, vv.v[e], acc[i].v[e]);
          }
        }
        if (c == 0) ATT_TR(16);
        flush(c);
        if (c == 0) ATT_TR(17);
      }
    }
    // put_rows: rows [j, j+n) of the cache C (K or V), widened, into buf
    // rows 0..n-1.
    auto put_rows = [&](const KT* C, int j, int n) {
      for (int f = threadIdx.x; f < n * (HD / 4); f += ATT_WARPS * 32) {
        const int sl = f / (HD / 4), e = 4 * (f % (HD / 4));
        *reinterpret_cast<float4*>(&buf[sl][e]) = kv_ld4(C + (long)(j + sl) * width + h * HD + e);
      }
    };
    for (int c = n1; c < nc; c++) {  // two passes: cached lanes, then the rows' gathered new ones
      const int j0 = lo + 32 * c, ncached = max(0, min(32, base - j0)), j = j0 + lane;
      __syncthreads();
      for (int f = threadIdx.x; f < 32 * (HD / 4); f += ATT_WARPS * 32)  // zeros past the cached slots, as a chunk's load
        *reinterpret_cast<float4*>(&buf[f / (HD / 4)][4 * (f % (HD / 4))]) = make_float4(0.f, 0.f, 0.f, 0.f);
      __syncthreads();
      put_rows(Kc, j0, ncached);
      __syncthreads();
      float sc[RPW];
#pragma unroll
      for (int i = 0; i < RPW; i++) sc[i] = att_dot<HD>(buf, lane, qs[warp * RPW + i]);
      __syncthreads();
      put_rows(Kc, base, T);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        const int rl = warp * RPW + i, t = min(r0 + rl, R - 1) / G, v = j - base;
        const int a = v >= 0 && v < T ? sm.anc[t][v] : -1;
        if (lane >= ncached) sc[i] = att_dot<HD>(buf, max(a, 0), qs[rl]);
      }
      update(sc, j0);
      __syncthreads();
      put_rows(Vc, j0, ncached);
      __syncthreads();
#pragma unroll 1
      for (int jj = 0; jj < ncached; jj++) {
        Vec<HD> vv;
        vv.load(&buf[jj][col]);
#pragma unroll
        for (int i = 0; i < RPW; i++) {
          const float pj = __shfl_sync(0xffffffffu, sc[i], jj);
#pragma unroll
          for (int e = 0; e < EPL; e++) acc[i].v[e] = fmaf(pj, vv.v[e], acc[i].v[e]);
        }
      }
      __syncthreads();
      put_rows(Vc, base, T);
      __syncthreads();
#pragma unroll 1
      for (int jj = ncached; jj < 32; jj++) {
#pragma unroll
        for (int i = 0; i < RPW; i++) {
          const int rl = warp * RPW + i, t = min(r0 + rl, R - 1) / G, v = j0 + jj - base;
          const int a = v < T ? sm.anc[t][v] : -1;
          Vec<HD> vv;
          vv.load(&buf[max(a, 0)][col]);
          const float pj = __shfl_sync(0xffffffffu, sc[i], jj);
#pragma unroll
          for (int e = 0; e < EPL; e++) acc[i].v[e] = fmaf(pj, vv.v[e], acc[i].v[e]);
        }
      }
      flush(c);
    }
    if (byGroup) {  // the block's groups, from its chunks' partials (after the loops: no chunks in flight)
      __syncwarp();    // the warp's rows: every chunk written (lane 0: m, l)
      for (int g = kb / 4; g <= (ke - 1) / 4; g++)
#pragma unroll 1
        for (int i = 0; i < RPW; i++) {
          const int rl = warp * RPW + i;
          if (rl < rn) {
            const long b = ((long)h * rows + r0 + rl) * NPS;
            float m, l, a[EPL];
            att_group<HD, EPL>(pm, pl, pacc, b, g, k0, k1, col, m, l, a);
            if (lane == 0) pm[b + NP + g] = m, pl[b + NP + g] = l;
            if (lane * EPL < HD) st_run<EPL>(pacc + (b + NP + g) * HD + lane * EPL, a);
          }
        }
    }
    ATT_TR(6);
    pdl_trigger();
    if (direct) {
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        const int rl = warp * RPW + i, r = r0 + rl;
        if (rl < rn && lane * EPL < HD) {
          float v[EPL];
#pragma unroll
          for (int e = 0; e < EPL; e++) v[e] = __fdiv_rn(acc[i].v[e], lrun[i]);
          att_store<EPL>(out, xf, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v);
          if (HD >= 32 && qo) att_quant<EPL>(qo, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v, lane);
        }
      }
      ATT_TRF(2), ATT_TREND();
      return;
    }
  }
merge:
  if (!arrive_last(&cnt[h * gridDim.z + rg], S, sm.last)) {
    ATT_TREND();
    return;
  }
  ATT_TR(7), ATT_TRF(4);
  // The flat merge below runs over columns [cA, cZ) from column off: the
  // chunks, or with a grouped plan whose blocks took whole groups the
  // groups' columns. With a grouped plan and fewer chunks than blocks the
  // groups are built here (att_group) and merged with the same arithmetic:
  // the max, lane l's sum of f*l over the groups g = l mod 32 then a
  // butterfly, the numerator over the groups in order.
  int cA = k0, cZ = k1, off = 0;
  if (GS > 1 && byGroup) {
    cA = k0 / 4, cZ = (k1 - 1) / 4 + 1, off = NP;
  } else if (GS > 1) {
    const int col = min(lane * EPL, HD - EPL);
    const int g0 = k0 / 4, g1 = (k1 - 1) / 4;
#pragma unroll 1
    for (int i = 0; i < RPW; i++) {
      const int rl = warp + ATT_WARPS * i, r = r0 + rl;
      if (rl >= rn) continue;  // warp-uniform
      const long b = ((long)h * rows + r0 + rl) * NPS;
      float M = k0 + lane < k1 ? __ldcg(pm + b + k0 + lane) : -INFINITY;  // nk <= S <= 32 chunks
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
      if (i == 0) ATT_TR(18);
      float d = 0.f, num[EPL];
#pragma unroll
      for (int e = 0; e < EPL; e++) num[e] = -0.f;
      // Not unrolled: the merge runs once per head, in the last block, at
      // the far end of the kernel's code, so its instructions are fetched
      // cold; unrolled by 2 it took 647 more (attn_128_1_kb 9,348 against
      // 8,701). H100, Q4_K_M decode at ctx 512 (bench/cuda/results/s26,
      // n4): the attention launch 17.7 -> 15.0 us (ncu), the step 2452 ->
      // 2420 us; same bits.
#pragma unroll 1
      for (int g = g0; g <= g1; g++) {
        float mg, lg, ag[EPL];
        att_group<HD, EPL>(pm, pl, pacc, b, g, k0, k1, col, mg, lg, ag);
        const float f = mg == M ? 1.f : mg == -INFINITY ? 0.f : __expf(mg - M);
        if ((g & 31) == lane) d = fmaf(f, lg, d);
#pragma unroll
        for (int e = 0; e < EPL; e++) num[e] = fmaf(f, ag[e], num[e]);
        if (i == 0 && g - g0 < 4) ATT_TR(19 + g - g0);
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
      if (lane * EPL < HD) {
        float v[EPL];
#pragma unroll
        for (int e = 0; e < EPL; e++) v[e] = __fdiv_rn(num[e], d);
        att_store<EPL>(out, xf, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v);
        if (HD >= 32 && qo) att_quant<EPL>(qo, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v, lane);
      }
    }
    if (threadIdx.x == 0) cnt[h * gridDim.z + rg] = 0;
    ATT_TREND();
    return;
  }
  {
    // Merge columns [cA, cZ) (from off) of rows warp + 4i: the max, then lane l's
    // sum of f*l over columns l mod 32 (ascending, then a butterfly), then
    // the numerator over the columns in order, 32 at a time (lane l holds
    // the factor f of column g*32 + l). The first MG groups' (m, l) are
    // loaded at once into registers (one round trip up to MG*32 columns),
    // later ones again where needed; the arithmetic is the same.
    constexpr int MG = 4;
    const int col = min(lane * EPL, HD - EPL);
    const int g0 = cA / 32, g1 = (cZ - 1) / 32;
    float M[RPW], den[RPW], num[RPW][EPL], fg[RPW][MG], lg[RPW][MG];
    auto fac = [](float mk, float m) { return mk == m ? 1.f : mk == -INFINITY ? 0.f : __expf(mk - m); };
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int rl = warp + ATT_WARPS * i;
      const long b = ((long)h * rows + r0 + rl) * NPS;
      float m = -INFINITY;
#pragma unroll
      for (int u = 0; u < MG; u++) {
        const int k = (g0 + u) * 32 + lane;
        const bool ok = rl < rn && k >= cA && k < cZ;
        fg[i][u] = ok ? __ldcg(pm + b + off + k) : -INFINITY;
        lg[i][u] = ok ? __ldcg(pl + b + off + k) : 0.f;
        m = fmaxf(m, fg[i][u]);
      }
      if (rl < rn)
        for (int k = (g0 + MG) * 32 + lane; k < cZ; k += 32) m = fmaxf(m, __ldcg(pm + b + off + k));
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      M[i] = m;
      float d = 0.f;
#pragma unroll
      for (int u = 0; u < MG; u++) {
        fg[i][u] = fac(fg[i][u], m);  // m of the column, then its factor
        d = fmaf(fg[i][u], lg[i][u], d);
      }
      if (rl < rn)
        for (int k = (g0 + MG) * 32 + lane; k < cZ; k += 32) d = fmaf(fac(__ldcg(pm + b + off + k), m), __ldcg(pl + b + off + k), d);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
      den[i] = d;
#pragma unroll
      for (int e = 0; e < EPL; e++) num[i][e] = -0.f;
    }
    for (int g = g0; g <= g1; g++) {
      const int ka = max(cA, g * 32), kz = min(cZ, g * 32 + 32);
      float f[RPW];
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        const int rl = warp + ATT_WARPS * i, k = g * 32 + lane;
        f[i] = 0.f;
#pragma unroll
        for (int u = 0; u < MG; u++)
          if (g == g0 + u) f[i] = fg[i][u];
        if (g >= g0 + MG) {
          const long b = ((long)h * rows + r0 + rl) * NPS;
          f[i] = rl < rn && k < kz ? fac(__ldcg(pm + b + off + k), M[i]) : 0.f;
        }
      }
#pragma unroll 16
      for (int k = ka; k < kz; k++) {
#pragma unroll
        for (int i = 0; i < RPW; i++) {
          const int rl = warp + ATT_WARPS * i;
          const float fq = __shfl_sync(0xffffffffu, f[i], k - g * 32);
          if (rl < rn) {
            const long b = ((long)h * rows + r0 + rl) * NPS;
            float pa[EPL];
            ld_run<EPL>(pacc + (b + off + k) * HD + col, pa);
#pragma unroll
            for (int e = 0; e < EPL; e++) num[i][e] = fmaf(fq, pa[e], num[i][e]);
          }
        }
      }
    }
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int rl = warp + ATT_WARPS * i, r = r0 + rl;
      if (rl < rn && lane * EPL < HD) {
        float v[EPL];
#pragma unroll
        for (int e = 0; e < EPL; e++) v[e] = __fdiv_rn(num[i][e], den[i]);
        att_store<EPL>(out, xf, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v);
        if (HD >= 32 && qo) att_quant<EPL>(qo, hq * HD, r / G, (h * G + r % G) * HD + lane * EPL, v, lane);
      }
    }
    if (threadIdx.x == 0) cnt[h * gridDim.z + rg] = 0;
    ATT_TREND();
  }
}
