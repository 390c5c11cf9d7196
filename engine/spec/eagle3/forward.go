package eagle3

import (
	"fmt"
	"math"

	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
)

// runState is a head's run state: its KV cache and scratch, allocated once
// (scratch grows to the largest batch), so a draft step allocates nothing.
// KVH*hd = kvw.
type runState struct {
	h     *Head
	pool  *cpu.Pool
	rope  *cpu.RopeTable
	slots int
	kvw   int       // KVH*hd: one row of K or V
	K, V  []float32 // (slots, kvw) keys and values by slot
	s     scratch
	// layer is the head's decoder layer as engine/model describes it (one
	// Llama layer of the head's width); b the batch in flight (headOps).
	layer model.Config
	b     batch
}

// scratch buffers for up to cap rows.
type scratch struct {
	cap      int
	cat      []float32 // (T, 2*dim) cat(input_layernorm(embed(tok)), hidden_norm(hin))
	q        []float32 // (T, H*hd)
	k, v     []float32 // (T, kvw)
	att      []float32 // (T, H*hd)
	res      []float32 // (T, dim) residual stream
	o        []float32 // (T, dim) attention output, then MLP output
	xn       []float32 // (T, dim) normed residual
	gate, up []float32 // (T, ffn)
	score    []float32 // (threads, slots) one row per pool thread
}

func newRunState(h *Head, slots int, pool *cpu.Pool) *runState {
	c := h.Cfg
	kvw := c.KVHeads * c.HeadDim
	return &runState{
		h: h, pool: pool, slots: slots, kvw: kvw,
		layer: model.Config{Layers: 1, Dim: c.Dim},
		rope:  c.Rope(slots + 1),
		K:     make([]float32, slots*kvw),
		V:     make([]float32, slots*kvw),
	}
}

func (r *runState) threads() int {
	if r.pool == nil {
		return 1
	}
	return max(1, r.pool.Threads)
}

func (r *runState) grow(T int) {
	if T <= r.s.cap {
		return
	}
	c := r.h.Cfg
	qw := c.Heads * c.HeadDim
	r.s = scratch{
		cap:   T,
		cat:   make([]float32, T*2*c.Dim),
		q:     make([]float32, T*qw),
		k:     make([]float32, T*r.kvw),
		v:     make([]float32, T*r.kvw),
		att:   make([]float32, T*qw),
		res:   make([]float32, T*c.Dim),
		o:     make([]float32, T*c.Dim),
		xn:    make([]float32, T*c.Dim),
		gate:  make([]float32, T*c.FFN),
		up:    make([]float32, T*c.FFN),
		score: make([]float32, r.threads()*r.slots),
	}
}

// fuse maps the target's features to the head's width:
// out (T, dim) = feats (T, 3*td) · fcᵀ.
func (r *runState) fuse(out, feats []float32, T int) {
	r.pool.MatMul(out, r.h.Cfg.Dim, feats, T, r.h.FC)
}

// batch is T rows through the decoder layer. Row i writes its key and
// value to slot Slot+i and attends to slots [0, Prefix) and then either
// (See nil, a causal chain) slots [Prefix, Slot+i], or the slots See[i]
// lists (ascending, ending with its own).
type batch struct {
	Tokens []int32   // (T) target token ids
	Hin    []float32 // (T, dim) hidden input: fused features or the previous step's output
	Pos    []int32   // (T) RoPE positions
	Slot   int
	Prefix int
	See    [][]int32
}

// forward runs b and writes each row's output hidden state (before the
// final norm) to hout (T, dim).
func (r *runState) forward(b batch, hout []float32) {
	h, c := r.h, r.h.Cfg
	T := len(b.Tokens)
	r.grow(T)
	s := &r.s
	dim := c.Dim

	// Input: cat(input_layernorm(embed(tok)), hidden_norm(hin)).   cat (T, 2*dim)
	cat := s.cat[:T*2*dim]
	for t, id := range b.Tokens {
		row := cat[t*2*dim : (t+1)*2*dim]
		cpu.DequantRow(row[:dim], h.Embed, int(id))
		cpu.RMSNorm(row[:dim], row[:dim], h.InputNorm, c.NormEps)
		cpu.RMSNorm(row[dim:], b.Hin[t*dim:(t+1)*dim], h.HiddenNorm, c.NormEps)
	}
	// Residual stream starts at the hidden input (or its norm).       res (T, dim)
	res := s.res[:T*dim]
	if c.NormBeforeResidual {
		for t := 0; t < T; t++ {
			copy(res[t*dim:(t+1)*dim], cat[t*2*dim+dim:(t+1)*2*dim])
		}
	} else {
		copy(res, b.Hin[:T*dim])
	}

	// The decoder layer: engine/model's, run by the head's operations
	// (step.go) on the residual stream res.
	r.b = b
	err := model.Layers((*headOps)(r), &r.layer, T)
	r.b = batch{}
	if err != nil { // the head's operations refuse only what Layers never asks of a one-layer Llama block
		panic(fmt.Sprintf("eagle3: head layer: %v", err))
	}
	copy(hout[:T*dim], res)
}

// logits writes lm_head(norm(h)) for n rows of h (n, dim) to out
// (n, draftVocab).
func (r *runState) logits(out, h []float32, n int) {
	c := r.h.Cfg
	r.grow(n)
	xn := r.s.xn[:n*c.Dim]
	cpu.RMSNorm(xn, h[:n*c.Dim], r.h.OutNorm, c.NormEps)
	r.pool.MatMul(out, c.DraftVocab, xn, n, r.h.LMHead)
}

// attention: for each row t and head, softmax(q·Kᵀ/√hd)·V over the slots
// the row sees. The (row, head) pairs are spread over the pool's threads.
func (r *runState) attention(out, q []float32, b batch) {
	c := r.h.Cfg
	n := len(b.Tokens) * c.Heads
	if r.pool == nil || n*(b.Slot+len(b.Tokens))*c.HeadDim < 1<<15 {
		r.attendRange(out, q, b, 0, n, 0)
		return
	}
	r.pool.Parallel(n, max(1, n/(16*r.pool.Threads)), func(lo, hi, worker int) {
		r.attendRange(out, q, b, lo, hi, worker)
	})
}

// attendRange computes the (row, head) pairs [lo, hi), pair i = t*H + h.
func (r *runState) attendRange(out, q []float32, b batch, lo, hi, worker int) {
	c := r.h.Cfg
	hd, H := c.HeadDim, c.Heads
	group := c.Heads / c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	score := r.s.score[worker*r.slots : (worker+1)*r.slots]
	for i := lo; i < hi; i++ {
		t, hh := i/H, i%H
		kvh := hh / group
		// slot j of the row's view: [0, Prefix), then the causal run or See[t].
		n := b.Slot + t + 1
		var extra []int32
		if b.See != nil {
			extra = b.See[t]
			n = b.Prefix + len(extra)
		}
		slot := func(j int) int {
			if extra == nil || j < b.Prefix {
				return j
			}
			return int(extra[j-b.Prefix])
		}
		qh := q[(t*H+hh)*hd : (t*H+hh+1)*hd]
		sc := score[:n]
		for j := range sc {
			o := slot(j)*r.kvw + kvh*hd
			sc[j] = cpu.Dot(qh, r.K[o:o+hd]) * scale
		}
		cpu.Softmax(sc)
		oh := out[(t*H+hh)*hd : (t*H+hh+1)*hd]
		clear(oh)
		for j, p := range sc {
			o := slot(j)*r.kvw + kvh*hd
			cpu.AXPY(oh, p, r.V[o:o+hd])
		}
	}
}
