package model

import "rigscope/engine/tensor/cpu"

// moeScratch holds the MoE block's buffers for a batch of up to cap
// tokens; allocated at the first MoE pass of a batch size, so later steps
// allocate nothing.
type moeScratch struct {
	cap     int
	logits  []float32 // (T, experts) router logits, scored in place
	ids     []int32   // (T, k) each token's experts, ascending
	weights []float32 // (T, k) their weights
	choice  []float32 // (experts) route's scratch
	group   []float32 // (groups) route's scratch
	tok     []int32   // (T) the tokens routed to the expert in hand
	wt      []float32 // (T) their weights for it
	xe      []float32 // (T, dim) their normed activations
	ge, ue  []float32 // (T, fl) the expert's gate and up
	ye      []float32 // (T, dim) the expert's output
}

func (r *Runner) growMoE(T int) *moeScratch {
	s := &r.moe
	if T <= s.cap {
		return s
	}
	c := r.W.Cfg
	m := &c.MoE
	fl := 0 // the widest FFN slice an expert (routed or shared) has on this rank
	for i := range r.W.Layers {
		if L := r.W.Layers[i].MoE; L != nil {
			fl = max(fl, L.FFNHi-L.FFNLo, L.SharedHi-L.SharedLo)
		}
	}
	*s = moeScratch{
		cap:     T,
		logits:  make([]float32, T*m.Experts),
		ids:     make([]int32, T*m.PerToken),
		weights: make([]float32, T*m.PerToken),
		choice:  make([]float32, m.Experts),
		group:   make([]float32, max(m.Groups, 1)),
		tok:     make([]int32, T),
		wt:      make([]float32, T),
		xe:      make([]float32, T*c.Dim),
		ge:      make([]float32, T*fl),
		ue:      make([]float32, T*fl),
		ye:      make([]float32, T*c.Dim),
	}
	return s
}

// moeBlock computes the MoE MLP of the T normed tokens in r.s.xn into
// r.s.o (T, dim): this rank's partial sums, before the allreduce.
//
//	o[t] = shared(xn[t]) + Σ_{e ∈ topk(t)} w[t,e] · expert_e(xn[t])
//	expert(x) = down(silu(gate(x)) * up(x))
//
// Each expert runs once on the tokens routed to it (a batched product over
// just those rows: the compute follows the routing, not a dense loop over
// all experts), and experts are visited in ascending id, so each token's
// sum is accumulated in the same order whatever else is in the batch:
// a verification batch reproduces decode steps exactly.
func (r *Runner) moeBlock(L *MoELayer, T int) {
	c := r.W.Cfg
	m := &c.MoE
	dim, E, k := c.Dim, m.Experts, m.PerToken
	s := r.growMoE(T)
	xn, o := r.s.xn[:T*dim], r.s.o[:T*dim]

	// Shared expert on every token, or zero.
	if L.SharedGate != nil {
		sl := L.SharedHi - L.SharedLo
		g, u := s.ge[:T*sl], s.ue[:T*sl]
		r.Pool.MatMulFused(xn, T,
			cpu.MatMulJob{Out: g, OutStride: sl, W: L.SharedGate}, // (T, sl)
			cpu.MatMulJob{Out: u, OutStride: sl, W: L.SharedUp})   // (T, sl)
		cpu.SwiGLU(g, g, u)
		r.Pool.MatMul(o, dim, g, T, L.SharedDown) // o (T, dim)
	} else {
		clear(o)
	}

	// Route (replicated on every rank).
	logits := s.logits[:T*E]
	r.Pool.MatMul(logits, E, xn, T, L.Router) // (T, experts)
	for t := range T {
		m.route(s.ids[t*k:(t+1)*k], s.weights[t*k:(t+1)*k], logits[t*E:(t+1)*E], L.ScoreBias, s.choice, s.group)
	}

	fl := L.FFNHi - L.FFNLo
	for e := range E {
		n := 0
		for t := range T {
			for j, id := range s.ids[t*k : (t+1)*k] {
				if int(id) == e {
					s.tok[n], s.wt[n] = int32(t), s.weights[t*k+j]
					copy(s.xe[n*dim:(n+1)*dim], xn[t*dim:(t+1)*dim])
					n++
				}
			}
		}
		if n == 0 {
			continue
		}
		xe, g, u, y := s.xe[:n*dim], s.ge[:n*fl], s.ue[:n*fl], s.ye[:n*dim]
		r.Pool.MatMulFused(xe, n,
			cpu.MatMulJob{Out: g, OutStride: fl, W: L.Gate[e]}, // (n, fl)
			cpu.MatMulJob{Out: u, OutStride: fl, W: L.Up[e]})   // (n, fl)
		cpu.SwiGLU(g, g, u)
		r.Pool.MatMul(y, dim, g, n, L.Down[e]) // (n, dim)
		for i := range n {
			t := int(s.tok[i])
			cpu.AXPY(o[t*dim:(t+1)*dim], s.wt[i], y[i*dim:(i+1)*dim])
		}
	}
}
