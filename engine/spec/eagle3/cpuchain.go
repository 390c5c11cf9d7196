package eagle3

import (
	"context"
	"fmt"
	"slices"

	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/tensor/cpu"
)

// CPUChain is a ChainRunner on the CPU: the head's run state behind the
// interface a device head implements, so the drafter's device path (rows
// in the runner's cache, chains drafted there, a prompt extended when
// observed) runs and is checked without a device. It drafts what the
// drafter's own CPU chain drafts.
type CPUChain struct {
	h      *Head
	r      *runState
	hin    []float32 // (T, dim)
	hout   []float32 // (T, dim)
	logits []float32 // (draftVocab)
	pos    []int32   // (T)
	out    []int32   // (k) the last chain's target ids

	nodeH   []float32 // (1+nodes, dim) the tree's root, then its nodes' outputs
	tlogits []float32 // (rows, draftVocab) a tree depth's logits, or a sampled chain's q
}

var _ PendingRunner = (*CPUChain)(nil)

// CPUPending is a CPUChain's chain as a spec.PendingChain: the tokens,
// drafted already (a target reads them with Tokens).
type CPUPending struct{ tokens []int32 }

func (p *CPUPending) Len() int        { return len(p.tokens) }
func (p *CPUPending) Tokens() []int32 { return p.tokens }

// EnqueueChain implements PendingRunner: the chain, drafted now.
func (c *CPUChain) EnqueueChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) (spec.PendingChain, error) {
	ids, err := c.GreedyChain(ctx, first, tokens, feats, k)
	if err != nil {
		return nil, err
	}
	return &CPUPending{tokens: slices.Clone(ids)}, nil
}

// NewCPUChain makes a chain runner over h with a cache of slots positions.
func NewCPUChain(h *Head, slots int, pool *cpu.Pool) *CPUChain {
	return &CPUChain{h: h, r: newRunState(h, slots, pool), logits: make([]float32, h.Cfg.DraftVocab)}
}

// Extend implements ChainRunner.
func (c *CPUChain) Extend(ctx context.Context, first int, tokens []int32, feats []float32) error {
	_, err := c.rows(ctx, first, tokens, feats, 0)
	return err
}

// GreedyChain implements ChainRunner.
func (c *CPUChain) GreedyChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) ([]int32, error) {
	if k < 1 {
		return nil, fmt.Errorf("eagle3: chain of %d tokens", k)
	}
	h, err := c.rows(ctx, first, tokens, feats, k)
	if err != nil {
		return nil, err
	}
	cfg := c.h.Cfg
	n := first + len(tokens) // the slot of draft step 1
	c.out = c.out[:0]
	for i := 0; ; i++ {
		c.r.logits(c.logits, h, 1)
		x := c.h.DraftToTarget[sample.Argmax(c.logits)]
		c.out = append(c.out, x)
		if i == k-1 {
			return c.out, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		copy(c.hin[:cfg.Dim], h)
		c.pos[0] = int32(n + i)
		c.r.forward(batch{Tokens: c.out[i : i+1], Hin: c.hin[:cfg.Dim], Pos: c.pos[:1], Slot: n + i, Prefix: n + i}, c.hout)
		h = c.hout[:cfg.Dim]
	}
}

// rows extends rows first.. and returns the last one's output (dim).
func (c *CPUChain) rows(ctx context.Context, first int, tokens []int32, feats []float32, k int) ([]float32, error) {
	cfg := c.h.Cfg
	T, fw := len(tokens), NumAux*cfg.TargetDim
	switch {
	case T == 0 || k < 0:
		return nil, fmt.Errorf("eagle3: chain of %d rows and %d tokens", T, k)
	case len(feats) < T*fw:
		return nil, fmt.Errorf("eagle3: chain: %d feature floats for %d rows of %d", len(feats), T, fw)
	case first < 0 || first+T+max(k-1, 0) > c.r.slots:
		return nil, fmt.Errorf("eagle3: chain at %d of %d rows and %d tokens exceeds the cache of %d", first, T, k, c.r.slots)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.hin) < T*cfg.Dim {
		c.hin, c.hout, c.pos = make([]float32, T*cfg.Dim), make([]float32, T*cfg.Dim), make([]int32, T)
	}
	c.r.fuse(c.hin, feats[:T*fw], T) // hin (T, dim)
	for i := range T {
		c.pos[i] = int32(first + i)
	}
	c.r.forward(batch{Tokens: tokens, Hin: c.hin[:T*cfg.Dim], Pos: c.pos[:T], Slot: first, Prefix: first}, c.hout)
	return c.hout[(T-1)*cfg.Dim : T*cfg.Dim], nil
}

// Close implements ChainRunner (the head is the caller's).
func (c *CPUChain) Close() error { return nil }

var (
	_ TreeRunner    = (*CPUChain)(nil)
	_ SampledRunner = (*CPUChain)(nil)
)

// TreeNodes implements TreeRunner: a full proposal.
func (c *CPUChain) TreeNodes() int { return spec.MaxK * spec.MaxBranch }

// TreeRoot implements TreeRunner.
func (c *CPUChain) TreeRoot(ctx context.Context, first int, tokens []int32, feats []float32) ([]float32, error) {
	h, err := c.rows(ctx, first, tokens, feats, 0)
	if err != nil {
		return nil, err
	}
	dim := c.h.Cfg.Dim
	if len(c.nodeH) < (1+spec.MaxK*spec.MaxBranch)*dim {
		c.nodeH = make([]float32, (1+spec.MaxK*spec.MaxBranch)*dim)
	}
	copy(c.nodeH[:dim], h) // row 0: the root; row 1+i: node i
	c.r.logits(c.logits, h, 1)
	return c.logits, nil
}

// TreeDepth implements TreeRunner.
func (c *CPUChain) TreeDepth(ctx context.Context, base int, tokens, parents, pos []int32, f0 int) ([]float32, error) {
	cfg := c.h.Cfg
	dim, dv, n := cfg.Dim, cfg.DraftVocab, len(tokens)
	switch {
	case len(parents) != n || len(pos) != n || f0 < 0 || f0 >= n || n > c.TreeNodes():
		return nil, fmt.Errorf("eagle3: tree depth of nodes %d..%d with %d parents and %d positions", f0, n, len(parents), len(pos))
	case base < 1 || base+n > c.r.slots:
		return nil, fmt.Errorf("eagle3: tree at %d of %d nodes exceeds the cache of %d", base, n, c.r.slots)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	T := n - f0
	if len(c.hin) < T*dim {
		c.hin, c.hout, c.pos = make([]float32, T*dim), make([]float32, T*dim), make([]int32, T)
	}
	see := make([][]int32, T)
	for i := 0; i < T; i++ {
		node := f0 + i
		par := parents[node]
		if par < -1 || int(par) >= node {
			return nil, fmt.Errorf("eagle3: tree node %d has parent %d", node, par)
		}
		copy(c.hin[i*dim:(i+1)*dim], c.nodeH[int(par+1)*dim:int(par+2)*dim])
		for a := int32(node); a >= 0; a = parents[a] {
			see[i] = append(see[i], int32(base)+a)
		}
		slices.Reverse(see[i])
	}
	out := c.nodeH[(1+f0)*dim : (1+n)*dim]
	c.r.forward(batch{Tokens: tokens[f0:], Hin: c.hin[:T*dim], Pos: pos[f0:], Slot: base + f0, Prefix: base, See: see}, out)
	if len(c.tlogits) < T*dv {
		c.tlogits = make([]float32, T*dv)
	}
	c.r.logits(c.tlogits[:T*dv], out, T)
	return c.tlogits[:T*dv], nil
}

// SampledChain implements SampledRunner: the draft distribution q over the
// draft vocabulary (sample.Sampler.Probs of the step's draft logits) and
// the token DrawU picks from it with u[i].
func (c *CPUChain) SampledChain(ctx context.Context, first int, tokens []int32, feats []float32, p sample.Params, u []float64) ([]int32, []float32, error) {
	k := len(u)
	if k < 1 || k > spec.MaxK || p.Greedy() {
		return nil, nil, fmt.Errorf("eagle3: sampled chain of %d tokens at temperature %g", k, p.Temperature)
	}
	h, err := c.rows(ctx, first, tokens, feats, k)
	if err != nil {
		return nil, nil, err
	}
	cfg := c.h.Cfg
	dv := cfg.DraftVocab
	if len(c.tlogits) < k*dv {
		c.tlogits = make([]float32, k*dv)
	}
	q := c.tlogits[:k*dv]
	s := &sample.Sampler{P: p}
	n := first + len(tokens)
	ids := make([]int32, k)
	for i := 0; ; i++ {
		c.r.logits(c.logits, h, 1)
		s.Probs(q[i*dv:(i+1)*dv], c.logits)
		ids[i] = sample.DrawU(q[i*dv:(i+1)*dv], u[i])
		if i == k-1 {
			return ids, q, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		x := []int32{c.h.DraftToTarget[ids[i]]}
		copy(c.hin[:cfg.Dim], h)
		c.pos[0] = int32(n + i)
		c.r.forward(batch{Tokens: x, Hin: c.hin[:cfg.Dim], Pos: c.pos[:1], Slot: n + i, Prefix: n + i}, c.hout)
		h = c.hout[:cfg.Dim]
	}
}
