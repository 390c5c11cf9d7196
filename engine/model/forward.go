package model

import (
	"context"
	"fmt"
	"slices"
	"time"

	"rigscope/engine/tensor/cpu"
)

// AllReducer sums a buffer across the ranks of a tensor-parallel group, in
// place (tp.Comm satisfies it). Nil for a single rank.
type AllReducer interface {
	AllReduceSum(ctx context.Context, x []float32) error
}

// LogitsMode says which rows of the batch need logits.
type LogitsMode uint8

const (
	LogitsLast LogitsMode = iota // the last token only (prefill, decode)
	LogitsAll                    // every token (verification)
	LogitsNone                   // none (a drafter catching up)
)

// Batch is the input of one forward pass: T tokens written to cache slots
// [Len, Len+T).
type Batch struct {
	Tokens []int32 // (T)
	// Pos are the RoPE positions; nil means Len+i (a chain).
	Pos []int32 // (T)
	// Parent is the tree: token i attends to the cached prefix and to its
	// ancestors (Parent[i] < i, -1 = attached to the prefix) and itself. Nil
	// means a causal chain.
	Parent []int32 // (T)
	Logits LogitsMode
}

// Runner is one rank's model: its weights, its KV cache and scratch that is
// allocated once per batch size, so a step allocates nothing.
type Runner struct {
	W    *Weights
	KV   *KVCache
	Comm AllReducer // nil for TP=1
	Pool *cpu.Pool
	rope *cpu.RopeTable // the global layers' (bounds the positions)
	// attn is each layer's RoPE table, window and score scale
	// (layer_attn.go); ropes are the distinct tables.
	attn  []layerAttn
	ropes []*cpu.RopeTable

	// CaptureLayers lists layers whose output residual stream (T, dim) is
	// copied to Captured after each forward (EAGLE-3 reads them).
	CaptureLayers []int
	Captured      [][]float32

	// AllReduceTime accumulates time spent in Comm since the last reset.
	AllReduceTime time.Duration
	AllReduceCall int

	s   scratch
	moe moeScratch // MoE layers' buffers (moe_forward.go)
	mla mlaScratch // latent attention's buffers (mla_forward.go)
	// rowFn and attendFn are r.rowStep and r.attendStep, made once.
	rowFn, attendFn func(lo, hi, worker int)
}

// scratch buffers for a batch of up to cap tokens. hl, kvl, fl: local heads,
// kv heads, FFN columns.
type scratch struct {
	cap   int
	x     []float32 // (T, dim) residual stream
	xn    []float32 // (T, dim) normed
	q     []float32 // (T, hl*hd)
	k, v  []float32 // (T, kvl*hd)
	att   []float32 // (T, hl*hd)
	o     []float32 // (T, dim) partial sums before the allreduce
	gate  []float32 // (T, fl)
	up    []float32 // (T, fl)
	score []float32 // (threads, slots): one row per pool thread
	allow [][]int32 // tree: per token, the batch indices it may attend to
	tree  bool      // the current batch is a tree

	// The step in flight, read by rowStep and attendStep on the pool's
	// threads (kept here rather than captured, so a step allocates nothing).
	op       rowOp
	layer    *Layer
	tokens   []int32         // the batch's tokens (Embed)
	pos      []int32         // the batch's RoPE positions; nil: base+i
	base     int             // cached tokens before the batch
	ctx      context.Context // the forward's, for the allreduce
	logits   []float32       // the caller's (rows, vocab) logits (Logits)
	attIn    []float32       // (T, hl*hd or hl*v) attention's output, Wo's input
	la       *layerAttn
	attOut   []float32
	attQ     []float32
	attLayer int
}

// NewRunner makes a runner with a cache of ctxLen positions.
func NewRunner(w *Weights, ctxLen int, comm AllReducer, pool *cpu.Pool) *Runner {
	attn, ropes := newLayerAttns(w, ctxLen)
	return &Runner{
		W:     w,
		KV:    newKVCache(w, ctxLen),
		Comm:  comm,
		Pool:  pool,
		rope:  ropes[0],
		attn:  attn,
		ropes: ropes,
	}
}

func (r *Runner) threads() int {
	if r.Pool == nil {
		return 1
	}
	return max(1, r.Pool.Threads)
}

func (r *Runner) grow(T int) {
	if T <= r.s.cap {
		return
	}
	c, w := r.W.Cfg, r.W
	hd := c.HeadDim
	fl := w.FFNHi - w.FFNLo
	r.s = scratch{
		cap:   T,
		x:     make([]float32, T*c.Dim),
		xn:    make([]float32, T*c.Dim),
		q:     make([]float32, T*w.HeadsLocal*hd),
		k:     make([]float32, T*w.KVHeadsLocal*hd),
		v:     make([]float32, T*w.KVHeadsLocal*hd),
		att:   make([]float32, T*w.HeadsLocal*hd),
		o:     make([]float32, T*c.Dim),
		gate:  make([]float32, T*fl),
		up:    make([]float32, T*fl),
		score: make([]float32, r.threads()*r.KV.Slots),
	}
}

// Forward runs the batch through the model, appending its keys and values
// to the cache, and writes logits for the rows b.Logits asks for into
// logits: row i of the result at logits[i*vocab : (i+1)*vocab] (this rank
// writes only its vocab columns). On error the cache is left at its old
// length. A long chain that needs at most the last row of logits (a
// prompt) runs in micro-batches of MicroBatch() tokens: the same results
// (the products are batch-invariant and attention reads the cache), with
// activations sized to the micro-batch instead of the prompt.
func (r *Runner) Forward(ctx context.Context, b Batch, logits []float32) error {
	n := r.MicroBatch()
	if len(b.Tokens) <= n || b.Parent != nil || b.Logits == LogitsAll {
		return r.forward(ctx, b, logits)
	}
	base := r.KV.Len
	var captured [][]float32
	for i := 0; i < len(b.Tokens); i += n {
		j := min(len(b.Tokens), i+n)
		c := Batch{Tokens: b.Tokens[i:j], Logits: LogitsNone}
		if b.Pos != nil {
			c.Pos = b.Pos[i:j]
		}
		if j == len(b.Tokens) {
			c.Logits = b.Logits
		}
		if err := r.forward(ctx, c, logits); err != nil {
			r.KV.Len = base
			return err
		}
		if len(r.CaptureLayers) > 0 {
			captured = grow2(captured, len(r.CaptureLayers))
			for k := range r.Captured {
				captured[k] = append(captured[k], r.Captured[k]...)
			}
		}
	}
	if captured != nil {
		r.Captured = captured
	}
	return nil
}

func grow2(s [][]float32, n int) [][]float32 {
	if len(s) < n {
		s = append(s, make([][]float32, n-len(s))...)
	}
	return s
}

// MicroBatch is the most tokens one pass of a prompt takes: activations
// kept within an eighth of the weights (at least 64 tokens, at most 512),
// a power of two, like llama.cpp's n_ubatch bounding its compute buffers.
func (r *Runner) MicroBatch() int {
	c, w := r.W.Cfg, r.W
	perToken := 4 * int64(3*c.Dim+2*w.HeadsLocal*c.HeadDim+2*w.KVHeadsLocal*c.HeadDim+2*(w.FFNHi-w.FFNLo))
	n := 64
	for n < 512 && int64(2*n)*perToken <= w.Bytes()/8 {
		n *= 2
	}
	return n
}

func (r *Runner) forward(ctx context.Context, b Batch, logits []float32) error {
	c := r.W.Cfg
	T := len(b.Tokens)
	base := r.KV.Len
	if T == 0 {
		return fmt.Errorf("model: empty batch")
	}
	if base+T > r.KV.Slots {
		return fmt.Errorf("model: %d cached + %d new tokens exceed the context of %d positions; start a new run or raise --ctx", base, T, r.KV.Slots)
	}
	if err := r.checkBatch(b, base); err != nil {
		return err
	}
	if _, rows, ok := LogitRows(b.Logits, T); ok && len(logits) < rows*c.Vocab {
		return fmt.Errorf("model: logits buffer holds %d floats, need %d", len(logits), rows*c.Vocab)
	}
	r.grow(T)
	r.buildMask(b, T)
	s := &r.s
	s.tokens, s.pos, s.base, s.ctx, s.logits = b.Tokens, b.Pos, base, ctx, logits
	r.ensureRope(maxPos(b.Pos, base+T)) // here, not on the pool's threads
	// The model (step.go), run by this rank's operations (step_cpu.go).
	err := Step((*runnerOps)(r), &r.W.Cfg, T, b.Logits)
	s.tokens, s.pos, s.ctx, s.logits, s.attIn = nil, nil, nil, nil, nil
	s.layer, s.la = nil, nil
	if err != nil {
		return err
	}
	r.KV.Len = base + T
	return nil
}

func (r *Runner) checkBatch(b Batch, base int) error {
	T := len(b.Tokens)
	if b.Pos != nil && len(b.Pos) != T || b.Parent != nil && len(b.Parent) != T {
		return fmt.Errorf("model: batch of %d tokens with %d positions and %d parents", T, len(b.Pos), len(b.Parent))
	}
	for i, p := range b.Parent {
		if p >= int32(i) || p < -1 {
			return fmt.Errorf("model: tree parent %d of node %d must be in [-1, %d)", p, i, i)
		}
	}
	for _, p := range b.Pos {
		if p < 0 || int(p) >= r.rope.MaxPos() {
			return fmt.Errorf("model: position %d outside [0, %d)", p, r.rope.MaxPos())
		}
	}
	return nil
}

// maxPos is one past the largest RoPE position of a batch: chainEnd for a
// chain (pos nil).
func maxPos(pos []int32, chainEnd int) int {
	if pos == nil {
		return chainEnd
	}
	m := 0
	for _, p := range pos {
		m = max(m, int(p)+1)
	}
	return m
}

// buildMask fills s.allow for a tree batch: node i may see its ancestors.
func (r *Runner) buildMask(b Batch, T int) {
	s := &r.s
	s.tree = b.Parent != nil
	if !s.tree {
		return
	}
	if cap(s.allow) < T {
		s.allow = make([][]int32, T)
	}
	s.allow = s.allow[:T]
	for i := 0; i < T; i++ {
		a := s.allow[i][:0]
		for j := int32(i); j >= 0; j = b.Parent[j] {
			a = append(a, j)
		}
		slices.Reverse(a) // ascending: ancestors first, itself last
		s.allow[i] = a
	}
}

// attention computes, for each token t and local head h, softmax(q·Kᵀ/√d)·V
// over the cached prefix [0, base) and the batch slots it may see. The
// (token, head) pairs are spread over the pool's threads.
func (r *Runner) attention(out, q []float32, layer, base, T int) {
	hl := r.W.HeadsLocal
	n := T * hl
	work := n * (base + T) * r.W.Cfg.HeadDim
	if work < 1<<15 || r.Pool == nil {
		r.attendRange(out, q, layer, base, 0, n, 0)
		return
	}
	th := r.Pool.Threads
	s := &r.s
	s.attOut, s.attQ, s.attLayer = out, q, layer
	if r.attendFn == nil {
		r.attendFn = r.attendStep
	}
	r.Pool.Parallel(n, max(1, n/(16*th)), r.attendFn)
	s.attOut, s.attQ = nil, nil
}

// attendStep is attention's parallel step (a method value made once, so
// that a forward pass allocates no closure).
func (r *Runner) attendStep(lo, hi, worker int) {
	s := &r.s
	r.attendRange(s.attOut, s.attQ, s.attLayer, s.base, lo, hi, worker)
}

// attendRange computes the (token, head) pairs [lo, hi) of the batch, pair
// i = t*hl + h, with worker's score buffer. The cached prefix holds
// positions 0..base-1 in its slots (KeepPath keeps it so); with a sliding
// window W a token at position p sees only the keys at positions
// p-W+1..p.
func (r *Runner) attendRange(out, q []float32, layer, base, lo, hi, worker int) {
	c, w := r.W.Cfg, r.W
	hd, hl, kvl := c.HeadDim, w.HeadsLocal, w.KVHeadsLocal
	group := c.Heads / c.KVHeads
	width := kvl * hd
	K, V := r.KV.K[layer], r.KV.V[layer]
	la := &r.attn[layer]
	scale := la.scale
	tree := r.s.tree
	slots := r.KV.Slots
	score := r.s.score[worker*slots : (worker+1)*slots]
	for i := lo; i < hi; i++ {
		t, h := i/hl, i%hl
		kvh := (w.HeadLo+h)/group - w.KVHeadLo
		qh := q[(t*hl+h)*hd : (t*hl+h+1)*hd]   // (hd)
		oh := out[(t*hl+h)*hd : (t*hl+h+1)*hd] // (hd)
		// the first cached slot in the window
		first := r.firstSlot(t, base, la.window)
		if !tree {
			// A chain sees the contiguous slots [first, base+t].
			sc := score[:base+t+1-first]
			cpu.AttnScores(sc, qh, K[first*width+kvh*hd:], width, scale)
			cpu.Softmax(sc)
			cpu.AttnMix(oh, sc, V[first*width+kvh*hd:], width)
			continue
		}
		// A tree node sees the prefix [first, base) and its ancestors (in
		// the window). Scores and the mix accumulate each key exactly as
		// the chain path does, so a tree node's result equals its chain's
		// bit for bit.
		extra := r.visibleAncestors(t, la.window)
		nPre := max(0, base-first)
		sc := score[:nPre+len(extra)]
		cpu.AttnScores(sc[:nPre], qh, K[first*width+kvh*hd:], width, scale)
		for i, e := range extra {
			slot := base + int(e)
			cpu.AttnScores(sc[nPre+i:nPre+i+1], qh, K[slot*width+kvh*hd:], width, scale)
		}
		cpu.Softmax(sc)
		cpu.AttnMix(oh, sc[:nPre], V[first*width+kvh*hd:], width)
		for i, e := range extra {
			slot := base + int(e)
			cpu.AXPY(oh, sc[nPre+i], V[slot*width+kvh*hd:slot*width+(kvh+1)*hd])
		}
	}
}

// position is batch token t's RoPE position.
func (r *Runner) position(t, base int) int {
	if r.s.pos != nil {
		return int(r.s.pos[t])
	}
	return base + t
}

// firstSlot is the first slot batch token t attends to: 0, or with a
// sliding window the slot of position p-W+1 (at most its own, base+t).
func (r *Runner) firstSlot(t, base, win int) int {
	if win == 0 {
		return 0
	}
	return min(base+t, max(0, r.position(t, base)-win+1))
}

// visibleAncestors are the batch indices tree node t attends to: its
// ancestors and itself (ascending), less those a sliding window leaves
// out. It allocates nothing: the window drops a prefix of the list.
func (r *Runner) visibleAncestors(t, win int) []int32 {
	a := r.s.allow[t]
	if win == 0 {
		return a
	}
	p := r.position(t, r.s.base)
	for len(a) > 0 && p-r.position(int(a[0]), r.s.base) >= win {
		a = a[1:]
	}
	return a
}

func (r *Runner) allReduce(ctx context.Context, x []float32) error {
	if r.Comm == nil {
		return nil
	}
	t0 := time.Now()
	err := r.Comm.AllReduceSum(ctx, x)
	r.AllReduceTime += time.Since(t0)
	r.AllReduceCall++
	if err != nil {
		return fmt.Errorf("model: allreduce: %w", err)
	}
	return nil
}

func (r *Runner) capture(layer int, x []float32) {
	for i, l := range r.CaptureLayers {
		if l == layer {
			if len(r.Captured) != len(r.CaptureLayers) {
				r.Captured = make([][]float32, len(r.CaptureLayers))
			}
			r.Captured[i] = append(r.Captured[i][:0], x...)
		}
	}
}
