// Package draftmodel drafts with a small language model that shares the
// target's vocabulary. It keeps its own KV cache and the tokens that cache
// holds; each Propose rewinds the cache to the longest common prefix with
// the sequence it is shown and feeds the rest, so it follows the target's
// rewinds (and survives cancelled steps) without being told.
//
// A chain samples each token from the drafter's distribution q (the
// request's sampler applied to its logits; argmax when greedy) and reports
// q for rejection sampling. A tree keeps, per depth, the Branch best
// (parent, token) pairs by cumulative log-probability (a beam, as EAGLE-2
// expands its tree); each depth is one tree-masked forward pass.
//
// The runner is unsharded (TP=1) and runs on the calling goroutine; see the
// spec package comment for why.
package draftmodel

import (
	"context"
	"fmt"
	"sort"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
)

// Drafter is a model drafter. Not safe for concurrent use.
type Drafter struct {
	r      *model.Runner
	cached []int32   // tokens in r.KV slots [0, r.KV.Len)
	logits []float32 // (rows, vocab) scratch
	vocab  int
}

// New wraps a runner whose cache should hold the target's context plus
// MaxNodes of a request (the engine sizes it).
func New(r *model.Runner) *Drafter {
	return &Drafter{r: r, vocab: r.W.Cfg.Vocab}
}

func (d *Drafter) Name() string { return "model" }
func (d *Drafter) Accept([]int) {}

// Reset empties the cache.
func (d *Drafter) Reset() {
	d.r.KV.Len = 0
	d.cached = d.cached[:0]
}

// Runner is the draft model (for metrics and tests).
func (d *Drafter) Runner() *model.Runner { return d.r }

// forward runs b and returns its logits rows; on success the cached tokens
// follow the cache (chains only: trees are rewound by the caller).
func (d *Drafter) forward(ctx context.Context, b model.Batch, rows int) ([]float32, error) {
	if need := rows * d.vocab; cap(d.logits) < need {
		d.logits = make([]float32, need)
	}
	out := d.logits[:rows*d.vocab]
	if err := d.r.Forward(ctx, b, out); err != nil {
		return nil, err
	}
	if b.Parent == nil {
		d.cached = append(d.cached, b.Tokens...)
	}
	return out, nil
}

// sync makes the cache hold seq and returns the logits after it.
func (d *Drafter) sync(ctx context.Context, seq []int32) ([]float32, error) {
	n := 0
	for n < len(d.cached) && n < len(seq) && n < d.r.KV.Len && d.cached[n] == seq[n] {
		n++
	}
	if n == len(seq) {
		n-- // everything is cached: recompute the last position for its logits
	}
	if err := d.r.KV.Rewind(n); err != nil {
		return nil, fmt.Errorf("draft model: %w", err)
	}
	d.cached = d.cached[:n]
	return d.forward(ctx, model.Batch{Tokens: seq[n:], Logits: model.LogitsLast}, 1)
}

// Propose drafts a chain or a tree after seq.
func (d *Drafter) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	if len(seq) == 0 {
		return spec.Proposal{}, nil
	}
	if len(seq)+1 > d.r.KV.Slots {
		return spec.Proposal{}, nil // no room to draft: the loop takes a plain step
	}
	logits, err := d.sync(ctx, seq)
	if err != nil {
		return spec.Proposal{}, err
	}
	if req.Branch > 0 {
		return d.tree(ctx, logits, req)
	}
	return d.chain(ctx, logits, req)
}

func (d *Drafter) chain(ctx context.Context, logits []float32, req spec.Request) (spec.Proposal, error) {
	var p spec.Proposal
	greedy := req.Sampler == nil || req.Sampler.P.Greedy()
	for i := 0; i < req.K; i++ {
		var x int32
		if greedy {
			x = sample.Argmax(logits)
		} else {
			q := make([]float32, d.vocab)
			req.Sampler.Probs(q, logits)
			x = req.Sampler.Draw(q)
			p.Probs = append(p.Probs, q)
		}
		p.Tokens = append(p.Tokens, x)
		if i == req.K-1 || d.r.KV.Len+1 > d.r.KV.Slots {
			break
		}
		var err error
		if logits, err = d.forward(ctx, model.Batch{Tokens: []int32{x}, Logits: model.LogitsLast}, 1); err != nil {
			return spec.Proposal{}, err
		}
	}
	return p, nil
}

// tree grows a beam tree: depth by depth, the Branch best children of the
// previous depth's nodes. The cache is rewound to the context afterwards.
func (d *Drafter) tree(ctx context.Context, root []float32, req spec.Request) (spec.Proposal, error) {
	base := d.r.KV.Len
	defer d.r.KV.Rewind(base)
	var p spec.Proposal
	var pos []int32     // (nodes) RoPE positions
	var score []float64 // (nodes) cumulative log-probability
	cands := spec.TopChildren(nil, root, -1, 0, req.Branch)
	frontier := 0 // first node of the last depth
	for depth := 1; ; depth++ {
		sort.SliceStable(cands, func(a, b int) bool { return cands[a].Score > cands[b].Score })
		frontier = len(p.Tokens)
		for _, c := range cands[:min(len(cands), req.Branch)] {
			p.Tokens = append(p.Tokens, c.Tok)
			p.Parent = append(p.Parent, c.Parent)
			pos = append(pos, int32(base+depth-1))
			score = append(score, c.Score)
		}
		if depth == req.K || base+len(p.Tokens) > d.r.KV.Slots {
			break
		}
		if err := d.r.KV.Rewind(base); err != nil {
			return spec.Proposal{}, fmt.Errorf("draft model: %w", err)
		}
		b := model.Batch{Tokens: p.Tokens, Parent: p.Parent, Pos: pos, Logits: model.LogitsAll}
		logits, err := d.forward(ctx, b, len(p.Tokens))
		if err != nil {
			return spec.Proposal{}, err
		}
		cands = cands[:0]
		for f := frontier; f < len(p.Tokens); f++ {
			cands = spec.TopChildren(cands, logits[f*d.vocab:(f+1)*d.vocab], int32(f), score[f], req.Branch)
		}
	}
	return p, nil
}
