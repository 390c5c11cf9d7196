package model

import "rigscope/engine/tensor/cpu"

// rowOp is one of forward's token-wise steps.
type rowOp uint8

const (
	rowAttnNorm rowOp = iota // xn = RMSNorm(x) with the layer's attention norm
	rowRope                  // q, k, v += biases; q, k heads RMSNormed; q, k rotated by position
	rowFFNNorm               // xn = RMSNorm(x) with the layer's FFN norm
	rowSwiGLU                // gate = silu(gate) * up
	rowAdd                   // x += o
)

// rowwise runs step op of the current layer (r.s.layer) over the T tokens
// of the batch: on the pool's threads for big batches, inline for small
// ones (a decode step). The step reads its operands from r.s, and the pool
// gets a method value made once, so a forward pass allocates nothing.
func (r *Runner) rowwise(T int, op rowOp) {
	r.s.op = op
	if T < 16 || r.Pool == nil {
		r.rowStep(0, T, 0)
		return
	}
	if r.rowFn == nil {
		r.rowFn = r.rowStep
	}
	r.Pool.Parallel(T, max(1, T/(4*r.Pool.Threads)), r.rowFn)
}

// rowStep runs r.s.op on tokens [t0, t1).
func (r *Runner) rowStep(t0, t1, _ int) {
	s, c, w := &r.s, r.W.Cfg, r.W
	L := s.layer
	dim := c.Dim
	switch s.op {
	case rowAttnNorm:
		cpu.RMSNorm(s.xn[t0*dim:t1*dim], s.x[t0*dim:t1*dim], L.AttnNorm, c.NormEps)
	case rowRope:
		qw, kw := w.HeadsLocal*c.HeadDim, w.KVHeadsLocal*c.HeadDim
		inter := c.RopeLayout == RopeInterleaved
		for t := t0; t < t1; t++ {
			p := s.base + t
			if s.pos != nil {
				p = int(s.pos[t])
			}
			q := s.q[t*qw : (t+1)*qw] // (hl*hd)
			k := s.k[t*kw : (t+1)*kw] // (kvl*hd)
			if L.Bq != nil {          // Qwen2: q = x·Wqᵀ + bq, likewise k and v
				cpu.Add(q, L.Bq)
				cpu.Add(k, L.Bk)
				cpu.Add(s.v[t*kw:(t+1)*kw], L.Bv)
			}
			if L.QNorm != nil { // Qwen3: q_h = RMSNorm(q_h) per head (hd), before RoPE
				cpu.RMSNorm(q, q, L.QNorm, c.NormEps)
				cpu.RMSNorm(k, k, L.KNorm, c.NormEps)
			}
			s.la.rope.Apply(q, p, inter) // the layer's table (Gemma 3: local or global)
			s.la.rope.Apply(k, p, inter)
		}
	case rowFFNNorm:
		cpu.RMSNorm(s.xn[t0*dim:t1*dim], s.x[t0*dim:t1*dim], L.FFNNorm, c.NormEps)
	case rowSwiGLU:
		fl := w.FFNHi - w.FFNLo
		g := s.gate[t0*fl : t1*fl]
		cpu.SwiGLU(g, g, s.up[t0*fl:t1*fl])
	case rowAdd:
		cpu.Add(s.x[t0*dim:t1*dim], s.o[t0*dim:t1*dim])
	default:
		r.gemmaRowStep(t0, t1) // gemma.go
	}
}
