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
// The draft model is unsharded (TP=1), runs on the calling goroutine (see
// the spec package comment for why) and on the target's device: the engine
// builds it as it builds the target.
package draftmodel

import (
	"context"
	"fmt"
	"sort"

	"rigscope/engine/model"
	"rigscope/engine/spec"
)

// Drafter is a model drafter. Not safe for concurrent use.
type Drafter struct {
	t      spec.Target
	cached []int32 // tokens in the target's cache slots [0, t.Len())
}

// New drafts with t, the draft model on any device (spec.NewRunnerTarget
// on the CPU; a GPU target executes the same model), whose cache should
// hold the target's context plus MaxNodes of a request (the engine sizes
// it).
func New(t spec.Target) *Drafter { return &Drafter{t: t} }

func (d *Drafter) Name() string { return "model" }
func (d *Drafter) Accept([]int) {}

// Reset empties the cache.
func (d *Drafter) Reset() {
	d.t.Rewind(0)
	d.cached = d.cached[:0]
}

// Target is the draft model (for metrics and tests).
func (d *Drafter) Target() spec.Target { return d.t }

// forward runs b and returns its logits rows, or at temperature 0 (greedy)
// only each row's argmax; on success the cached tokens follow the cache
// (chains only: trees are rewound by the caller).
func (d *Drafter) forward(ctx context.Context, b model.Batch, greedy bool) (logits []float32, ids []int32, err error) {
	if greedy {
		ids, err = spec.GreedyIDs(ctx, d.t, b)
	} else {
		logits, err = d.t.Forward(ctx, b)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("draft model: %w", err)
	}
	if b.Parent == nil {
		d.cached = append(d.cached, b.Tokens...)
	}
	return logits, ids, nil
}

// sync rewinds the cache to the longest prefix it shares with seq and
// returns the batch that feeds the rest (at least the last token, for the
// distribution after seq).
func (d *Drafter) sync(seq []int32) (model.Batch, error) {
	n := 0
	for n < len(d.cached) && n < len(seq) && n < d.t.Len() && d.cached[n] == seq[n] {
		n++
	}
	if n == len(seq) {
		n-- // everything is cached: recompute the last position for its logits
	}
	if err := d.t.Rewind(n); err != nil {
		return model.Batch{}, fmt.Errorf("draft model: %w", err)
	}
	d.cached = d.cached[:n]
	return model.Batch{Tokens: seq[n:], Logits: model.LogitsLast}, nil
}

// Propose drafts a chain or a tree after seq.
func (d *Drafter) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	if len(seq) == 0 {
		return spec.Proposal{}, nil
	}
	if len(seq)+1 > d.t.MaxLen() {
		return spec.Proposal{}, nil // no room to draft: the loop takes a plain step
	}
	b, err := d.sync(seq)
	if err != nil {
		return spec.Proposal{}, err
	}
	if req.Branch > 0 {
		return d.tree(ctx, b, req)
	}
	return d.chain(ctx, b, req)
}

// chain feeds b and then each drafted token, picking the next token from
// each forward's distribution: the argmax when greedy (on the draft
// model's device), else a sample from q, which it reports.
func (d *Drafter) chain(ctx context.Context, b model.Batch, req spec.Request) (spec.Proposal, error) {
	var p spec.Proposal
	greedy := req.Sampler == nil || req.Sampler.P.Greedy()
	for i := 0; i < req.K; i++ {
		logits, ids, err := d.forward(ctx, b, greedy)
		if err != nil {
			return spec.Proposal{}, err
		}
		var x int32
		if greedy {
			x = ids[0]
		} else {
			q := make([]float32, d.t.Vocab())
			req.Sampler.Probs(q, logits)
			x = req.Sampler.Draw(q)
			p.Probs = append(p.Probs, q)
		}
		p.Tokens = append(p.Tokens, x)
		if i == req.K-1 || d.t.Len()+1 > d.t.MaxLen() {
			break
		}
		b = model.Batch{Tokens: []int32{x}, Logits: model.LogitsLast}
	}
	return p, nil
}

// tree grows a beam tree: depth by depth, the Branch best children of the
// previous depth's nodes. The cache is rewound to the context afterwards.
func (d *Drafter) tree(ctx context.Context, b model.Batch, req spec.Request) (spec.Proposal, error) {
	root, _, err := d.forward(ctx, b, false)
	if err != nil {
		return spec.Proposal{}, err
	}
	vocab := d.t.Vocab()
	base := d.t.Len()
	defer d.t.Rewind(base)
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
		if depth == req.K || base+len(p.Tokens) > d.t.MaxLen() {
			break
		}
		if err := d.t.Rewind(base); err != nil {
			return spec.Proposal{}, fmt.Errorf("draft model: %w", err)
		}
		tb := model.Batch{Tokens: p.Tokens, Parent: p.Parent, Pos: pos, Logits: model.LogitsAll}
		logits, _, err := d.forward(ctx, tb, false)
		if err != nil {
			return spec.Proposal{}, err
		}
		cands = cands[:0]
		for f := frontier; f < len(p.Tokens); f++ {
			cands = spec.TopChildren(cands, logits[f*vocab:(f+1)*vocab], int32(f), score[f], req.Branch)
		}
	}
	return p, nil
}
