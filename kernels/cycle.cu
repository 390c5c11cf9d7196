// The greedy speculative step kept on the device (included by kernels.cu
// after headout.cu; gpu/cuda cycle.go): a target's verify of (next, the
// chain's k tokens) ends in argmax_accept, which picks each row's argmax,
// counts the accepted drafts and sets up, on the device, the EAGLE-3 head's
// next chain (its extended rows and draft steps) and the target's next
// verify; gather_feats hands the head the verify's captured features and
// copy_row moves the last accepted row's output to where the chain goes
// on. The host reads each step's record (mapped host memory) a step
// behind, as plain decoding ahead does.

#define CYCLE_REC 20  // ints in a step's record: acc, base, step number, ids (MAXT + 1 at most)

// AcceptTail runs in each row's last block of argmax_accept, after the
// row's winner is in vids[row]; the block that completes the last row
// accepts: acc = the leading drafts (st->tokens[1..k]) equal to the rows'
// argmaxes, the record into ring[step & 1] (acc, base, step, the k+1 ids),
// the head's steps (0: the k+1 extended rows at base with the ids as their
// tokens; j = 1..k-1: draft step j at base+acc+j), acc into hacc (copy_row
// reads it), and the target's next verify at base+acc+1 with the target's
// own token (ids[acc]) first; the chain writes its tokens 1..k.
struct AcceptTail {
  int* vids; unsigned* rows_done; Step* st; Step* hs; int* hacc; int* ring; unsigned* step; int k;
  __device__ void operator()(int) const {
    if (threadIdx.x != 0) return;
    const int rows = k + 1;
    if (atom_add_acq_rel(rows_done) != (unsigned)(rows - 1)) return;  // this thread wrote vids[row] (argmax_body)
    *rows_done = 0;
    int v[MAXT];
    for (int i = 0; i < rows; i++) v[i] = __ldcg(vids + i);
    int acc = 0;
    while (acc < k && st->tokens[acc + 1] == v[acc]) acc++;
    const int base = st->base;
    const unsigned n = *step;
    *step = n + 1;
    int* rec = ring + (n & 1u) * CYCLE_REC;
    rec[0] = acc;
    rec[1] = base;
    rec[2] = (int)n;
    for (int i = 0; i < rows; i++) rec[3 + i] = v[i];
    Step* h0 = hs;
    h0->base = base;
    h0->T = rows;
    h0->temp = 0.f;
    h0->seed = 0u;
    for (int i = 0; i < rows; i++) {
      h0->tokens[i] = v[i];
      h0->pos[i] = base + i;
      h0->mask[i] = (2u << i) - 1u;
    }
    for (int j = 1; j < k; j++) {
      Step* s = hs + j;
      s->base = base + acc + j;
      s->T = 1;
      s->temp = 0.f;
      s->seed = 0u;
      s->pos[0] = base + acc + j;
      s->mask[0] = 1u;
    }
    *hacc = acc;
    const int nb = base + acc + 1;
    st->base = nb;
    st->tokens[0] = v[acc];
    for (int i = 0; i < rows; i++) st->pos[i] = nb + i;
  }
};
// argmax_accept: argmax_rows over the verify's k+1 rows (ids into vids, on
// the device), then AcceptTail. Grid (blocks, k+1).
extern "C" __global__ void argmax_accept(int* vids, const float* logits, int vocab, Step* st, float2* part,
                                         unsigned* cnt, unsigned* rows_done, Step* hs, int* hacc, int* ring,
                                         unsigned* step, int k) {
  argmax_body(vids, logits, vocab, st, part, cnt, nullptr, nullptr, 0, nullptr,
              AcceptTail{vids, rows_done, st, hs, hacc, ring, step, k});
}

// gather_feats: out (T, 3*dim), row t = cat(f0[t], f1[t], f2[t]) from the
// target's captured layers l0, l1, l2 (cap: (layers, T, dim), a layer's
// slot at l*T*dim); the same rows also into host (mapped host memory laid
// out as cap), where the host's drafter reads them once the step is done.
// Grid (T, 3).
extern "C" __global__ void gather_feats(float* out, const float* cap, int T, int dim, int l0, int l1, int l2,
                                        float* host) {
  pdl_wait();
  const int t = blockIdx.x, i = blockIdx.y;
  const int l = i == 0 ? l0 : i == 1 ? l1 : l2;
  const long off = ((long)l * T + t) * dim;
  float* dst = out + ((long)t * 3 + i) * dim;
  for (int d = threadIdx.x; d < dim; d += blockDim.x) {
    const float v = cap[off + d];
    dst[d] = v;
    host[off + d] = v;
  }
  pdl_trigger();
}

// copy_row: x's row *row (dim floats) to row to (nothing when they are the
// same row). One block.
extern "C" __global__ void copy_row(float* x, const int* row, int to, int dim) {
  pdl_wait();
  const int r = *row;
  if (r != to)
    for (int d = threadIdx.x; d < dim; d += blockDim.x) x[(long)to * dim + d] = x[(long)r * dim + d];
  pdl_trigger();
}
