//go:build cuda

package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"time"

	"gorgonia.org/cu"

	"rigscope/engine"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/stepstats"
	"rigscope/engine/tensor"
)

// checkHeadTiming times the parts of an EAGLE-3 speculative step on the
// device, host time per call over many calls (graphs warm): the target's
// decode (1 token) and verify (k+1 tokens), the head's greedy chain (k+1
// extended rows, k tokens), and the head's kernels one by one (ungraphed,
// events around each), so the step's cost can be read against plain
// decoding.
func checkHeadTiming(ctx context.Context, d *Device, models, head string, stdout io.Writer) error {
	const k, reps, ctxLen = 4, 300, 1024
	ep, err := loadEaglePair(d, models, head, ctxLen)
	if err != nil {
		return err
	}
	defer ep.Close()
	t, hw := ep.t, ep.hw
	h, err := LoadHead(d, hw, ctxLen+spec.MaxK*spec.MaxBranch)
	if err != nil {
		return err
	}
	defer h.Close()
	prompt := make([]int32, 200)
	for i := range prompt {
		prompt[i] = int32(3 + i%100)
	}
	if _, err := t.ForwardIDs(ctx, model.Batch{Tokens: prompt, Logits: model.LogitsLast}); err != nil {
		return err
	}
	base := t.Len()
	timeIt := func(f func() error) (float64, error) { return usPerCall(10, reps, f) }
	step := func(T int) func() error {
		return func() error {
			if _, err := t.ForwardIDs(ctx, model.Batch{Tokens: prompt[:T], Logits: model.LogitsAll}); err != nil {
				return err
			}
			return t.Rewind(base)
		}
	}
	feats := make([]float32, (k+1)*h.fw)
	for i := range feats {
		feats[i] = float32(i%7) * 0.1
	}
	decode, err := timeIt(step(1))
	if err != nil {
		return err
	}
	verify, err := timeIt(step(k + 1))
	if err != nil {
		return err
	}
	chain, err := timeIt(func() error {
		_, err := h.GreedyChain(ctx, base, prompt[:k+1], feats, k)
		return err
	})
	if err != nil {
		return err
	}
	t.SetCapture(hw.FeatureLayers())
	verifyCap, err := timeIt(step(k + 1))
	if err != nil {
		return err
	}
	// The loop's order: verify (features captured), then the chain on them.
	pair, err := timeIt(func() error {
		if err := step(k + 1)(); err != nil {
			return err
		}
		_, err := h.GreedyChain(ctx, base, prompt[:k+1], feats, k)
		return err
	})
	if err != nil {
		t.SetCapture(nil)
		return err
	}
	// The product's order with the chain left on the device: chain, then
	// the verify reading its tokens there (one synchronize).
	piped, err := timeIt(func() error {
		p, err := h.EnqueueChain(ctx, base, prompt[:k+1], feats, k)
		if err != nil || p == nil {
			return err
		}
		if _, _, err := t.VerifyChain(ctx, prompt[0], p); err != nil {
			return err
		}
		return t.Rewind(base)
	})
	t.SetCapture(nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\neagle3 step parts on %s (gocoder-14m-hf, us per call, host time, graphs warm)\n", d.Name)
	fmt.Fprintf(stdout, "target decode %.1f  verify of %d %.1f  head chain (%d rows, %d tokens) %.1f  spec step %.1f = %.2f decode steps\n",
		decode, k+1, verify, k+1, k, chain, verify+chain, (verify+chain)/decode)
	fmt.Fprintf(stdout, "target verify of %d with the head's features captured and copied back %.1f; verify then chain, alternately %.1f a pair; chain left on the device then verify (one synchronize) %.1f\n", k+1, verifyCap, pair, piped)
	unbind, err := d.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	// Device time per replay of each graph, back to back (the host's share
	// of the parts above is their host time less this).
	const flushBytes = 96 << 20
	flush, err := cu.MemAlloc(flushBytes)
	if err != nil {
		return err
	}
	defer cu.MemFree(flush)
	capVerify := func(int) error {
		t.SetCapture(hw.FeatureLayers())
		defer t.SetCapture(nil)
		return t.enqueueStep(k+1, model.LogitsAll)
	}
	chain5 := func(int) error { return h.enqueueGraph(k+1, k) }
	// flushed is op after a memset of flushBytes on s (L2 overwritten).
	flushed := func(s cu.Stream, op func(int) error) func(int) error {
		return func(i int) error {
			if err := cu.MemsetD32Async(flush, 0, flushBytes/4, s); err != nil {
				return err
			}
			if op == nil {
				return nil
			}
			return op(i)
		}
	}
	fmt.Fprintf(stdout, "graphs, device time per replay back to back (us):")
	for _, g := range []struct {
		name string
		s    cu.Stream
		op   func(int) error
	}{
		{"decode", t.stream, func(int) error { return t.enqueueStep(1, model.LogitsLast) }},
		{"verify of 5 (no capture)", t.stream, func(int) error { return t.enqueueStep(k+1, model.LogitsAll) }},
		{"verify of 5 (capture)", t.stream, capVerify},
		{"chain 5 rows", h.stream, chain5},
		{"chain 1 row", h.stream, func(int) error { return h.enqueueGraph(1, k) }},
		{"chain 1 row 1 token", h.stream, func(int) error { return h.enqueueGraph(1, 1) }},
		// With L2 overwritten before each (the memset timed alone too):
		// what the graphs cost when the other model's steps have evicted
		// their weights.
		{"memset", t.stream, flushed(t.stream, nil)},
		{"memset+verify of 5 (capture)", t.stream, flushed(t.stream, capVerify)},
		{"memset+chain 5 rows", h.stream, flushed(h.stream, chain5)},
	} {
		tg, rel, err := streamTimer(g.s)
		if err != nil {
			return err
		}
		us, err := tg(reps, g.op)
		rel()
		if err != nil {
			return fmt.Errorf("%s graph: %w", g.name, err)
		}
		fmt.Fprintf(stdout, " %s %.1f;", g.name, us)
	}
	fmt.Fprintln(stdout)
	p := &profiler{}
	h.prof = p
	err = h.enqueueChain(k+1, k)
	h.prof = nil
	if err == nil {
		err = h.stream.Synchronize()
	}
	if err != nil {
		return err
	}
	kt, err := p.kernelTimes()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "head chain kernels (ungraphed, events):")
	for _, x := range kt {
		fmt.Fprintf(stdout, " %s %dx %.1f us;", x.Kind, x.Launches, x.Micros)
	}
	fmt.Fprintln(stdout)
	return checkHeadOut(ctx, d, h, filepath.Base(head), 2000, stdout) // the fused draft token, off and on (check_headout_test.go)
}

// checkHead8B times the yardstick: one draft step of an EAGLE-3
// head shaped for Llama-3-8B (hidden 4096, one layer, draft vocabulary
// 32,000, random bf16 weights) against a decode step of the synthetic
// llama-8b target, both on the device, host time per call.
func checkHead8B(ctx context.Context, d *Device, stdout io.Writer) error {
	const reps, ctxLen = 50, 1024
	cfg := llama8bConfig
	t, err := LoadSynthetic(d, cfg, ctxLen, 1)
	if err != nil {
		return err
	}
	defer t.Close()
	dh, err := loadHead8B(d, ctxLen)
	if err != nil {
		return err
	}
	defer dh.Close()
	timeIt := func(f func() error) (float64, error) { return usPerCall(5, reps, f) }
	prompt := make([]int32, 512)
	for i := range prompt {
		prompt[i] = int32(1000 + i)
	}
	if _, err := t.ForwardIDs(ctx, model.Batch{Tokens: prompt, Logits: model.LogitsLast}); err != nil {
		return err
	}
	base := t.Len()
	decode, err := timeIt(func() error {
		if _, err := t.ForwardIDs(ctx, model.Batch{Tokens: prompt[:1], Logits: model.LogitsLast}); err != nil {
			return err
		}
		return t.Rewind(base)
	})
	if err != nil {
		return err
	}
	feats := make([]float32, 5*dh.fw)
	for i := range feats {
		feats[i] = float32(i%13-6) * 0.05
	}
	chain := func(rows, k int) func() error {
		return func() error {
			_, err := dh.GreedyChain(ctx, base, prompt[:rows], feats, k)
			return err
		}
	}
	one, err := timeIt(chain(1, 1))
	if err != nil {
		return err
	}
	four, err := timeIt(chain(5, 4))
	if err != nil {
		return err
	}
	// A draft step inside a chain (the head's autoregressive step: eagle_in,
	// the layer, lm_head, argmax; no fc, no copies, no synchronize): the
	// chain of 5 tokens after one row less the chain of 1, over 4.
	five, err := timeIt(chain(1, 5))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nEAGLE-3 head shaped for Llama-3-8B (hidden 4096, draft vocab 32000, bf16) on %s, us per call at %d cached\n", d.Name, base)
	fmt.Fprintf(stdout, "llama-8b decode %.1f  head: one draft step (1 row, 1 token) %.1f = %.1f%% of decode  chain (5 rows, 4 tokens) %.1f = %.1f%% per token\n",
		decode, one, 100*one/decode, four, 100*four/4/decode)
	fmt.Fprintf(stdout, "head: chain of 1 row and 5 tokens %.1f; a draft step inside a chain ((that - 1 row 1 token)/4) %.1f = %.1f%% of decode\n",
		five, (five-one)/4, 100*(five-one)/4/decode)
	// Each kernel's bandwidth, head (a chain of 1 row and 1 token) against
	// the target's decode kernels (ungraphed, events around each).
	tk, err := t.ProfileStep(1)
	if err != nil {
		return err
	}
	hk, err := headKernelTimes(d, dh)
	if err != nil {
		return err
	}
	for _, x := range []struct {
		who string
		kt  []KernelTime
	}{{"head (1 row, 1 token)", hk}, {"llama-8b decode", tk}} {
		fmt.Fprintf(stdout, "%s kernels (us, GB/s):", x.who)
		for _, k := range x.kt {
			fmt.Fprintf(stdout, " %s %dx %.1f %.0f;", k.Kind, k.Launches, k.Micros, k.GBps)
		}
		fmt.Fprintln(stdout)
	}
	return checkHeadOut(ctx, d, dh, "8B-shaped, random bf16", 300, stdout) // the fused draft token, off and on (check_headout_test.go)
}

// loadHead8B uploads the EAGLE-3 head shaped for Llama-3-8B (random bf16
// weights) to d with a cache for ctxLen positions and a tree.
func loadHead8B(d *Device, ctxLen int) (*Head, error) {
	hc := eagle3.Config{Dim: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 128256, DraftVocab: 32000,
		TargetDim: 4096, AuxLayers: []int{1, 15, 28}, NormEps: 1e-5, RopeTheta: 500000, MaxPos: 8192}
	rng := rand.New(rand.NewPCG(1, 2))
	mat := func(name string, rows, cols int) *tensor.Tensor {
		b := make([]byte, 2*rows*cols)
		for i := 0; i+8 <= len(b); i += 8 { // bf16 in about [-0.03, 0.03]
			v := rng.Uint64()
			for j := 0; j < 4; j++ {
				binary.LittleEndian.PutUint16(b[i+2*j:], tensor.F32ToBF16(float32(int16(v>>(16*j)))/1e6))
			}
		}
		return &tensor.Tensor{Name: name, DType: tensor.BF16, Shape: []int{rows, cols}, Data: b}
	}
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	qw, kvw := hc.Heads*hc.HeadDim, hc.KVHeads*hc.HeadDim
	h := &eagle3.Head{Cfg: hc, Embed: mat("embed", hc.Vocab, hc.Dim), FC: mat("fc", hc.Dim, 3*hc.TargetDim),
		InputNorm: ones(hc.Dim), HiddenNorm: ones(hc.Dim), PostNorm: ones(hc.Dim), OutNorm: ones(hc.Dim),
		Wq: mat("q", qw, 2*hc.Dim), Wk: mat("k", kvw, 2*hc.Dim), Wv: mat("v", kvw, 2*hc.Dim), Wo: mat("o", hc.Dim, qw),
		Gate: mat("gate", hc.FFN, hc.Dim), Up: mat("up", hc.FFN, hc.Dim), Down: mat("down", hc.Dim, hc.FFN),
		LMHead: mat("lm_head", hc.DraftVocab, hc.Dim), DraftToTarget: make([]int32, hc.DraftVocab)}
	for i := range h.DraftToTarget {
		h.DraftToTarget[i] = int32(i)
	}
	return LoadHead(d, h, ctxLen+spec.MaxK*spec.MaxBranch)
}

// usPerCall runs f warm times, then reps times, and returns the host time
// per call of the timed ones in microseconds.
func usPerCall(warm, reps int, f func() error) (float64, error) {
	for range warm {
		if err := f(); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	for range reps {
		if err := f(); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t0).Microseconds()) / float64(reps), nil
}

// stepParts is where the product's speculative steps spend host time
// (the loop's own split of each step: draft, verify, other), summed over
// a device's runs: the first speculative step of a run apart (it extends
// the head over the prompt unless the drafter did when it observed the
// prompt), and the decode time per step, so their sum can be read against
// the decode time the tok/s figure comes from.
type stepParts struct {
	runs, later       int
	first, rest       stepstats.Step // summed: first speculative steps, later ones
	decode            time.Duration  // summed decode time (tokens after the first / tok/s)
	steps, plainSteps int            // all steps of the speculative runs; plain steps among them
	eagle, plain      []float64      // tok/s per run
}

func (p *stepParts) add(steps []stepstats.Step, eagle, plain engine.Stats) {
	p.runs++
	seen := false
	for _, s := range steps {
		p.steps++
		switch {
		case s.Drafted == 0:
			p.plainSteps++
		case !seen:
			seen = true
			p.first.Draft += s.Draft
			p.first.Verify += s.Verify
			p.first.Other += s.Other
		default:
			p.later++
			p.rest.Draft += s.Draft
			p.rest.Verify += s.Verify
			p.rest.Other += s.Other
		}
	}
	if n := eagle.GeneratedTokens - 1; n > 0 && eagle.DecodeTokensPerS > 0 {
		p.decode += time.Duration(float64(n) / eagle.DecodeTokensPerS * float64(time.Second))
	}
	p.eagle = append(p.eagle, eagle.DecodeTokensPerS)
	p.plain = append(p.plain, plain.DecodeTokensPerS)
}

func (p *stepParts) print(w io.Writer, dev string) {
	if p.runs == 0 || p.later == 0 {
		return
	}
	us := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(max(n, 1)) }
	fmt.Fprintf(w, "eagle3 product steps on %s, host time in us (first speculative step of a run / later ones, mean):\n", dev)
	fmt.Fprintf(w, "  draft %.1f / %.1f  verify+accept+observe %.1f / %.1f  other %.1f / %.1f  sum %.1f / %.1f\n",
		us(p.first.Draft, p.runs), us(p.rest.Draft, p.later), us(p.first.Verify, p.runs), us(p.rest.Verify, p.later),
		us(p.first.Other, p.runs), us(p.rest.Other, p.later),
		us(p.first.Draft+p.first.Verify+p.first.Other, p.runs), us(p.rest.Draft+p.rest.Verify+p.rest.Other, p.later))
	fmt.Fprintf(w, "  decode time per step %.1f (%.1f steps a run, %d plain)\n", us(p.decode, p.steps), float64(p.steps)/float64(p.runs), p.plainSteps)
	fmt.Fprintf(w, "  tok/s per prompt, eagle:")
	for _, v := range p.eagle {
		fmt.Fprintf(w, " %.0f", v)
	}
	fmt.Fprintf(w, "\n  tok/s per prompt, plain:")
	for _, v := range p.plain {
		fmt.Fprintf(w, " %.0f", v)
	}
	fmt.Fprintln(w)
}

// headKernelTimes profiles one chain of 1 row and 1 token of dh, each
// kernel ungraphed with events around it.
func headKernelTimes(d *Device, dh *Head) ([]KernelTime, error) {
	unbind, err := d.Bind()
	if err != nil {
		return nil, err
	}
	p := &profiler{}
	dh.prof = p
	err = dh.enqueueChain(1, 1)
	dh.prof = nil
	if err == nil {
		err = dh.stream.Synchronize()
	}
	unbind()
	if err != nil {
		return nil, err
	}
	return p.kernelTimes()
}
