package model

import (
	"fmt"

	"rigscope/engine/tensor/cpu"
)

// runnerOps is the Runner as the CPU's Ops (step.go): each operation runs
// at once on the Runner's buffers (r.s) with its pool's kernels. It is a
// conversion of *Runner, so Step's calls allocate nothing; the batch in
// hand (tokens, positions, mask, context, logits) is in r.s while Step runs.
type runnerOps Runner

var _ Ops = (*runnerOps)(nil)

// at points the step's layer at l (rowStep and attendRange read it).
func (o *runnerOps) at(l int) *Layer {
	r := (*Runner)(o)
	L := &r.W.Layers[l]
	r.s.layer, r.s.la = L, &r.attn[l]
	return L
}

// Embed: x[t] = scale · token_embd[tokens[t]]          x (T, dim)
func (o *runnerOps) Embed(T int, scale float32) error {
	r := (*Runner)(o)
	c, w := r.W.Cfg, r.W
	dim := c.Dim
	x := r.s.x[:T*dim]
	for t, id := range r.s.tokens[:T] {
		if id < 0 || int(id) >= c.Vocab {
			return fmt.Errorf("model: token id %d outside the vocabulary of %d", id, c.Vocab)
		}
		cpu.DequantRow(x[t*dim:(t+1)*dim], w.TokEmbd, int(id))
	}
	if scale != 1 { // Gemma 3: √dim
		for i := range x {
			x[i] *= scale
		}
	}
	return nil
}

// AttentionInput: xn = norm(x); q, k, v = xn · Wq, Wk, Wvᵀ in one pass
// over their rows.
func (o *runnerOps) AttentionInput(l, T int) error {
	r := (*Runner)(o)
	L := o.at(l)
	s, w, hd := &r.s, r.W, r.W.Cfg.HeadDim
	hl, kvl := w.HeadsLocal, w.KVHeadsLocal
	r.rowwise(T, rowAttnNorm) // xn = norm(x)
	r.Pool.MatMulFused(s.xn[:T*r.W.Cfg.Dim], T,
		cpu.MatMulJob{Out: s.q[:T*hl*hd], OutStride: hl * hd, W: L.Wq},   // q (T, hl*hd)
		cpu.MatMulJob{Out: s.k[:T*kvl*hd], OutStride: kvl * hd, W: L.Wk}, // k (T, kvl*hd)
		cpu.MatMulJob{Out: s.v[:T*kvl*hd], OutStride: kvl * hd, W: L.Wv}) // v (T, kvl*hd)
	return nil
}

// Attend: biases, head norms and RoPE on q and k (rowRope); k and v into
// the cache; att = attention(q) (forward.go).
func (o *runnerOps) Attend(l, T int) error {
	r := (*Runner)(o)
	o.at(l)
	s, w, hd := &r.s, r.W, r.W.Cfg.HeadDim
	hl := w.HeadsLocal
	r.rowwise(T, rowRope)
	r.KV.store(l, s.base, T, s.k, s.v)
	s.attIn = s.att[:T*hl*hd]
	r.attention(s.attIn, s.q[:T*hl*hd], l, s.base, T) // att (T, hl*hd)
	return nil
}

// LatentAttention: xn = norm(x); att = MLA(xn) (mla_forward.go).
func (o *runnerOps) LatentAttention(l, T int) error {
	r := (*Runner)(o)
	L := o.at(l)
	if L.MLA == nil {
		return fmt.Errorf("model: layer %d has no latent attention weights", l)
	}
	r.rowwise(T, rowAttnNorm)
	r.s.attIn = r.latentAttention(L.MLA, l, T) // att (T, hl*v)
	return nil
}

// AddProduct: o = in · Wᵀ (this rank's partial sums); o = Σ_ranks o;
// o = PostNorm(o) (Gemma 3); x += o.
func (o *runnerOps) AddProduct(l int, role Role, T int) error {
	r := (*Runner)(o)
	L := o.at(l)
	s, dim := &r.s, r.W.Cfg.Dim
	out := s.o[:T*dim]
	switch role {
	case RoleAttnOut:
		r.Pool.MatMul(out, dim, s.attIn, T, L.Wo)
	case RoleDown:
		r.Pool.MatMul(out, dim, s.gate[:T*(r.W.FFNHi-r.W.FFNLo)], T, L.Down)
	default:
		return fmt.Errorf("model: layer %d: no product of %v", l, role)
	}
	if err := r.allReduce(s.ctx, out); err != nil {
		return err
	}
	if role == RoleAttnOut {
		r.postAttnNorm(T) // Gemma 3: o = norm(o)
	} else {
		r.postFFNNorm(T)
	}
	r.rowwise(T, rowAdd) // x += o
	return nil
}

// GatedMLP: xn = norm(x); gate, up = xn · Gate, Upᵀ in one pass over
// their rows; gate = act(gate) * up.
func (o *runnerOps) GatedMLP(l, T int, act Activation) error {
	r := (*Runner)(o)
	L := o.at(l)
	s, fl := &r.s, r.W.FFNHi-r.W.FFNLo
	op := rowSwiGLU
	switch act {
	case ActSiLU:
	case ActGELUTanh:
		op = rowGeGLU
	default:
		return fmt.Errorf("model: MLP activation %d is not implemented", act)
	}
	r.rowwise(T, rowFFNNorm) // xn = norm(x)
	r.Pool.MatMulFused(s.xn[:T*r.W.Cfg.Dim], T,
		cpu.MatMulJob{Out: s.gate[:T*fl], OutStride: fl, W: L.Gate}, // gate (T, fl)
		cpu.MatMulJob{Out: s.up[:T*fl], OutStride: fl, W: L.Up})     // up (T, fl)
	r.rowwise(T, op) // gate = act(gate) * up
	return nil
}

// MixtureOfExperts: xn = norm(x); o = MoE(xn) (this rank's partial sums,
// moe_forward.go); o = Σ_ranks o; x += o.
func (o *runnerOps) MixtureOfExperts(l, T int) error {
	r := (*Runner)(o)
	L := o.at(l)
	if L.MoE == nil {
		return fmt.Errorf("model: layer %d has no mixture-of-experts weights", l)
	}
	r.rowwise(T, rowFFNNorm)
	r.moeBlock(L.MoE, T) // o (T, dim)
	if err := r.allReduce(r.s.ctx, r.s.o[:T*r.W.Cfg.Dim]); err != nil {
		return err
	}
	r.postFFNNorm(T)
	r.rowwise(T, rowAdd) // x += o
	return nil
}

// Capture copies x (T, dim) into Captured for a CaptureLayers layer.
func (o *runnerOps) Capture(l, T int) error {
	r := (*Runner)(o)
	r.capture(l, r.s.x[:T*r.W.Cfg.Dim])
	return nil
}

// Logits: xn = OutNorm(x rows); this rank's vocab columns of xn · Outᵀ
// into the caller's logits (rows, vocab); soft-capped.
func (o *runnerOps) Logits(first, rows int, softcap float32) error {
	r := (*Runner)(o)
	c, w, s := r.W.Cfg, r.W, &r.s
	dim := c.Dim
	logits := s.logits
	if len(logits) < rows*c.Vocab {
		return fmt.Errorf("model: logits buffer holds %d floats, need %d", len(logits), rows*c.Vocab)
	}
	xn := s.xn[:rows*dim]
	cpu.RMSNorm(xn, s.x[first*dim:(first+rows)*dim], w.OutNorm, c.NormEps)
	r.Pool.MatMul(logits[w.VocabLo:], c.Vocab, xn, rows, w.Output)
	softcapLogits(logits, rows, c.Vocab, w.VocabLo, w.VocabHi, softcap)
	return nil
}
