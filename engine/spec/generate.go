package spec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/stepstats"
)

// Options configure one generation.
type Options struct {
	MaxTokens int
	EOS       int32   // -1: none
	EOSIDs    []int32 // more ids that end it as EOS does (other end-of-sequence and end-of-turn tokens)
	K         int     // draft length, or tree depth (1..MaxK; ignored without a drafter)
	Branch    int     // 0: chain; B: tree with at most B nodes per depth
	Sampler   *sample.Sampler
	Drafter   Drafter // nil: plain decoding
	// DraftSampler is the drafter's own sampler (same params as Sampler, a
	// different random stream); nil derives one from DraftSeed.
	DraftSampler *sample.Sampler
	DraftSeed    uint64
	// MeasureBaseline interleaves plain steps (StepInfo.Baseline) in a
	// speculative run to measure the plain decode rate of this very
	// configuration (Result.Counts.Base; see baselineDue for the schedule).
	MeasureBaseline bool
	// Reuse says the target's cache already holds prompt[:Reuse] from an
	// earlier generation on the same target (the caller knows); those
	// positions are kept and only the rest is prefilled. 0: prefill all.
	Reuse int
	// Emit receives each step's new tokens; fromDraft[i] marks tokens that
	// were drafted and accepted.
	Emit func(ids []int32, fromDraft []bool)
	// Step receives each step's counts and times, after Emit.
	Step func(StepInfo)
	// Stop, when set, sees each step's new tokens before Emit (final: the
	// generation ends after them anyway) and may end it early: stop true
	// keeps ids[:keep] (1 <= keep <= len(ids)) and ends the generation with
	// StopReason "stop" (a stop string completed in their text).
	Stop func(ids []int32, final bool) (keep int, stop bool)

	// residual replaces norm(max(p-q, 0)) (tests prove they notice).
	residual func(r, p, q []float32, x int32)
}

// Result summarizes a generation.
type Result struct {
	Tokens     []int32
	FromDraft  []bool
	StopReason string // eos | max_tokens | context | stop | cancelled
	Prefill    time.Duration
	Decode     time.Duration // after the first token
	Counts     Counts
}

// Check validates the speculative settings against a prompt and a context
// of maxLen positions: k in 1..MaxK, branch in 0..MaxBranch, and room for
// the prompt, the token being verified and every proposal node.
func Check(k, branch, promptLen, maxLen int) error {
	if err := CheckShape(k, branch); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	nodes := Request{K: k, Branch: branch}.MaxNodes()
	if promptLen+1+nodes > maxLen {
		what := fmt.Sprintf("a chain of %d drafts", k)
		if branch > 0 {
			what = fmt.Sprintf("a tree of %d x %d = %d nodes", branch, k, nodes)
		}
		return fmt.Errorf("spec: %s after a %d-token prompt needs %d positions, the context holds %d; lower --k/--tree or raise --ctx",
			what, promptLen, promptLen+1+nodes, maxLen)
	}
	return nil
}

// CheckShape is the one check of a proposal's shape: k in 1..MaxK and
// branch in 0..MaxBranch.
func CheckShape(k, branch int) error {
	if k < 1 || k > MaxK {
		return fmt.Errorf("draft length k=%d outside 1..%d", k, MaxK)
	}
	if branch < 0 || branch > MaxBranch {
		return fmt.Errorf("tree branching %d outside 0..%d (0 = chain)", branch, MaxBranch)
	}
	return nil
}

// Generate prefills prompt into an empty target and decodes up to
// MaxTokens tokens, speculatively when o.Drafter is set.
func Generate(ctx context.Context, t Target, prompt []int32, o Options) (Result, error) {
	res := Result{Counts: stepstats.NewCounts(0)}
	if o.Drafter != nil {
		res.Counts = stepstats.NewCounts(o.K)
	}
	if len(prompt) == 0 {
		return res, errors.New("generate: empty prompt")
	}
	if len(prompt)+1 > t.MaxLen() {
		return res, fmt.Errorf("generate: prompt of %d tokens does not fit the context of %d; shorten it or raise --ctx", len(prompt), t.MaxLen())
	}
	if o.Sampler == nil {
		o.Sampler = sample.New(sample.Params{}, 0)
	}
	g := &gen{t: t, o: o, res: &res, v: newVerifier(o.Sampler, t.Vocab())}
	if o.residual != nil {
		g.v.residual = o.residual
	}
	if o.Drafter != nil {
		if err := Check(o.K, o.Branch, len(prompt), t.MaxLen()); err != nil {
			return res, err
		}
		if g.o.DraftSampler == nil {
			g.o.DraftSampler = sample.New(o.Sampler.P, o.DraftSeed^0x2545f4914f6cdd1d)
		}
		if fd, ok := o.Drafter.(FeatureDrafter); ok {
			ft, ok := t.(FeatureTarget)
			if !ok {
				return res, fmt.Errorf("generate: drafter %s reads the target's hidden states, which this target does not expose", fd.Name())
			}
			g.fd, g.ft = fd, ft
			ft.SetCapture(fd.FeatureLayers())
			defer ft.SetCapture(nil)
		}
	}
	keep := min(max(o.Reuse, 0), len(prompt)-1, t.Len())
	if g.fd != nil {
		keep = 0 // the drafter must observe every position's features
	}
	if err := t.Rewind(keep); err != nil {
		return res, err
	}
	err := g.run(ctx, prompt, keep)
	if err != nil && ctx.Err() != nil {
		res.StopReason, err = "cancelled", nil
	}
	return res, err
}

// gen is one generation's state.
type gen struct {
	t    Target
	o    Options
	res  *Result
	v    *verifier
	fd   FeatureDrafter // nil unless the drafter reads features
	ft   FeatureTarget
	seq  []int32 // prompt and emitted tokens; the last is not cached yet
	next int32   // the last token, to be fed to the target next
	done bool
	rows []int      // feature rows kept (scratch)
	u    [1]float64 // the uniform number handed to a SampleTarget (scratch)
}

func (g *gen) run(ctx context.Context, prompt []int32, cached int) error {
	t0 := time.Now()
	next, err := g.next1(ctx, model.Batch{Tokens: prompt[cached:], Logits: model.LogitsLast})
	if err != nil {
		return err
	}
	g.observe(0, prompt, nil, len(prompt))
	g.res.Prefill = time.Since(t0)
	g.seq = append([]int32{}, prompt...)
	t1 := time.Now()
	defer func() { g.res.Decode = time.Since(t1) }()
	g.emit(&StepInfo{IDs: []int32{next}, FromDraft: []bool{false}})
	last := t1
	for step := 0; !g.done; step++ {
		switch {
		case g.t.Len()+1 >= g.t.MaxLen():
			g.res.StopReason = "context"
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
		var st StepInfo
		baseline := g.o.Drafter != nil && g.o.MeasureBaseline && baselineDue(step, g.res.Counts.Base.N)
		if at := g.ahead(); at != nil && (g.o.Drafter == nil || baseline) {
			if err := g.plainAhead(ctx, at, baseline, &last); err != nil {
				return err
			}
			continue
		}
		if cv, cd := g.cycler(); cv != nil && !baseline {
			ran, err := g.cycle(ctx, cv, cd, &step, &last) // cycle.go: steps kept on the device
			if err != nil {
				return err
			}
			if ran {
				continue
			}
		}
		if g.o.Drafter == nil || baseline {
			st, err = g.plainStep(ctx)
		} else {
			st, err = g.specStep(ctx)
		}
		if err != nil {
			return err
		}
		st.Baseline = baseline
		g.record(&st, &last)
	}
	return nil
}

// record emits a step's tokens and counts the step. Its Other is its wall
// time since the previous step ended (*last) outside draft and verify:
// sampling, streaming, the caller's Step.
func (g *gen) record(st *StepInfo, last *time.Time) {
	g.emit(st)
	now := time.Now()
	st.Other = max(0, now.Sub(*last)-st.Draft-st.Verify)
	*last = now
	g.res.Counts.Add(st.Step)
	if g.o.Step != nil {
		g.o.Step(*st)
	}
}

// emit appends a step's tokens, cut after EOS, at MaxTokens or where
// o.Stop cuts (st keeps the cut and its count in st.Tokens), and sets done
// (and the stop reason) when the generation is over.
func (g *gen) emit(st *StepInfo) {
	ids, fromDraft := st.IDs, st.FromDraft
	for i, id := range ids {
		switch {
		case id == g.o.EOS || slices.Contains(g.o.EOSIDs, id):
			ids, fromDraft = ids[:i+1], fromDraft[:i+1]
			g.done, g.res.StopReason = true, "eos"
		case len(g.res.Tokens)+i+1 >= g.o.MaxTokens:
			ids, fromDraft = ids[:i+1], fromDraft[:i+1]
			g.done, g.res.StopReason = true, "max_tokens"
		default:
			continue
		}
		break
	}
	if g.o.Stop != nil {
		// The loop ends at the context's end before the next step.
		final := g.done || g.t.Len()+1 >= g.t.MaxLen()
		if keep, stop := g.o.Stop(ids, final); stop {
			keep = min(max(keep, 1), len(ids))
			ids, fromDraft = ids[:keep], fromDraft[:keep]
			g.done, g.res.StopReason = true, "stop"
		}
	}
	st.IDs, st.FromDraft, st.Tokens = ids, fromDraft, len(ids)
	g.res.Tokens = append(g.res.Tokens, ids...)
	g.res.FromDraft = append(g.res.FromDraft, fromDraft...)
	g.seq = append(g.seq, ids...)
	g.next = ids[len(ids)-1]
	if g.o.Emit != nil {
		g.o.Emit(ids, fromDraft)
	}
}

// forward runs b on the target. At temperature 0 it returns only each
// logits row's argmax (ids; on the target's device when it can, so a step
// copies back token ids), else the logits rows: sampled verification
// (rejection sampling against the drafter's q) reads the target's
// probabilities on the host, so it never goes through SampleTarget.
func (g *gen) forward(ctx context.Context, b model.Batch) (logits []float32, ids []int32, err error) {
	if g.o.Sampler.P.Greedy() {
		ids, err = GreedyIDs(ctx, g.t, b)
		return nil, ids, err
	}
	logits, err = g.t.Forward(ctx, b)
	return logits, nil, err
}

// next1 runs b (one logits row) and picks the next token: the argmax, or
// a sample from the sampler's distribution (on the target's device when it
// is a SampleTarget, with the uniform number drawn here, so the host's
// generator advances exactly as Sample advances it).
func (g *gen) next1(ctx context.Context, b model.Batch) (int32, error) {
	if st, ok := g.t.(SampleTarget); ok && !g.o.Sampler.P.Greedy() {
		u := g.u[:1]
		u[0] = g.o.Sampler.Uniform()
		ids, err := st.SampleIDs(ctx, b, g.o.Sampler.P, u)
		switch {
		case err != nil:
			return 0, err
		case len(ids) != 1:
			return 0, fmt.Errorf("generate: target sampled %d rows for one", len(ids))
		}
		return ids[0], nil
	}
	logits, ids, err := g.forward(ctx, b)
	switch {
	case err != nil:
		return 0, err
	case ids != nil:
		return ids[0], nil
	}
	return g.o.Sampler.Sample(logits, g.v.p), nil
}

// plainStep feeds the last token and samples one.
func (g *gen) plainStep(ctx context.Context) (StepInfo, error) {
	ts := time.Now()
	base := g.t.Len()
	tok, err := g.next1(ctx, model.Batch{Tokens: []int32{g.next}, Logits: model.LogitsLast})
	if err != nil {
		return StepInfo{}, err
	}
	g.observe(base, []int32{g.next}, nil, 1)
	return StepInfo{Step: stepstats.Step{Verify: time.Since(ts)}, IDs: []int32{tok}, FromDraft: []bool{false}}, nil
}

// specStep drafts, verifies in one target pass, and keeps the accepted
// path. The proposal is shrunk to the room left in the context and to the
// tokens still wanted.
func (g *gen) specStep(ctx context.Context) (StepInfo, error) {
	base := g.t.Len() // == len(g.seq)-1: g.next is not cached
	room := g.t.MaxLen() - base - 1
	want := g.o.MaxTokens - len(g.res.Tokens) - 1 // the step adds one token of its own
	req := Request{K: min(g.o.K, want), Branch: g.o.Branch, Sampler: g.o.DraftSampler}
	if req.MaxNodes() > room {
		req.K = room / max(req.Branch, 1)
	}
	if req.K < 1 {
		return g.plainStep(ctx)
	}
	td := time.Now()
	pend, cv, err := g.proposeOnDevice(ctx, req)
	if err != nil {
		return StepInfo{}, err
	}
	var prop Proposal
	if pend == nil {
		if prop, err = g.o.Drafter.Propose(ctx, g.seq, req); err != nil {
			return StepInfo{}, fmt.Errorf("drafter %s: %w", g.o.Drafter.Name(), err)
		}
	}
	draftTime := time.Since(td)
	if pend == nil && len(prop.Tokens) == 0 {
		st, err := g.plainStep(ctx)
		st.Draft = draftTime
		return st, err
	}
	return g.verify(ctx, req, pend, cv, prop, draftTime)
}

// verify runs the target over a proposal (a chain left on the device:
// pend) in one pass and keeps the accepted path.
func (g *gen) verify(ctx context.Context, req Request, pend PendingChain, cv ChainVerifier, prop Proposal, draftTime time.Duration) (StepInfo, error) {
	base := g.t.Len()
	tv := time.Now()
	var logits []float32
	var ids []int32
	var err error
	if pend != nil {
		// The chain's tokens are read on the device by the verify, and come
		// back with its ids: one synchronize for the step. The step's Draft
		// time is then the chain's enqueue; its device time lands in Verify.
		var drafts []int32
		if ids, drafts, err = cv.VerifyChain(ctx, g.next, pend); err != nil {
			return StepInfo{}, err
		}
		if len(ids) != len(drafts)+1 {
			return StepInfo{}, fmt.Errorf("generate: verify of a device chain returned %d ids for %d drafts", len(ids), len(drafts))
		}
		prop.Tokens = drafts
	}
	children, depth, err := checkProposal(g.o.Drafter.Name(), prop, req, g.t.Vocab())
	if err != nil {
		return StepInfo{}, err
	}
	n := len(prop.Tokens)
	if pend == nil {
		b := model.Batch{Tokens: append([]int32{g.next}, prop.Tokens...), Logits: model.LogitsAll}
		if prop.Parent != nil {
			b.Parent = make([]int32, n+1)
			b.Pos = make([]int32, n+1)
			b.Parent[0], b.Pos[0] = -1, int32(base)
			for i, p := range prop.Parent {
				b.Parent[i+1] = p + 1 // the context's token is batch row 0
				b.Pos[i+1] = int32(base) + depth[i]
			}
		}
		if logits, ids, err = g.forward(ctx, b); err != nil {
			return StepInfo{}, err
		}
	}
	var path []int
	var tok int32
	if prop.Parent == nil {
		var acc int
		if ids != nil {
			acc, tok = chainGreedy(ids, prop)
		} else {
			acc, tok = g.v.chain(logits, prop)
		}
		path = chainPath(acc)
		err = g.t.Rewind(base + 1 + acc)
	} else {
		if ids != nil {
			path, tok = treeGreedy(ids, prop, children)
		} else {
			path, tok = g.v.tree(logits, prop, children)
		}
		err = g.t.KeepPath(base+1, path)
	}
	if err != nil {
		return StepInfo{}, fmt.Errorf("generate: keep the accepted path: %w", err)
	}
	g.o.Drafter.Accept(path)
	st := StepInfo{Step: stepstats.Step{Drafted: n, Accepted: len(path), Draft: draftTime}}
	for _, d := range depth {
		st.Depth = max(st.Depth, int(d))
	}
	g.keep(&st, base, prop.Tokens, path, tok, n+1)
	st.Verify = time.Since(tv)
	return st, nil
}

// chainPath is a chain's first n nodes, the path it keeps.
func chainPath(n int) []int {
	path := make([]int, n)
	for i := range path {
		path[i] = i
	}
	return path
}

// keep sets st's tokens, the kept proposal nodes (path, into drafts) and
// then the target's own token tok, and hands a feature drafter the kept
// rows of the verify's batchLen rows (row 0 the token fed at base, node
// i's row i+1).
func (g *gen) keep(st *StepInfo, base int, drafts []int32, path []int, tok int32, batchLen int) {
	st.IDs = make([]int32, 0, len(path)+1)
	st.FromDraft = make([]bool, 0, len(path)+1)
	for _, i := range path {
		st.IDs = append(st.IDs, drafts[i])
		st.FromDraft = append(st.FromDraft, true)
	}
	st.IDs = append(st.IDs, tok)
	st.FromDraft = append(st.FromDraft, false)
	if g.fd != nil {
		g.rows = append(g.rows[:0], 0)
		for _, i := range path {
			g.rows = append(g.rows, i+1)
		}
		g.observe(base, append([]int32{g.next}, st.IDs[:len(path)]...), g.rows, batchLen)
	}
}

// proposeOnDevice enqueues a greedy chain on the target's device when the
// drafter and the target can pass it there (nil: draft on the host).
func (g *gen) proposeOnDevice(ctx context.Context, req Request) (PendingChain, ChainVerifier, error) {
	cv, ok := g.t.(ChainVerifier)
	if !ok || req.Branch != 0 || !g.o.Sampler.P.Greedy() {
		return nil, nil, nil
	}
	dd, ok := g.o.Drafter.(DeviceChainDrafter)
	if !ok {
		return nil, nil, nil
	}
	p, err := dd.ProposeOnDevice(ctx, g.seq, req)
	if err != nil {
		return nil, nil, fmt.Errorf("drafter %s: %w", g.o.Drafter.Name(), err)
	}
	switch {
	case p == nil:
		return nil, nil, nil
	case p.Len() < 1 || p.Len() > req.K:
		return nil, nil, fmt.Errorf("drafter %s: enqueued a chain of %d tokens for k=%d", g.o.Drafter.Name(), p.Len(), req.K)
	}
	return p, cv, nil
}

// observe hands a feature drafter the captured features of the last target
// forward (batchLen rows): the rows listed (nil: all), for the tokens now
// cached at pos, pos+1, ...
func (g *gen) observe(pos int, tokens []int32, rows []int, batchLen int) {
	if g.fd == nil {
		return
	}
	feats := g.ft.Captured()
	if rows != nil {
		out := make([][]float32, len(feats))
		for l, f := range feats {
			dim := len(f) / batchLen
			o := make([]float32, 0, len(rows)*dim)
			for _, r := range rows {
				o = append(o, f[r*dim:(r+1)*dim]...)
			}
			out[l] = o
		}
		feats = out
	}
	g.fd.Observe(pos, tokens, feats)
}
