//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"rigscope/engine"
	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/stepstats"
	"rigscope/engine/tensor/cpu"
)

// eagleRef is gocoder-14m-eagle3/reference-public.json (the fields read).
type eagleRef struct {
	Prompts []struct {
		Index     int     `json:"index"`
		PromptIDs []int32 `json:"prompt_ids"`
		Accepts4  []int   `json:"eagle_k4_accepts"`
		Tokens4   []int32 `json:"eagle_k4_tokens"`
	} `json:"prompts"`
	Mean4 float64 `json:"mean_accept_len_k4"`
}

// checkEagle checks EAGLE-3 drafting on the CUDA target: the features the
// target captures against the CPU runner's, then greedy chain speculative
// decoding (k=4) through the engine on the head's 12 public prompts, on
// "cuda" and on "cpu": accepted drafts per step against the PyTorch
// reference, the tokens against plain greedy decoding.
func checkEagle(ctx context.Context, d *Device, models, head string, stdout io.Writer) error {
	ref, err := readEagleRef(head)
	if err != nil {
		return err
	}
	target := filepath.Join(models, "gocoder-14m-hf")
	layers, rel, err := checkFeatures(ctx, d, target, head, ref.Prompts[0].PromptIDs)
	if err != nil {
		return fmt.Errorf("captured features: %w", err)
	}
	fmt.Fprintf(stdout, "\neagle3 features (layers %v): CUDA vs CPU max rel diff %.2e (prefill of %d tokens in steps of %d, verify of 5, capture off/on)\n",
		layers, rel, len(ref.Prompts[0].PromptIDs), MaxTokens)
	const k = 4
	type row struct {
		dev                   string
		match, greedy, refTok int
		steps, accepted       int
		plainTokS, eagleTokS  float64
	}
	var rows []row
	parts := map[string]*stepParts{"cuda": {}, "cpu": {}}
	for _, dev := range strings.Split(*checkEagleDevs, ",") {
		if parts[dev] == nil {
			return fmt.Errorf("-eagledevs: unknown device %q (cuda, cpu)", dev)
		}
		e, err := engine.Open(ctx, target, engine.Options{Device: dev})
		if err != nil {
			return fmt.Errorf("%s: %w", dev, err)
		}
		if dev != "cpu" {
			// One untimed pass of both first: a device captures a CUDA graph
			// per step shape once per process (the chain's extension rows
			// 1..k+1, the verify, the plain step), which a single measured
			// pass would charge to its first prompts (speculative runs have
			// more shapes: 1.16x measured cold against 1.24x warm, s17).
			for _, p := range ref.Prompts {
				for _, dc := range []engine.DrafterConfig{{Kind: "none"}, {Kind: "eagle3", Path: head, K: k}} {
					if _, _, _, err := runCollect(ctx, e, engine.RunConfig{PromptIDs: p.PromptIDs, MaxTokens: 64 + k + 1, Drafter: dc}); err != nil {
						e.Close()
						return fmt.Errorf("%s: prompt %d warm-up: %w", dev, p.Index, err)
					}
				}
			}
		}
		r := row{dev: dev}
		for _, p := range ref.Prompts {
			// The reference drafts a full k in every step until 64 tokens are
			// out, so the budget leaves room for the last step's proposal (as
			// engine/spec/eagle3's golden test does).
			maxTok := 64 + k + 1
			plain, _, pst, err := runCollect(ctx, e, engine.RunConfig{PromptIDs: p.PromptIDs, MaxTokens: maxTok, Drafter: engine.DrafterConfig{Kind: "none"}})
			if err != nil {
				e.Close()
				return fmt.Errorf("%s: prompt %d plain: %w", dev, p.Index, err)
			}
			toks, steps, est, err := runCollect(ctx, e, engine.RunConfig{PromptIDs: p.PromptIDs, MaxTokens: maxTok,
				Drafter: engine.DrafterConfig{Kind: "eagle3", Path: head, K: k}})
			if err != nil {
				e.Close()
				return fmt.Errorf("%s: prompt %d eagle3: %w", dev, p.Index, err)
			}
			parts[dev].add(steps, est, pst)
			var accepts []int
			for _, s := range steps {
				if s.Drafted > 0 {
					accepts = append(accepts, s.Accepted)
				}
			}
			got := accepts[:min(len(accepts), len(p.Accepts4))]
			for _, a := range got {
				r.accepted += a
			}
			r.steps += len(got)
			if slices.Equal(got, p.Accepts4) {
				r.match++
			} else {
				fmt.Fprintf(stdout, "%s prompt %d: accepted per step %v, reference %v\n", dev, p.Index, got, p.Accepts4)
			}
			if slices.Equal(toks, plain) {
				r.greedy++
			} else {
				fmt.Fprintf(stdout, "%s prompt %d: eagle3 tokens %v, plain greedy %v\n", dev, p.Index, toks, plain)
			}
			if n := min(len(toks), len(p.Tokens4)); n > 0 && slices.Equal(toks[:n], p.Tokens4[:n]) {
				r.refTok++
			}
			r.plainTokS += pst.DecodeTokensPerS / float64(len(ref.Prompts))
			r.eagleTokS += est.DecodeTokensPerS / float64(len(ref.Prompts))
		}
		if err := e.Close(); err != nil {
			return fmt.Errorf("%s: %w", dev, err)
		}
		rows = append(rows, r)
	}
	n := len(ref.Prompts)
	fmt.Fprintf(stdout, "\neagle3 k=%d greedy chain, gocoder-14m-hf + %s, %d prompts\n", k, filepath.Base(head), n)
	fmt.Fprintf(stdout, "%-6s %12s %10s %12s %10s %8s %12s %12s\n", "device", "accepts=ref", "mean len", "ref mean", "=greedy", "=ref tok", "plain tok/s", "eagle tok/s")
	for _, r := range rows {
		mean := 1 + float64(r.accepted)/float64(max(r.steps, 1))
		fmt.Fprintf(stdout, "%-6s %9d/%-2d %10.4f %12.4f %7d/%-2d %5d/%-2d %12.1f %12.1f\n",
			r.dev, r.match, n, mean, ref.Mean4, r.greedy, n, r.refTok, n, r.plainTokS, r.eagleTokS)
	}
	parts["cuda"].print(stdout, "cuda") // nothing when the cuda device did not run
	return nil
}

// runCollect runs cfg and returns the generated tokens and the steps.
func runCollect(ctx context.Context, e *engine.Engine, cfg engine.RunConfig) (toks []int32, steps []stepstats.Step, st engine.Stats, err error) {
	st, err = e.Run(ctx, cfg, func(ev engine.Event) {
		switch ev.Kind {
		case engine.EventTokens:
			for _, t := range ev.Tokens {
				toks = append(toks, t.ID)
			}
		case engine.EventStep:
			steps = append(steps, ev.Step)
		}
	})
	return toks, steps, st, err
}

// checkFeatures runs the same batches on the CUDA target and the CPU runner
// with hidden-state capture on, and returns the largest relative difference
// of the captured features: a prefill longer than one GPU step, a verify of
// 5 tokens, a decode with capture off (Captured must be nil) and one with it
// back on (graphs of both capture sets).
func checkFeatures(ctx context.Context, d *Device, path, head string, prompt []int32) (layers []int, maxRel float64, err error) {
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return nil, 0, err
	}
	defer src.Close()
	h, err := eagle3.Load(head, src)
	if err != nil {
		return nil, 0, err
	}
	layers = h.FeatureLayers()
	h.Close()
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return nil, 0, err
	}
	const ctxLen = 1024
	gt, err := Load(d, w, ctxLen)
	if err != nil {
		return nil, 0, err
	}
	defer gt.Close()
	ct := spec.NewRunnerTarget(cpuOracle(w, ctxLen, gt.kv, cpu.NewPool(runtime.NumCPU())))
	steps := []struct {
		toks    []int32
		mode    model.LogitsMode
		capture bool
	}{
		{prompt, model.LogitsLast, true},
		{prompt[:5], model.LogitsAll, true},
		{prompt[5:6], model.LogitsLast, false},
		{prompt[6:7], model.LogitsLast, true},
		{prompt[7:9], model.LogitsAll, true},
	}
	for i, s := range steps {
		set := layers
		if !s.capture {
			set = nil
		}
		gt.SetCapture(set)
		ct.SetCapture(set)
		b := model.Batch{Tokens: s.toks, Logits: s.mode}
		if _, err := gt.Forward(ctx, b); err != nil {
			return nil, 0, fmt.Errorf("step %d: cuda: %w", i, err)
		}
		if _, err := ct.Forward(ctx, b); err != nil {
			return nil, 0, fmt.Errorf("step %d: cpu: %w", i, err)
		}
		gf, cf := gt.Captured(), ct.Captured()
		if !s.capture {
			if gf != nil {
				return nil, 0, fmt.Errorf("step %d: capture off, Captured() has %d layers", i, len(gf))
			}
			continue
		}
		if len(gf) != len(layers) || len(cf) != len(layers) {
			return nil, 0, fmt.Errorf("step %d: Captured() has %d layers on cuda, %d on cpu, want %d", i, len(gf), len(cf), len(layers))
		}
		for l := range layers {
			if want := len(s.toks) * w.Cfg.Dim; len(gf[l]) != want || len(cf[l]) != want {
				return nil, 0, fmt.Errorf("step %d layer %d: %d features on cuda, %d on cpu, want %d", i, layers[l], len(gf[l]), len(cf[l]), want)
			}
			var num, den float64
			for j := range cf[l] {
				num = math.Max(num, math.Abs(float64(gf[l][j]-cf[l][j])))
				den = math.Max(den, math.Abs(float64(cf[l][j])))
			}
			if den > 0 {
				maxRel = math.Max(maxRel, num/den)
			}
		}
	}
	return layers, maxRel, nil
}

// eaglePair is gocoder-14m on a device with its EAGLE-3 head's weights
// (LoadHead puts those on a device), as the eagle checks load them.
type eaglePair struct {
	src loader.Source
	t   *Target
	hw  *eagle3.Head
}

// loadEaglePair loads MODELS/gocoder-14m-hf on d with a cache of ctxLen
// positions and the head in dir.
func loadEaglePair(d *Device, models, dir string, ctxLen int) (*eaglePair, error) {
	src, err := loader.Open(filepath.Join(models, "gocoder-14m-hf"), loader.Options{})
	if err != nil {
		return nil, err
	}
	p := &eaglePair{src: src}
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err == nil {
		p.t, err = Load(d, w, ctxLen)
	}
	if err == nil {
		p.hw, err = eagle3.Load(dir, src)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close frees what loadEaglePair loaded.
func (p *eaglePair) Close() {
	if p.hw != nil {
		p.hw.Close()
	}
	if p.t != nil {
		p.t.Close()
	}
	p.src.Close()
}

// readEagleRef reads the head's reference-public.json (prompts, accepted
// drafts per step and tokens at k=4, the mean acceptance length).
func readEagleRef(head string) (*eagleRef, error) {
	var ref eagleRef
	if err := readJSON(filepath.Join(head, "reference-public.json"), &ref); err != nil {
		return nil, err
	}
	if len(ref.Prompts) == 0 {
		return nil, fmt.Errorf("%s/reference-public.json: no prompts", head)
	}
	return &ref, nil
}
