package eagle3

import (
	"fmt"

	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
)

// headOps is the head's run state as engine/model's Ops for its one
// decoder layer (model.Layers): x is the residual stream res, which
// starts at the hidden input (forward), and the layer's attention input is
// cat(input_norm(embed(token)), hidden_norm(hin)) (T, 2*dim) rather than
// a norm of x. One rank: no allreduce, no post-norms.
type headOps runState

var _ model.Ops = (*headOps)(nil)

// Embed is not the head's: its stream starts at the fused features.
func (o *headOps) Embed(T int, scale float32) error {
	return fmt.Errorf("eagle3: the head's residual stream starts at its hidden input, not a token embedding")
}

// AttentionInput: q, k, v = cat · Wq, Wk, Wvᵀ in one pass over their rows.
func (o *headOps) AttentionInput(l, T int) error {
	r := (*runState)(o)
	h, s := r.h, &r.s
	qw, dim := h.Cfg.Heads*h.Cfg.HeadDim, h.Cfg.Dim
	r.pool.MatMulFused(s.cat[:T*2*dim], T,
		cpu.MatMulJob{Out: s.q[:T*qw], OutStride: qw, W: h.Wq},       // q (T, H*hd)
		cpu.MatMulJob{Out: s.k[:T*r.kvw], OutStride: r.kvw, W: h.Wk}, // k (T, kvw)
		cpu.MatMulJob{Out: s.v[:T*r.kvw], OutStride: r.kvw, W: h.Wv}) // v (T, kvw)
	return nil
}

// Attend: rotate-half RoPE on q and k (as the head was trained); k and v
// into slots [Slot, Slot+T); att = attention(q) over the batch's view.
func (o *headOps) Attend(l, T int) error {
	r := (*runState)(o)
	s, b := &r.s, r.b
	qw := r.h.Cfg.Heads * r.h.Cfg.HeadDim
	q, k, v := s.q[:T*qw], s.k[:T*r.kvw], s.v[:T*r.kvw]
	for t := 0; t < T; t++ {
		r.rope.Apply(q[t*qw:(t+1)*qw], int(b.Pos[t]), false)
		r.rope.Apply(k[t*r.kvw:(t+1)*r.kvw], int(b.Pos[t]), false)
	}
	copy(r.K[b.Slot*r.kvw:(b.Slot+T)*r.kvw], k)
	copy(r.V[b.Slot*r.kvw:(b.Slot+T)*r.kvw], v)
	r.attention(s.att[:T*qw], q, b) // att (T, H*hd)
	return nil
}

// LatentAttention is not the head's.
func (o *headOps) LatentAttention(l, T int) error {
	return fmt.Errorf("eagle3: the head has no latent attention")
}

// AddProduct: res += att · Woᵀ, or res += h · Downᵀ.
func (o *headOps) AddProduct(l int, role model.Role, T int) error {
	r := (*runState)(o)
	h, s := r.h, &r.s
	dim := h.Cfg.Dim
	out := s.o[:T*dim]
	switch role {
	case model.RoleAttnOut:
		r.pool.MatMul(out, dim, s.att[:T*h.Cfg.Heads*h.Cfg.HeadDim], T, h.Wo) // o (T, dim)
	case model.RoleDown:
		r.pool.MatMul(out, dim, s.gate[:T*h.Cfg.FFN], T, h.Down) // o (T, dim)
	default:
		return fmt.Errorf("eagle3: no product of %v", role)
	}
	cpu.Add(s.res[:T*dim], out)
	return nil
}

// GatedMLP: xn = post_norm(res); gate = silu(xn · Gateᵀ) * (xn · Upᵀ).
func (o *headOps) GatedMLP(l, T int, act model.Activation) error {
	r := (*runState)(o)
	h, s := r.h, &r.s
	c := h.Cfg
	if act != model.ActSiLU {
		return fmt.Errorf("eagle3: the head's MLP is SiLU-gated, not activation %d", act)
	}
	xn := s.xn[:T*c.Dim]
	cpu.RMSNorm(xn, s.res[:T*c.Dim], h.PostNorm, c.NormEps)
	gate, up := s.gate[:T*c.FFN], s.up[:T*c.FFN]
	r.pool.MatMulFused(xn, T,
		cpu.MatMulJob{Out: gate, OutStride: c.FFN, W: h.Gate}, // gate (T, ffn)
		cpu.MatMulJob{Out: up, OutStride: c.FFN, W: h.Up})     // up (T, ffn)
	cpu.SwiGLU(gate, gate, up)
	return nil
}

// MixtureOfExperts is not the head's.
func (o *headOps) MixtureOfExperts(l, T int) error {
	return fmt.Errorf("eagle3: the head has no mixture of experts")
}

// Capture: the head's output is all of res (forward copies it out).
func (o *headOps) Capture(l, T int) error { return nil }

// Logits is the head's own (runState.logits: the draft vocabulary).
func (o *headOps) Logits(first, rows int, softcap float32) error {
	return fmt.Errorf("eagle3: the head's logits are its lm_head's over the draft vocabulary (runState.logits)")
}
