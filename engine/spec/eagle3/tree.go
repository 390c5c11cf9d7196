package eagle3

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"rigscope/engine/sample"
	"rigscope/engine/spec"
)

// TreeRunner is a ChainRunner that also runs the head's forward passes of
// a draft tree on its device. The tree's shape (which candidates become
// nodes: spec.TopChildren, the Branch best by score) stays the drafter's
// (growTree), one definition for the CPU and the device: the runner
// returns each depth's draft logits and the host picks the children.
type TreeRunner interface {
	ChainRunner
	// TreeNodes is the most nodes a tree may have on the device.
	TreeNodes() int
	// TreeRoot writes the extended rows first..first+T-1 as Extend does
	// and returns the last row's draft logits (draftVocab), valid until
	// the next call; the last row's output is the tree's root.
	TreeRoot(ctx context.Context, first int, tokens []int32, feats []float32) ([]float32, error)
	// TreeDepth runs the draft nodes [f0, len(tokens)) of the tree after
	// the last TreeRoot: node i is target id tokens[i], child of
	// parents[i] (-1: the root), at slot base+i and RoPE position
	// pos[i]; its hidden input is its parent's output, and it attends to
	// slots [0, base), its ancestors and itself (the CPU tree's batch with
	// See). It returns their draft logits (len(tokens)-f0, draftVocab),
	// valid until the next call. Nodes [0, f0) ran in earlier calls.
	TreeDepth(ctx context.Context, base int, tokens, parents, pos []int32, f0 int) ([]float32, error)
}

// SampledRunner is a ChainRunner that also drafts sampled chains on its
// device: token i is picked as sample.Sampler{P: p}.SampleU picks over
// the step's draft logits (the draft vocabulary) with uniform number
// u[i], and the draft distributions come back for verification.
type SampledRunner interface {
	ChainRunner
	// SampledChain writes the extended rows as GreedyChain does and drafts
	// len(u) tokens. It returns their draft ids (len(u)) and each one's
	// distribution q over the draft vocabulary (len(u), draftVocab), the
	// one it was drawn from, valid until the next call.
	SampledChain(ctx context.Context, first int, tokens []int32, feats []float32, p sample.Params, u []float64) (ids []int32, q []float32, err error)
}

// Fallbacks counts the requests the drafter ran on the CPU although it has
// a device runner, by reason (a copy).
func (d *Drafter) Fallbacks() map[string]int { return maps.Clone(d.fallbacks) }

func (d *Drafter) fellBack(why string) {
	if d.fallbacks == nil {
		d.fallbacks = map[string]int{}
	}
	d.fallbacks[why]++
}

// TreeScores are the last tree's nodes' cumulative draft log-probabilities
// (the scores spec.TopChildren ranked them by), in node order (a copy).
func (d *Drafter) TreeScores() []float64 { return slices.Clone(d.treeScore) }

// increasing reports whether ids is strictly increasing.
func increasing(ids []int32) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

// sampledRefusal is why a sampled chain with params p cannot run on the
// device ("" when it can). The CPU samples from q = p's transform of the
// draft logits scattered over the target vocabulary; the device samples
// over the draft vocabulary. The two pick the same token with the same q
// (to the bit, sample.Probs's sums being exact) when the draft-to-target
// map keeps the order (ties in top-k/top-p and the inverse CDF go by
// index) and both take the same top-k path (Probs renormalizes after a
// top-k cut only when k is below the row's length).
func (d *Drafter) sampledRefusal(p sample.Params) string {
	c := d.h.Cfg
	switch {
	case !d.d2tUp:
		return "sampled chain: the head's draft-to-target map is not increasing"
	case (p.TopP <= 0 || p.TopP >= 1) && p.TopK >= c.DraftVocab && p.TopK < c.Vocab:
		return fmt.Sprintf("sampled chain: top-k %d between the draft vocabulary (%d) and the target's (%d)", p.TopK, c.DraftVocab, c.Vocab)
	}
	return ""
}

// treeDepth runs the nodes [f0, len(p.Tokens)) of depth depth and
// returns their draft logits (len(p.Tokens)-f0, draftVocab).
type treeDepth func(p *spec.Proposal, f0, depth int) ([]float32, error)

// growTree grows a beam tree from the root's draft logits: per depth, the
// Branch best children (spec.TopChildren) of the previous depth's nodes by
// cumulative log-probability (a stable sort: equal scores keep parent
// order, then TopChildren's, lower draft id first), then one batched
// forward of the new nodes (run). The CPU and the device share it.
func (d *Drafter) growTree(ctx context.Context, rootLogits []float32, req spec.Request, run treeDepth) (spec.Proposal, error) {
	dv := d.h.Cfg.DraftVocab
	var p spec.Proposal
	score := d.treeScore[:0] // (nodes)
	defer func() { d.treeScore = score }()
	cands := spec.TopChildren(nil, rootLogits, -1, 0, req.Branch)
	for depth := 1; ; depth++ {
		sort.SliceStable(cands, func(a, b int) bool { return cands[a].Score > cands[b].Score })
		f0 := len(p.Tokens)
		for _, cd := range cands[:min(len(cands), req.Branch)] {
			p.Tokens = append(p.Tokens, d.h.DraftToTarget[cd.Tok])
			p.Parent = append(p.Parent, cd.Parent)
			score = append(score, cd.Score)
		}
		if depth == req.K {
			break
		}
		if err := ctx.Err(); err != nil {
			return spec.Proposal{}, err
		}
		logits, err := run(&p, f0, depth)
		if err != nil {
			return spec.Proposal{}, err
		}
		T := len(p.Tokens) - f0
		if len(logits) < T*dv {
			return spec.Proposal{}, fmt.Errorf("eagle3: tree depth %d: %d logits for %d nodes of %d", depth, len(logits), T, dv)
		}
		cands = cands[:0]
		for i := 0; i < T; i++ {
			cands = spec.TopChildren(cands, logits[i*dv:(i+1)*dv], int32(f0+i), score[f0+i], req.Branch)
		}
	}
	return p, nil
}

// tree grows the tree on the CPU: each depth one batched draft step over
// the new nodes (each sees the extended rows, its ancestors and itself).
func (d *Drafter) tree(ctx context.Context, rootH, rootLogits []float32, req spec.Request, n int) (spec.Proposal, error) {
	c := d.h.Cfg
	dim, dv := c.Dim, c.DraftVocab
	base := n - 1 // slot of node 0
	return d.growTree(ctx, rootLogits, req, func(p *spec.Proposal, f0, depth int) ([]float32, error) {
		T := len(p.Tokens) - f0
		d.grow(T)
		see := make([][]int32, T)
		for i := 0; i < T; i++ {
			node := f0 + i
			par := p.Parent[node]
			src := rootH
			if par >= 0 {
				src = d.nodeH[int(par)*dim : int(par+1)*dim]
			}
			copy(d.hin[i*dim:(i+1)*dim], src)
			d.pos[i] = int32(n - 2 + depth)
			for a := int32(node); a >= 0; a = p.Parent[a] {
				see[i] = append(see[i], int32(base)+a)
			}
			slices.Reverse(see[i])
		}
		d.r.forward(batch{Tokens: p.Tokens[f0:], Hin: d.hin, Pos: d.pos[:T], Slot: base + f0, Prefix: base, See: see}, d.nodeH[f0*dim:])
		logits := d.logits[:T*dv]
		d.r.logits(logits, d.nodeH[f0*dim:], T)
		return logits, nil
	})
}

// deviceTree grows the tree with the head's forward passes on the device
// runner (the extended rows and the root, then one call a depth).
func (d *Drafter) deviceTree(ctx context.Context, tr TreeRunner, seq []int32, req spec.Request) (spec.Proposal, error) {
	if lim := tr.TreeNodes(); req.MaxNodes() > lim {
		return spec.Proposal{}, fmt.Errorf("eagle3: a tree of up to %d nodes (depth %d x branch %d) exceeds the device head's %d; lower --k or --tree",
			req.MaxNodes(), req.K, req.Branch, lim)
	}
	d.useCache(true)
	n := len(seq)
	first := d.firstStale(seq)
	d.rows = min(d.rows, first) // rows past first are rewritten (or lost on error)
	root, err := tr.TreeRoot(ctx, first, seq[first+1:n], d.feats[first*d.fw:(n-1)*d.fw])
	if err != nil {
		return spec.Proposal{}, fmt.Errorf("eagle3: tree root on the device: %w", err)
	}
	copy(d.rowTok[first:], seq[first+1:n])
	d.rows = n - 1
	base := n - 1 // slot of node 0
	var pos []int32
	p, err := d.growTree(ctx, root, req, func(p *spec.Proposal, f0, depth int) ([]float32, error) {
		for len(pos) < len(p.Tokens) {
			pos = append(pos, int32(n-2+depth))
		}
		l, err := tr.TreeDepth(ctx, base, p.Tokens, p.Parent, pos, f0)
		if err != nil {
			return nil, fmt.Errorf("eagle3: tree depth %d on the device: %w", depth, err)
		}
		return l, nil
	})
	if err != nil {
		// The draft slots past the rows may hold a partial tree: they are
		// rewritten by the next proposal, and the rows are intact.
		return spec.Proposal{}, err
	}
	return p, nil
}

// deviceSampled drafts a sampled chain on the device runner: the uniform
// numbers are the drafter's sampler's, drawn in the order the CPU chain
// draws them (one per token), and each token's q is the device's draft
// distribution scattered over the target vocabulary (zero elsewhere), as
// the CPU chain reports it.
func (d *Drafter) deviceSampled(ctx context.Context, sr SampledRunner, seq []int32, req spec.Request) (spec.Proposal, error) {
	c := d.h.Cfg
	d.useCache(true)
	n := len(seq)
	first := d.firstStale(seq)
	d.rows = min(d.rows, first)
	u := make([]float64, req.K)
	for i := range u {
		u[i] = req.Sampler.Uniform()
	}
	ids, q, err := sr.SampledChain(ctx, first, seq[first+1:n], d.feats[first*d.fw:(n-1)*d.fw], req.Sampler.P, u)
	if err != nil {
		return spec.Proposal{}, fmt.Errorf("eagle3: sampled chain on the device: %w", err)
	}
	if len(ids) != req.K || len(q) < req.K*c.DraftVocab {
		return spec.Proposal{}, fmt.Errorf("eagle3: sampled chain on the device: %d tokens and %d probabilities for k=%d", len(ids), len(q), req.K)
	}
	copy(d.rowTok[first:], seq[first+1:n])
	d.rows = n - 1
	p := spec.Proposal{Tokens: make([]int32, req.K), Probs: make([][]float32, req.K)}
	for i, id := range ids {
		if id < 0 || int(id) >= c.DraftVocab {
			return spec.Proposal{}, fmt.Errorf("eagle3: sampled chain on the device: draft id %d outside the draft vocabulary of %d", id, c.DraftVocab)
		}
		p.Tokens[i] = d.h.DraftToTarget[id]
		full := make([]float32, c.Vocab)
		for j, v := range q[i*c.DraftVocab : (i+1)*c.DraftVocab] {
			full[d.h.DraftToTarget[j]] = v
		}
		p.Probs[i] = full
	}
	return p, nil
}
