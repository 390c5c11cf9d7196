package eagle3

import (
	"context"
	"fmt"
	"math"
	"slices"

	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/tensor/cpu"
)

// Drafter drafts with an EAGLE-3 head (a spec.FeatureDrafter). Not safe
// for concurrent use. With n = len(seq) at a Propose, the target has
// produced features for positions [0, n-1) and the head's extended rows
// are t = 0..n-2, row t pairing the features of position t with token
// seq[t+1] at RoPE position t; KV slot t holds row t, and draft rows
// follow from slot n-1 on.
type Drafter struct {
	h     *Head
	r     *runState
	slots int
	fw    int // NumAux*td: one position's concatenated features

	feats   []float32 // (slots, fw) cat(f0, f1, f2) by position
	featTok []int32   // (slots) the token at each position with features
	featLen int       // positions [0, featLen) have features
	rowTok  []int32   // (slots) the token row t was extended with (seq[t+1])
	rows    int       // KV slots [0, rows) hold extended rows
	err     error     // a bad Observe, reported by the next Propose

	dev       ChainRunner // the head on the target's device, or nil
	rowsOnDev bool        // rows/rowTok describe dev's cache, not the CPU runState's
	d2tUp     bool        // DraftToTarget is strictly increasing (sampledRefusal)
	fallbacks map[string]int
	treeScore []float64 // (nodes) the last tree's cumulative log-probabilities

	hin    []float32 // (T, dim) hidden inputs of a batch
	hout   []float32 // (T, dim) outputs of a batch
	nodeH  []float32 // (MaxK*MaxBranch, dim) tree nodes' outputs
	logits []float32 // (T, draftVocab)
	full   []float32 // (vocab) draft logits scattered to target ids, -Inf elsewhere
	pos    []int32   // (T)
	toks   []int32   // (T)
}

var (
	_ spec.FeatureDrafter = (*Drafter)(nil)
	_ spec.CycleDrafter   = (*Drafter)(nil)
)

// New makes a drafter over h whose cache holds ctxLen positions plus a
// full proposal (MaxK*MaxBranch draft rows). pool runs its matrix
// products (nil: the calling goroutine only).
func New(h *Head, ctxLen int, pool *cpu.Pool) *Drafter {
	slots := ctxLen + spec.MaxK*spec.MaxBranch
	fw := NumAux * h.Cfg.TargetDim
	return &Drafter{
		h: h, r: newRunState(h, slots, pool), slots: slots, fw: fw,
		feats:   make([]float32, slots*fw),
		featTok: make([]int32, slots),
		rowTok:  make([]int32, slots),
		nodeH:   make([]float32, spec.MaxK*spec.MaxBranch*h.Cfg.Dim),
		full:    make([]float32, h.Cfg.Vocab),
		d2tUp:   increasing(h.DraftToTarget),
	}
}

func (d *Drafter) Name() string         { return "eagle3" }
func (d *Drafter) Head() *Head          { return d.h }
func (d *Drafter) FeatureLayers() []int { return d.h.Cfg.AuxLayers }

// Accept needs nothing: draft rows past the extended prefix are
// overwritten by the next round's extend.
func (d *Drafter) Accept([]int) {}

// Reset forgets all features and cached rows.
func (d *Drafter) Reset() { d.featLen, d.rows, d.err = 0, 0, nil }

// ChainRunner is the head on an accelerator: it runs a whole greedy draft
// chain there (the extended rows, k-1 draft steps, each step's argmax and
// the draft-to-target id map), so a chain costs one launch and copies back
// k token ids. The CPU runState is the specification it must match. Trees
// run there when it is also a TreeRunner, sampled chains when it is a
// SampledRunner (tree.go); otherwise, or where one refuses a request (a
// limit, by name), the drafter runs them on the CPU and counts the reason
// (Fallbacks).
type ChainRunner interface {
	// GreedyChain writes the extended rows first..first+T-1 (tokens (T),
	// hidden inputs fc(feats), feats (T, NumAux*td)) at slots and RoPE
	// positions first+i, then drafts k tokens after the last row as the
	// CPU chain does (draft step i at slot and position first+T+i-1...).
	// It returns k target token ids, valid until the next call.
	GreedyChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) ([]int32, error)
	// Extend writes the extended rows first..first+T-1 as GreedyChain
	// does, and drafts nothing (a prompt's catch-up, run as prefill work).
	Extend(ctx context.Context, first int, tokens []int32, feats []float32) error
	Close() error
}

// PendingRunner is a ChainRunner that can leave a greedy chain on its
// device for the target's verify to read (spec.ChainVerifier).
type PendingRunner interface {
	ChainRunner
	// EnqueueChain is GreedyChain without reading the tokens back: it
	// returns the chain as the target reads it; nil with no error: not
	// now (GreedyChain then runs it).
	EnqueueChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) (spec.PendingChain, error)
}

// SetDevice runs greedy chains on r (nil: on the CPU). The cached rows are
// forgotten: they live in the other cache.
func (d *Drafter) SetDevice(r ChainRunner) { d.dev, d.rows, d.rowsOnDev = r, 0, r != nil }

// Close releases the device runner, if any (the head's weights are the
// Head's to close).
func (d *Drafter) Close() error {
	if d.dev == nil {
		return nil
	}
	err := d.dev.Close()
	d.dev, d.rows = nil, 0
	return err
}

// useCache makes rows describe the device's cache (onDev) or the CPU's,
// forgetting them when the other one held them.
func (d *Drafter) useCache(onDev bool) {
	if d.rowsOnDev != onDev {
		d.rows, d.rowsOnDev = 0, onDev
	}
}

// firstStale is the first extended row to recompute for seq: rows whose
// token still matches are kept, and the last one (n-2) is always redone.
func (d *Drafter) firstStale(seq []int32) int {
	first := 0
	for first < d.rows && first < len(seq)-2 && d.rowTok[first] == seq[first+1] {
		first++
	}
	return first
}

// Observe records the target's features for the tokens at positions pos,
// pos+1, ...; rows extended from replaced features are dropped.
func (d *Drafter) Observe(pos int, tokens []int32, feats [][]float32) {
	td, n := d.h.Cfg.TargetDim, len(tokens)
	if pos == 0 {
		d.err = nil
	}
	switch {
	case len(feats) != NumAux:
		d.err = fmt.Errorf("eagle3: observed features of %d layers, the head reads %d (%v)", len(feats), NumAux, d.h.Cfg.AuxLayers)
		return
	case pos > d.featLen:
		d.err = fmt.Errorf("eagle3: features for positions from %d arrived, but positions %d..%d were never observed", pos, d.featLen, pos-1)
		return
	case pos+n > d.slots:
		d.err = fmt.Errorf("eagle3: features for positions up to %d exceed the head's cache of %d", pos+n, d.slots)
		return
	}
	for l, f := range feats {
		if len(f) < n*td {
			d.err = fmt.Errorf("eagle3: layer %d features hold %d floats for %d tokens of width %d", d.h.Cfg.AuxLayers[l], len(f), n, td)
			return
		}
	}
	for i := 0; i < n; i++ {
		row := d.feats[(pos+i)*d.fw : (pos+i+1)*d.fw]
		for l, f := range feats {
			copy(row[l*td:(l+1)*td], f[i*td:(i+1)*td])
		}
	}
	copy(d.featTok[pos:], tokens)
	d.featLen = pos + n
	d.rows = min(d.rows, pos)
	if d.dev != nil && d.rowsOnDev && d.featLen-1-d.rows > eagerRows {
		d.extendDevice()
	}
}

// eagerRows: an observation that leaves more rows to extend than one
// speculative step can add (a prompt) is extended on the device when
// observed, so that the catch-up is prefill work and the next draft step
// runs one row before its chain. The rows are the ones Propose would
// extend (the same tokens and features), so the drafts are unchanged.
const eagerRows = spec.MaxK + 1

// extendDevice extends the device's rows up to featLen-2 (row t pairs the
// features of position t with the token at t+1; row featLen-1 waits for
// its token, the next Propose's).
func (d *Drafter) extendDevice() {
	first, last := d.rows, d.featLen-1 // rows [first, last)
	if err := d.dev.Extend(context.Background(), first, d.featTok[first+1:last+1], d.feats[first*d.fw:last*d.fw]); err != nil {
		d.err = fmt.Errorf("eagle3: extend %d rows on the device: %w", last-first, err)
		return
	}
	copy(d.rowTok[first:], d.featTok[first+1:last+1])
	d.rows = last
}

// grow sizes the per-batch buffers for T rows.
func (d *Drafter) grow(T int) {
	dim, dv := d.h.Cfg.Dim, d.h.Cfg.DraftVocab
	if len(d.hin) < T*dim {
		d.hin = make([]float32, T*dim)
		d.hout = make([]float32, T*dim)
		d.pos = make([]int32, T)
		d.toks = make([]int32, T)
	}
	if len(d.logits) < T*dv {
		d.logits = make([]float32, T*dv)
	}
}

// Propose drafts a chain or a tree after seq.
func (d *Drafter) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	if d.err != nil {
		return spec.Proposal{}, d.err
	}
	n := len(seq)
	if n < 2 || req.K < 1 || n-1+req.MaxNodes() > d.slots {
		return spec.Proposal{}, nil // nothing to extend from, or no room: a plain step
	}
	if d.featLen < n-1 || !slices.Equal(d.featTok[:n-1], seq[:n-1]) {
		return spec.Proposal{}, fmt.Errorf("eagle3: the target's features cover %d positions, the %d-token sequence needs the first %d (the decode loop must pass every target forward's features to Observe)",
			d.commonFeatures(seq), n, n-1)
	}
	if err := ctx.Err(); err != nil {
		return spec.Proposal{}, err
	}
	greedy := req.Sampler == nil || req.Sampler.P.Greedy()
	if d.dev != nil {
		switch {
		case req.Branch == 0 && greedy:
			return d.deviceChain(ctx, seq, req.K)
		case req.Branch > 0:
			if tr, ok := d.dev.(TreeRunner); ok {
				return d.deviceTree(ctx, tr, seq, req)
			}
			d.fellBack("tree: the device runner drafts no trees")
		default:
			if sr, ok := d.dev.(SampledRunner); ok {
				if why := d.sampledRefusal(req.Sampler.P); why == "" {
					return d.deviceSampled(ctx, sr, seq, req)
				} else {
					d.fellBack(why)
				}
			} else {
				d.fellBack("sampled chain: the device runner samples no chains")
			}
		}
	}
	d.useCache(false)
	rootH, rootLogits := d.extend(seq)
	if req.Branch > 0 {
		return d.tree(ctx, rootH, rootLogits, req, n)
	}
	return d.chain(ctx, rootH, rootLogits, req, n)
}

func (d *Drafter) commonFeatures(seq []int32) int {
	i := 0
	for i < d.featLen && i < len(seq) && d.featTok[i] == seq[i] {
		i++
	}
	return i
}

// extend brings the extended rows to t = 0..n-2 (recomputing at least the
// last one) and returns the last row's output (dim) and logits
// (draftVocab).
func (d *Drafter) extend(seq []int32) (h, logits []float32) {
	c := d.h.Cfg
	n := len(seq)
	first := d.firstStale(seq) // <= n-2: the last row is always recomputed, for its output
	T := n - 1 - first
	d.grow(T)
	d.r.fuse(d.hin, d.feats[first*d.fw:(n-1)*d.fw], T) // hin (T, dim)
	for i := 0; i < T; i++ {
		d.pos[i] = int32(first + i)
	}
	d.r.forward(batch{Tokens: seq[first+1 : n], Hin: d.hin, Pos: d.pos[:T], Slot: first, Prefix: first}, d.hout)
	copy(d.rowTok[first:], seq[first+1:n])
	d.rows = n - 1
	h = d.hout[(T-1)*c.Dim : T*c.Dim]
	logits = d.logits[:c.DraftVocab]
	d.r.logits(logits, h, 1)
	return h, logits
}

// chain drafts K tokens: each from the previous step's logits, then one
// draft step (embed(token), previous output) at the next position.
func (d *Drafter) chain(ctx context.Context, h, logits []float32, req spec.Request, n int) (spec.Proposal, error) {
	c := d.h.Cfg
	var p spec.Proposal
	greedy := req.Sampler == nil || req.Sampler.P.Greedy()
	hin := d.hin[:c.Dim]
	for i := 0; i < req.K; i++ {
		var x int32
		if greedy {
			x = d.h.DraftToTarget[sample.Argmax(logits)]
		} else {
			q := make([]float32, c.Vocab)
			req.Sampler.Probs(q, d.scatter(logits))
			x = req.Sampler.Draw(q)
			p.Probs = append(p.Probs, q)
		}
		p.Tokens = append(p.Tokens, x)
		if i == req.K-1 {
			break
		}
		if err := ctx.Err(); err != nil {
			return spec.Proposal{}, err
		}
		copy(hin, h)
		d.pos[0], d.toks[0] = int32(n-1+i), x
		// Slot n-1+i; a one-row causal batch sees every slot before it.
		d.r.forward(batch{Tokens: d.toks[:1], Hin: hin, Pos: d.pos[:1], Slot: n - 1 + i, Prefix: n - 1 + i}, d.hout)
		h = d.hout[:c.Dim]
		d.r.logits(logits, h, 1)
	}
	return p, nil
}

// scatter writes draft logits to their target ids in d.full (-Inf at ids
// outside the draft vocabulary).
func (d *Drafter) scatter(logits []float32) []float32 {
	ninf := float32(math.Inf(-1))
	for i := range d.full {
		d.full[i] = ninf
	}
	for j, v := range logits {
		d.full[d.h.DraftToTarget[j]] = v
	}
	return d.full
}

// ProposeOnDevice implements spec.DeviceChainDrafter: the greedy chain
// Propose would draft on the device runner, left there when the runner
// can (a PendingRunner); nil where Propose is needed (no such runner, a
// tree or sampled request, nothing to extend from, or an error Propose
// reports).
func (d *Drafter) ProposeOnDevice(ctx context.Context, seq []int32, req spec.Request) (spec.PendingChain, error) {
	pr, ok := d.dev.(PendingRunner)
	n := len(seq)
	switch {
	case !ok || d.err != nil || req.Branch != 0 || req.Sampler != nil && !req.Sampler.P.Greedy():
		return nil, nil
	case n < 2 || req.K < 1 || n-1+req.MaxNodes() > d.slots:
		return nil, nil
	case d.featLen < n-1 || !slices.Equal(d.featTok[:n-1], seq[:n-1]):
		return nil, nil
	}
	d.useCache(true)
	first := d.firstStale(seq)
	d.rows = min(d.rows, first) // rows past first are rewritten (or lost on error)
	p, err := pr.EnqueueChain(ctx, first, seq[first+1:n], d.feats[first*d.fw:(n-1)*d.fw], req.K)
	if err != nil || p == nil {
		if err != nil {
			err = fmt.Errorf("eagle3: draft on the device: %w", err)
		}
		return nil, err
	}
	copy(d.rowTok[first:], seq[first+1:n])
	d.rows = n - 1
	return p, nil
}

// ExtendedOnDevice implements spec.CycleDrafter: the target's device
// cycle extended the device cache's rows pos.. (row t pairing position
// t's features, which Observe has had, with tokens[t-pos], the token at
// t+1). Rows past them are not the drafter's to trust.
func (d *Drafter) ExtendedOnDevice(pos int, tokens []int32) {
	n := len(tokens)
	switch {
	case !d.rowsOnDev || pos > d.rows || pos+n > d.slots || pos+n > d.featLen:
		// The device's cache is not the one the drafter tracks, or rows
		// before pos were never extended: forget them all (the next
		// chain extends from row 0 again).
		d.rows = 0
		return
	}
	copy(d.rowTok[pos:], tokens)
	d.rows = pos + n
}

// deviceChain drafts a greedy chain of k tokens on the device runner.
func (d *Drafter) deviceChain(ctx context.Context, seq []int32, k int) (spec.Proposal, error) {
	d.useCache(true)
	n := len(seq)
	first := d.firstStale(seq)
	d.rows = min(d.rows, first) // rows past first are rewritten (or lost on error)
	ids, err := d.dev.GreedyChain(ctx, first, seq[first+1:n], d.feats[first*d.fw:(n-1)*d.fw], k)
	if err != nil {
		return spec.Proposal{}, fmt.Errorf("eagle3: draft on the device: %w", err)
	}
	copy(d.rowTok[first:], seq[first+1:n])
	d.rows = n - 1
	return spec.Proposal{Tokens: slices.Clone(ids)}, nil
}
