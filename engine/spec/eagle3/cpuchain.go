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
