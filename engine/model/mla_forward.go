package model

import "rigscope/engine/tensor/cpu"

// mlaScratch holds latent attention's buffers for a batch of up to cap
// tokens (allocated at the first pass of a batch size) and the step in
// flight, read by mlaStep on the pool's threads.
type mlaScratch struct {
	cap   int
	cq    []float32 // (T, q rank) query latent
	ckv   []float32 // (T, r+rope) kv latent and rope key, as cached
	q     []float32 // (T, hl*qk) queries
	att   []float32 // (T, hl*v) attention output
	qc    []float32 // (threads, r+rope) one head's absorbed query per thread
	lat   []float32 // (threads, r) one head's mixed latent per thread
	score []float32 // (threads, slots)

	fn    func(lo, hi, worker int) // r.mlaStep, made once
	layer *MLALayer
	cache []float32 // the layer's cache (slots, r+rope)
	base  int
}

func (r *Runner) growMLA(T int) *mlaScratch {
	s := &r.mla
	if T <= s.cap {
		return s
	}
	c, w := r.W.Cfg, r.W
	a := &c.MLA
	th := r.threads()
	*s = mlaScratch{
		cap:   T,
		cq:    make([]float32, T*a.QRank),
		ckv:   make([]float32, T*(a.KVRank+a.RopeDim)),
		q:     make([]float32, T*w.HeadsLocal*a.QKDim()),
		att:   make([]float32, T*w.HeadsLocal*a.VDim),
		qc:    make([]float32, th*(a.KVRank+a.RopeDim)),
		lat:   make([]float32, th*a.KVRank),
		score: make([]float32, th*r.KV.Slots),
		fn:    r.mlaStep,
	}
	return s
}

// latentAttention computes layer l's attention for the T normed tokens in
// r.s.xn, appending their latents to the cache, and returns the heads'
// outputs (T, hl*v) for the output projection.
func (r *Runner) latentAttention(L *MLALayer, l, T int) []float32 {
	c, w := r.W.Cfg, r.W
	a := &c.MLA
	s := r.growMLA(T)
	dim, qr, width := c.Dim, a.QRank, a.KVRank+a.RopeDim
	hl, qk := w.HeadsLocal, a.QKDim()
	xn := r.s.xn[:T*dim]
	cq, ckv, q := s.cq[:T*qr], s.ckv[:T*width], s.q[:T*hl*qk]

	r.Pool.MatMulFused(xn, T,
		cpu.MatMulJob{Out: cq, OutStride: qr, W: L.QA},      // cq (T, q rank)
		cpu.MatMulJob{Out: ckv, OutStride: width, W: L.KVA}) // ckv (T, r+rope)
	for t := range T {
		cpu.RMSNorm(cq[t*qr:(t+1)*qr], cq[t*qr:(t+1)*qr], L.QANorm, mlaNormEps)
	}
	r.Pool.MatMul(q, hl*qk, cq, T, L.QB) // q (T, hl*qk)

	// Cache each token's (RMSNorm(c), rope(k_rope)); rotate the queries'
	// rope dims.
	base := r.KV.Len
	cache := r.KV.K[l]
	inter := c.RopeLayout == RopeInterleaved // rope_interleave (DeepSeek's checkpoints)
	for t := range T {
		p := r.position(t, base)
		row := cache[(base+t)*width : (base+t+1)*width]
		copy(row, ckv[t*width:(t+1)*width])
		cpu.RMSNorm(row[:a.KVRank], row[:a.KVRank], L.KVANorm, mlaNormEps)
		r.rope.Apply(row[a.KVRank:], p, inter)
		for h := range hl {
			r.rope.Apply(q[(t*hl+h)*qk+a.NopeDim:(t*hl+h+1)*qk], p, inter)
		}
	}

	s.layer, s.cache, s.base = L, cache, base
	n := T * hl
	if r.Pool == nil || n*(base+T)*width < 1<<15 {
		r.mlaStep(0, n, 0)
	} else {
		r.Pool.Parallel(n, max(1, n/(16*r.Pool.Threads)), s.fn)
	}
	s.layer, s.cache = nil, nil
	return s.att[:T*hl*a.VDim]
}

// mlaStep attends the (token, head) pairs [lo, hi) of the batch, pair
// i = t*hl + h, with worker's buffers; the visible slots are those of
// ordinary attention (a chain: every earlier position; a tree node: the
// prefix and its ancestors).
func (r *Runner) mlaStep(lo, hi, worker int) {
	c, w, s := r.W.Cfg, r.W, &r.mla
	a := &c.MLA
	L, cache, base := s.layer, s.cache, s.base
	hl, qk, rk, nope, vd := w.HeadsLocal, a.QKDim(), a.KVRank, a.NopeDim, a.VDim
	width := rk + a.RopeDim
	scale := c.MLAScale()
	slots := r.KV.Slots
	qc := s.qc[worker*width : (worker+1)*width] // (r+rope)
	lat := s.lat[worker*rk : (worker+1)*rk]     // (r)
	score := s.score[worker*slots : (worker+1)*slots]
	for i := lo; i < hi; i++ {
		t, h := i/hl, i%hl
		qh := s.q[(t*hl+h)*qk : (t*hl+h+1)*qk]  // (qk) = (nope, rope)
		ukt := L.UKT[h*rk*nope : (h+1)*rk*nope] // (r, nope)
		for j := range rk {
			qc[j] = cpu.Dot(ukt[j*nope:(j+1)*nope], qh[:nope]) // W_UK_hᵀ · q_nope
		}
		copy(qc[rk:], qh[nope:])
		if !r.s.tree {
			sc := score[:base+t+1]
			cpu.AttnScores(sc, qc, cache, width, scale)
			cpu.Softmax(sc)
			cpu.AttnMix(lat, sc, cache, width)
		} else {
			extra := r.visibleAncestors(t, 0) // no window (MLA.check)
			sc := score[:base+len(extra)]
			cpu.AttnScores(sc[:base], qc, cache, width, scale)
			for k, e := range extra {
				slot := base + int(e)
				cpu.AttnScores(sc[base+k:base+k+1], qc, cache[slot*width:], width, scale)
			}
			cpu.Softmax(sc)
			cpu.AttnMix(lat, sc[:base], cache, width)
			for k, e := range extra {
				slot := base + int(e)
				cpu.AXPY(lat, sc[base+k], cache[slot*width:slot*width+rk])
			}
		}
		out := s.att[(t*hl+h)*vd : (t*hl+h+1)*vd] // (v)
		uv := L.UV[h*vd*rk : (h+1)*vd*rk]         // (v, r)
		for j := range vd {
			out[j] = cpu.Dot(uv[j*rk:(j+1)*rk], lat) // W_UV_h · latent
		}
	}
}
