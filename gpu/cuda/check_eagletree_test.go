//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor/cpu"
)

// treeScoreTol is how far (nats) a device tree node's cumulative
// log-probability may be from the CPU head's: the logits differ by the
// float32 noise of the kernels' summation order (about 1e-5 relative),
// and a score adds up to K of them. Where the trees differ, the first
// differing node is a near-tie when its two scores are within it (both
// orders are right to the noise; the rest of that tree is not compared);
// anything else fails.
const treeScoreTol = 1e-3

// sampleTieTol: a sampled chain's token may differ from the CPU head's only
// where the uniform number u lies this close to the CPU's running mass at
// the boundary between the two tokens (q differs by ~1e-5 between heads, so
// DrawU may land on either side); the nodes after it are conditioned on
// different tokens and are not compared.
const sampleTieTol = 1e-4

// twin drafts every proposal with the device head (dev) and the CPU head
// (ref) on the same sequence, both observing every feature, compares
// them, and hands the loop the device's. Sampled requests give each its
// own sampler from one seed (the same random stream).
type twin struct {
	dev, ref     *eagle3.Drafter
	refSampler   *sample.Sampler
	uSampler     *sample.Sampler // the same stream again: the u each sampled proposal drew
	u            []float64
	props, equal int
	nearTies     int
	maxScore     float64 // largest score difference over equal nodes
	maxQ         float64 // largest |q_dev - q_cpu| over sampled tokens
	fails        []string
	devT, refT   time.Duration
	devN, refN   int
}

func (w *twin) Name() string         { return "eagle3-twin" }
func (w *twin) FeatureLayers() []int { return w.dev.FeatureLayers() }
func (w *twin) Accept(path []int)    { w.dev.Accept(path); w.ref.Accept(path) }
func (w *twin) Reset()               { w.dev.Reset(); w.ref.Reset() }
func (w *twin) Observe(pos int, tokens []int32, feats [][]float32) {
	w.dev.Observe(pos, tokens, feats)
	w.ref.Observe(pos, tokens, feats)
}

func (w *twin) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	t0 := time.Now()
	got, err := w.dev.Propose(ctx, seq, req)
	w.devT += time.Since(t0)
	if err != nil {
		return got, err
	}
	rreq := req
	w.u = w.u[:0]
	if req.Sampler != nil && !req.Sampler.P.Greedy() {
		rreq.Sampler = w.refSampler
		for range req.K {
			w.u = append(w.u, w.uSampler.Uniform())
		}
	}
	t0 = time.Now()
	want, err := w.ref.Propose(ctx, seq, rreq)
	w.refT += time.Since(t0)
	if err != nil {
		return got, fmt.Errorf("CPU head: %w", err)
	}
	w.devN++
	w.refN++
	w.props++
	why := w.compare(got, want)
	switch why {
	case "":
		w.equal++
	case "near-tie":
		w.nearTies++
	default:
		if len(w.fails) < 5 {
			w.fails = append(w.fails, fmt.Sprintf("at %d tokens: %s", len(seq), why))
		}
	}
	return got, nil
}

// compare says how the device's proposal differs from the CPU's: "" equal,
// "near-tie" (trees: see treeScoreTol), else what differs.
func (w *twin) compare(got, want spec.Proposal) string {
	gs, ws := w.dev.TreeScores(), w.ref.TreeScores()
	n := max(len(got.Tokens), len(want.Tokens))
	for i := 0; i < n; i++ {
		if i >= len(got.Tokens) || i >= len(want.Tokens) {
			return fmt.Sprintf("%d nodes, CPU %d", len(got.Tokens), len(want.Tokens))
		}
		same := got.Tokens[i] == want.Tokens[i] && (want.Parent == nil) == (got.Parent == nil) && (want.Parent == nil || got.Parent[i] == want.Parent[i])
		var d float64
		if want.Parent != nil && i < len(gs) && i < len(ws) {
			d = math.Abs(gs[i] - ws[i])
		}
		if !same {
			if want.Parent != nil && d <= treeScoreTol {
				return "near-tie"
			}
			if want.Parent == nil && w.sampledTie(i, got.Tokens[i], want.Tokens[i], want.Probs) {
				return "near-tie"
			}
			return fmt.Sprintf("node %d: token %d parent %v score %v, CPU token %d parent %v score %v (tokens %v parents %v, CPU %v %v)",
				i, got.Tokens[i], at(got.Parent, i), at32(gs, i), want.Tokens[i], at(want.Parent, i), at32(ws, i), got.Tokens, got.Parent, want.Tokens, want.Parent)
		}
		if d > treeScoreTol {
			return fmt.Sprintf("node %d: score %g, CPU %g", i, gs[i], ws[i])
		}
		w.maxScore = max(w.maxScore, d)
	}
	if len(got.Probs) != len(want.Probs) {
		return fmt.Sprintf("%d distributions, CPU %d", len(got.Probs), len(want.Probs))
	}
	for i := range want.Probs {
		for j, v := range want.Probs[i] {
			w.maxQ = max(w.maxQ, math.Abs(float64(got.Probs[i][j]-v)))
		}
	}
	return ""
}

// sampledTie reports whether a sampled chain's node i may differ: u[i]
// within sampleTieTol of the CPU distribution's running mass through the
// smaller of the two tokens (the boundary DrawU compares u against).
func (w *twin) sampledTie(i int, a, b int32, probs [][]float32) bool {
	if i >= len(w.u) || i >= len(probs) {
		return false
	}
	var mass float64
	for j := 0; j <= int(min(a, b)) && j < len(probs[i]); j++ {
		mass += float64(probs[i][j])
	}
	return math.Abs(mass-w.u[i]) <= sampleTieTol
}

func at(p []int32, i int) any {
	if p == nil {
		return "-"
	}
	return p[i]
}

func at32(s []float64, i int) any {
	if i >= len(s) {
		return "-"
	}
	return s[i]
}

// checkEagleTree checks the EAGLE-3 head's trees and sampled chains on the
// device against the CPU head on the gocoder pair's 12 prompts, both
// drafting every step of a generation on the device target (twin): greedy
// trees node by node (tokens, parents, scores within treeScoreTol), the
// generation equal to plain greedy with the CPU tree's acceptance; a
// sampled chain (T=0.8) token by token with q, and the sampled generation
// with the device head equal to the one with the CPU head for the same
// seeds. Also the draft time of a step, device head against CPU head.
func checkEagleTree(ctx context.Context, d *Device, models, head string, stdout io.Writer) error {
	ref, err := readEagleRef(head)
	if err != nil {
		return err
	}
	const ctxLen = 1024
	pair, err := loadEaglePair(d, models, head, ctxLen)
	if err != nil {
		return err
	}
	defer pair.Close()
	t, hw := pair.t, pair.hw
	newDev := func() (*eagle3.Drafter, error) {
		dr := eagle3.New(hw, ctxLen, cpu.NewPool(0))
		r, err := LoadHead(d, hw, ctxLen+spec.MaxK*spec.MaxBranch)
		if err != nil {
			return nil, err
		}
		dr.SetDevice(r)
		return dr, nil
	}
	gen := func(prompt []int32, o spec.Options) (spec.Result, []int, error) {
		var acc []int
		o.Step = func(s spec.StepInfo) {
			if s.Drafted > 0 {
				acc = append(acc, s.Accepted)
			}
		}
		res, err := spec.Generate(ctx, t, prompt, o)
		return res, acc, err
	}
	var errs []error
	if len(ref.Prompts) == 0 {
		return fmt.Errorf("%s/reference-public.json: no prompts", head)
	}
	if err := checkTreeRunner(ctx, d, t, hw, ref.Prompts[0].PromptIDs, stdout); err != nil {
		errs = append(errs, err) // the generations below say more
	}
	fmt.Fprintf(stdout, "\neagle3 trees and sampled chains, device head vs CPU head (gocoder-14m-hf + %s, %d prompts, device target)\n", filepath.Base(head), len(ref.Prompts))
	fmt.Fprintf(stdout, "%-22s %10s %9s %9s %11s %9s %12s %12s %11s %11s\n", "run", "proposals", "equal", "near-tie", "max |dscore|", "=plain", "=CPU accepts", "mean accept", "draft dev us", "draft CPU us")
	for _, tc := range []struct{ k, tree int }{{5, 3}, {4, 2}, {7, 2}} {
		dev, err := newDev()
		if err != nil {
			return err
		}
		tw := &twin{dev: dev, ref: eagle3.New(hw, ctxLen, cpu.NewPool(0))}
		var plainEq, accEq, accSteps, accSum int
		for _, p := range ref.Prompts {
			maxTok := 64 + tc.k + 1
			plain, _, err := gen(p.PromptIDs, spec.Options{MaxTokens: maxTok, EOS: -1})
			if err != nil {
				return fmt.Errorf("prompt %d plain: %w", p.Index, err)
			}
			cpuD := eagle3.New(hw, ctxLen, cpu.NewPool(0))
			_, cpuAcc, err := gen(p.PromptIDs, spec.Options{MaxTokens: maxTok, EOS: -1, K: tc.k, Branch: tc.tree, Drafter: cpuD})
			if err != nil {
				return fmt.Errorf("prompt %d CPU tree: %w", p.Index, err)
			}
			res, acc, err := gen(p.PromptIDs, spec.Options{MaxTokens: maxTok, EOS: -1, K: tc.k, Branch: tc.tree, Drafter: tw})
			if err != nil {
				return fmt.Errorf("prompt %d device tree k=%d tree=%d: %w", p.Index, tc.k, tc.tree, err)
			}
			if slices.Equal(res.Tokens, plain.Tokens) {
				plainEq++
			} else {
				errs = append(errs, fmt.Errorf("prompt %d device tree k=%d tree=%d: tokens %v, plain greedy %v", p.Index, tc.k, tc.tree, res.Tokens, plain.Tokens))
			}
			if slices.Equal(acc, cpuAcc) {
				accEq++
			} else {
				fmt.Fprintf(stdout, "prompt %d tree k=%d x%d: accepted per step %v, CPU tree %v\n", p.Index, tc.k, tc.tree, acc, cpuAcc)
			}
			accSteps += len(acc)
			for _, a := range acc {
				accSum += a
			}
		}
		if fb := dev.Fallbacks(); len(fb) > 0 {
			errs = append(errs, fmt.Errorf("device tree k=%d tree=%d fell back to the CPU: %v", tc.k, tc.tree, fb))
		}
		for _, f := range tw.fails {
			errs = append(errs, fmt.Errorf("device tree k=%d tree=%d: %s", tc.k, tc.tree, f))
		}
		n := len(ref.Prompts)
		fmt.Fprintf(stdout, "%-22s %10d %9d %9d %11.2e %6d/%-2d %9d/%-2d %12.4f %11.1f %11.1f\n",
			fmt.Sprintf("tree k=%d x%d greedy", tc.k, tc.tree), tw.props, tw.equal, tw.nearTies, tw.maxScore, plainEq, n, accEq, n,
			1+float64(accSum)/float64(max(accSteps, 1)), us(tw.devT, tw.devN), us(tw.refT, tw.refN))
		dev.Close()
	}
	// Sampled chains: the device head's proposals against the CPU head's
	// with the same random stream, then whole generations with the device
	// head against the CPU head alone, same seeds.
	const k = 4
	params := sample.Params{Temperature: 0.8}
	dev, err := newDev()
	if err != nil {
		return err
	}
	defer dev.Close()
	tw := &twin{dev: dev, ref: eagle3.New(hw, ctxLen, cpu.NewPool(0))}
	genEq := 0
	for i, p := range ref.Prompts {
		seed := uint64(100 + i)
		maxTok := 64 + k + 1
		o := func(dr spec.Drafter) spec.Options {
			return spec.Options{MaxTokens: maxTok, EOS: -1, K: k, Drafter: dr, Sampler: sample.New(params, seed),
				DraftSampler: sample.New(params, seed^0x5bd1e995)}
		}
		tw.refSampler = sample.New(params, seed^0x5bd1e995)
		tw.uSampler = sample.New(params, seed^0x5bd1e995)
		got, _, err := gen(p.PromptIDs, o(tw))
		if err != nil {
			return fmt.Errorf("prompt %d sampled, device head: %w", p.Index, err)
		}
		want, _, err := gen(p.PromptIDs, o(eagle3.New(hw, ctxLen, cpu.NewPool(0))))
		if err != nil {
			return fmt.Errorf("prompt %d sampled, CPU head: %w", p.Index, err)
		}
		if slices.Equal(got.Tokens, want.Tokens) {
			genEq++
		} else {
			errs = append(errs, fmt.Errorf("prompt %d sampled T=0.8 seed %d: device head %v, CPU head %v", p.Index, seed, got.Tokens, want.Tokens))
		}
	}
	if fb := dev.Fallbacks(); len(fb) > 0 {
		errs = append(errs, fmt.Errorf("sampled chain fell back to the CPU: %v", fb))
	}
	for _, f := range tw.fails {
		errs = append(errs, fmt.Errorf("sampled chain: %s", f))
	}
	fmt.Fprintf(stdout, "sampled chain k=%d T=0.8: proposals %d, equal to the CPU head's %d, near-ties %d (max |q_dev - q_cpu| %.2e); generations with the device head = with the CPU head, same seeds: %d/%d; draft us per step: device head %.1f, CPU head %.1f\n",
		k, tw.props, tw.equal, tw.nearTies, tw.maxQ, genEq, len(ref.Prompts), us(tw.devT, tw.devN), us(tw.refT, tw.refN))
	return joinErrs(errs)
}

func us(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(max(n, 1)) }

func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) > 8 {
		errs = append(errs[:8], fmt.Errorf("and %d more", len(errs)-8))
	}
	msg := ""
	for _, e := range errs {
		msg += "\n  " + e.Error()
	}
	return fmt.Errorf("eagle3 trees/sampled:%s", msg)
}

// checkTreeRunner compares the device head's TreeRoot, TreeDepth and
// SampledChain with CPUChain's (the CPU runState behind the same
// interface) on the features the device target captures for prompt: the
// same tree (the CPU's top children, branch 3, 4 depths), each depth's
// draft logits (max |diff| over max |logit|), and a sampled chain's ids
// and q for fixed uniform numbers. It prints and returns the largest
// relative logit difference.
func checkTreeRunner(ctx context.Context, d *Device, t *Target, hw *eagle3.Head, prompt []int32, stdout io.Writer) error {
	const ctxLen, branch, depths = 1024, 3, 4
	t.SetCapture(hw.FeatureLayers())
	defer t.SetCapture(nil)
	if err := t.Rewind(0); err != nil {
		return err
	}
	if _, err := t.Forward(ctx, model.Batch{Tokens: prompt, Logits: model.LogitsLast}); err != nil {
		return err
	}
	caps := t.Captured()
	td, n := hw.Cfg.TargetDim, len(prompt)
	fw := len(caps) * td
	feats := make([]float32, n*fw) // (n, 3*td): row i = cat(layers' features of position i)
	for i := 0; i < n; i++ {
		for l, f := range caps {
			copy(feats[i*fw+l*td:i*fw+(l+1)*td], f[i*td:(i+1)*td])
		}
	}
	if err := t.Rewind(0); err != nil {
		return err
	}
	slots := ctxLen + spec.MaxK*spec.MaxBranch
	cc := eagle3.NewCPUChain(hw, slots, cpu.NewPool(0))
	gh, err := LoadHead(d, hw, slots)
	if err != nil {
		return err
	}
	defer gh.Close()
	dv := hw.Cfg.DraftVocab
	rel := func(a, b []float32) float64 {
		var num, den float64
		for i := range b {
			num = max(num, math.Abs(float64(a[i]-b[i])))
			den = max(den, math.Abs(float64(b[i])))
		}
		return num / max(den, 1e-30)
	}
	// Rows 0..n-2 extended (row t: features of t, token t+1), as a Propose
	// after the prompt extends them.
	rows := prompt[1:n]
	wantRoot, err := cc.TreeRoot(ctx, 0, rows, feats[:(n-1)*fw])
	if err != nil {
		return fmt.Errorf("CPU tree root: %w", err)
	}
	wantRoot = slices.Clone(wantRoot)
	gotRoot, err := gh.TreeRoot(ctx, 0, rows, feats[:(n-1)*fw])
	if err != nil {
		return fmt.Errorf("device tree root: %w", err)
	}
	worst := rel(gotRoot, wantRoot)
	fmt.Fprintf(stdout, "\neagle3 tree runner, device vs CPU on %d extended rows: root logits max rel diff %.2e", n-1, worst)
	base := n - 1
	var toks, pars, pos []int32
	var score []float64
	cands := spec.TopChildren(nil, wantRoot, -1, 0, branch)
	for depth := 1; depth <= depths; depth++ {
		f0 := len(toks)
		for _, c := range cands[:min(branch, len(cands))] {
			toks = append(toks, hw.DraftToTarget[c.Tok])
			pars = append(pars, c.Parent)
			pos = append(pos, int32(n-2+depth))
			score = append(score, c.Score)
		}
		want, err := cc.TreeDepth(ctx, base, toks, pars, pos, f0)
		if err != nil {
			return fmt.Errorf("CPU tree depth %d: %w", depth, err)
		}
		want = slices.Clone(want)
		got, err := gh.TreeDepth(ctx, base, toks, pars, pos, f0)
		if err != nil {
			return fmt.Errorf("device tree depth %d: %w", depth, err)
		}
		r := rel(got, want)
		worst = max(worst, r)
		fmt.Fprintf(stdout, "; depth %d (%d nodes) %.2e", depth, len(toks)-f0, r)
		cands = cands[:0]
		for i := 0; i < len(toks)-f0; i++ {
			cands = spec.TopChildren(cands, want[i*dv:(i+1)*dv], int32(f0+i), score[f0+i], branch)
		}
		slices.SortStableFunc(cands, func(a, b spec.Candidate) int {
			switch {
			case a.Score > b.Score:
				return -1
			case a.Score < b.Score:
				return 1
			}
			return 0
		})
	}
	fmt.Fprintln(stdout)
	// A tree step's draft time: the last 5 rows again (as a step extends
	// its accepted tokens), the root and the same depths, device vs CPU.
	timeTree := func(r eagle3.TreeRunner) (float64, error) {
		return usPerCall(3, 30, func() error {
			if _, err := r.TreeRoot(ctx, n-6, rows[n-6:], feats[(n-6)*fw:(n-1)*fw]); err != nil {
				return err
			}
			for f0 := 0; f0 < len(toks); f0 += branch {
				if _, err := r.TreeDepth(ctx, base, toks[:f0+branch], pars[:f0+branch], pos[:f0+branch], f0); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if n > 6 && len(toks) == branch*depths {
		gt, err := timeTree(gh)
		if err != nil {
			return fmt.Errorf("device tree timing: %w", err)
		}
		ct, err := timeTree(cc)
		if err != nil {
			return fmt.Errorf("CPU tree timing: %w", err)
		}
		fmt.Fprintf(stdout, "eagle3 tree step (5 rows extended, the root, %d depth forwards of %d nodes: a k=5 x3 tree), host time: device head %.1f us, CPU head %.1f us\n", depths, branch, gt, ct)
	}
	// A sampled chain of 4 after the same rows.
	p := sample.Params{Temperature: 0.8}
	u := []float64{0.1, 0.5, 0.9, 0.3}
	wantIDs, wantQ, err := cc.SampledChain(ctx, 0, rows, feats[:(n-1)*fw], p, u)
	if err != nil {
		return fmt.Errorf("CPU sampled chain: %w", err)
	}
	wantIDs, wantQ = slices.Clone(wantIDs), slices.Clone(wantQ)
	gotIDs, gotQ, err := gh.SampledChain(ctx, 0, rows, feats[:(n-1)*fw], p, u)
	if err != nil {
		return fmt.Errorf("device sampled chain: %w", err)
	}
	var dq float64
	for i := range wantQ {
		dq = max(dq, math.Abs(float64(gotQ[i]-wantQ[i])))
	}
	fmt.Fprintf(stdout, "eagle3 sampled chain runner (T=0.8, u %v): device draft ids %v, CPU %v; max |q diff| %.2e\n", u, gotIDs, wantIDs, dq)
	var errs []error
	if worst > 1e-3 {
		errs = append(errs, fmt.Errorf("tree runner: device logits differ from the CPU's by %.2e relative (limit 1e-3)", worst))
	}
	if !slices.Equal(gotIDs, wantIDs) {
		errs = append(errs, fmt.Errorf("sampled chain runner: device draft ids %v, CPU %v", gotIDs, wantIDs))
	}
	if dq > 1e-4 {
		errs = append(errs, fmt.Errorf("sampled chain runner: q differs by %.2e (limit 1e-4)", dq))
	}
	return joinErrs(errs)
}
