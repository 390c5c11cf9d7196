//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/model"
)

// The prefill check (-checks prefill): the prefill path (prefill.go,
// kernels/gemm.cu) against the 16-token path on the same loaded target.
//
// Tolerance: in split mode (the oracle) x enters the products as bf16 hi
// + lo, about 16 bits of mantissa as in the decode kernels, the weights are
// exact and every sum accumulates in float32, so the two paths differ only
// by float32 rounding in a different order (and a few ulps of x): about
// 1e-6 of a logit's scale per layer. A prefill logits row may differ from
// the 16-token path's by at most prefillTol of the row's largest |logit|
// (max |a-b| / max |b|), and greedy tokens must be identical. The bf16
// mode (x rounded to bf16, 2^-9 relative) is reported, not judged.
const prefillTol = 1e-3

// pfVariant is one way of running a prompt: the prefill mode, its chunk
// size, and how many prompt tokens go first through the 16-token path
// (so that the prefill starts after cached slots).
type pfVariant struct {
	name  string
	mode  string
	chunk int
	head  int
}

func checkPrefill(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	var errs []error
	// The experimental bf16fa mode (tensor-core attention, flash.cu) runs
	// last, so that a fault in it cannot cost the other results.
	for _, fa := range []bool{false, true} {
		if fa {
			fmt.Fprintf(stdout, "\n# experimental: RIGSCOPE_CUDA_PREFILL=bf16fa (bf16 products and tensor-core attention, pf_fa)\n")
		}
		if err := checkPrefillKernels(d, stdout, fa); err != nil {
			errs = append(errs, err)
		}
		if err := checkPrefillModel(ctx, d, models, stdout, fa); err != nil {
			errs = append(errs, err)
		}
		if err := checkPrefill8B(ctx, d, stdout, fa); err != nil {
			errs = append(errs, err)
		}
		if !fa { // the cuBLAS path against the split path (check_prefill_cublas_test.go)
			if err := checkPrefillCublas(ctx, d, models, stdout); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// pfRun rewinds t, runs prompt as v says, then greedy decoding (16-token
// path steps of one token) to n tokens. It returns the prompt's last
// logits row, the first decode step's logits row (it reads the cache the
// prompt wrote) and the greedy tokens.
func pfRun(ctx context.Context, t *Target, v pfVariant, prompt []int32, n int) (pl, dl []float32, toks []int32, err error) {
	t.pf.mode, t.pf.chunk = v.mode, v.chunk
	if err := t.Rewind(0); err != nil {
		return nil, nil, nil, err
	}
	rest := prompt
	if v.head > 0 {
		if _, err := t.Forward(ctx, model.Batch{Tokens: prompt[:v.head], Logits: model.LogitsNone}); err != nil {
			return nil, nil, nil, err
		}
		rest = prompt[v.head:]
	}
	l, err := t.Forward(ctx, model.Batch{Tokens: rest, Logits: model.LogitsLast})
	if err != nil {
		return nil, nil, nil, err
	}
	pl = slices.Clone(l)
	toks = []int32{argmax(pl)}
	if l, err = t.Forward(ctx, model.Batch{Tokens: toks, Logits: model.LogitsLast}); err != nil {
		return nil, nil, nil, err
	}
	dl = slices.Clone(l)
	toks = append(toks, argmax(dl))
	for len(toks) < n {
		ids, err := t.ForwardIDs(ctx, model.Batch{Tokens: toks[len(toks)-1:], Logits: model.LogitsLast})
		if err != nil {
			return nil, nil, nil, err
		}
		toks = append(toks, ids[0])
	}
	return pl, dl, toks[:n], nil
}

// relMax is max |a-b| / max |b| (as checkModel compares logits rows).
func relMax(a, b []float32) float64 {
	var num, den float64
	for i := range b {
		num = math.Max(num, math.Abs(float64(a[i]-b[i])))
		den = math.Max(den, math.Abs(float64(b[i])))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// checkPrefillModel runs the 12 public prompts of gocoder-14m-hf (54-471
// tokens) through the 16-token path and each prefill variant and compares
// greedy tokens (with the reference's too) and logits.
func checkPrefillModel(ctx context.Context, d *Device, models string, stdout io.Writer, fa bool) error {
	w, ref, closeSrc, err := gocoderWeights(models, "prefill", stdout)
	if err != nil || w == nil {
		return err
	}
	defer closeSrc()
	t, err := Load(d, w, 1024)
	if err != nil {
		return fmt.Errorf("cuda-check: prefill: %w", err)
	}
	defer t.Close()
	variants := []pfVariant{
		{"split 512", prefillSplit, 512, 0},
		{"split 100", prefillSplit, 100, 0},       // several chunks, partial tiles
		{"split 64 after 7", prefillSplit, 64, 7}, // starts after 7 cached slots
		{"bf16 512", prefillBF16, 512, 0},
		{"bf16 100", prefillBF16, 100, 0},
	}
	if fa {
		variants = []pfVariant{{"bf16fa 512", prefillBF16FA, 512, 0}, {"bf16fa 100", prefillBF16FA, 100, 0}, {"bf16fa 64 after 7", prefillBF16FA, 64, 7}}
	}
	type base struct {
		pl, dl []float32
		toks   []int32
	}
	bases := make([]base, len(ref.Prompts))
	off := pfVariant{"16-token", prefillOff, 0, 0}
	matchRef := 0
	t0 := time.Now()
	for pi, p := range ref.Prompts {
		pl, dl, toks, err := pfRun(ctx, t, off, p.PromptIDs, len(p.TargetGreedy))
		if err != nil {
			return fmt.Errorf("cuda-check: prefill: 16-token path, prompt %d: %w", pi, err)
		}
		bases[pi] = base{pl, dl, toks}
		if slices.Equal(toks, p.TargetGreedy) {
			matchRef++
		}
	}
	fmt.Fprintf(stdout, "\nprefill on gocoder-14m-hf, %d public prompts (%d greedy tokens each); logits rel = max|a-b|/max|b| against the 16-token path (tolerance %.0e in split mode)\n",
		len(ref.Prompts), len(ref.Prompts[0].TargetGreedy), prefillTol)
	fmt.Fprintf(stdout, "%-18s %10s %12s %16s %16s %10s\n", "variant", "greedy=ref", "greedy=16tok", "prompt logits rel", "1st decode rel", "time")
	fmt.Fprintf(stdout, "%-18s %7d/%-2d %12s %16s %16s %10v\n", off.name, matchRef, len(ref.Prompts), "-", "-", "-", time.Since(t0).Round(time.Millisecond))
	var errs []error
	for _, v := range variants {
		matchRef, match16 := 0, 0
		var relP, relD float64
		t0 := time.Now()
		for pi, p := range ref.Prompts {
			pl, dl, toks, err := pfRun(ctx, t, v, p.PromptIDs, len(p.TargetGreedy))
			if err != nil {
				return fmt.Errorf("cuda-check: prefill %s, prompt %d: %w", v.name, pi, err)
			}
			b := bases[pi]
			relP, relD = math.Max(relP, relMax(pl, b.pl)), math.Max(relD, relMax(dl, b.dl))
			if slices.Equal(toks, p.TargetGreedy) {
				matchRef++
			}
			if slices.Equal(toks, b.toks) {
				match16++
			} else {
				fmt.Fprintf(stdout, "  %s prompt %d (%d tokens): greedy %v, 16-token path %v\n", v.name, pi, len(p.PromptIDs), toks, b.toks)
			}
		}
		fmt.Fprintf(stdout, "%-18s %7d/%-2d %9d/%-2d %16.2e %16.2e %10v\n", v.name, matchRef, len(ref.Prompts), match16, len(ref.Prompts),
			relP, relD, time.Since(t0).Round(time.Millisecond))
		if v.mode == prefillSplit && (match16 != len(ref.Prompts) || relP > prefillTol || relD > prefillTol || math.IsNaN(relP+relD)) {
			errs = append(errs, fmt.Errorf("cuda-check: prefill %s: greedy %d/%d like the 16-token path, logits rel %.2e / %.2e (tolerance %.0e)",
				v.name, match16, len(ref.Prompts), relP, relD, prefillTol))
		}
	}
	if fa {
		return errors.Join(errs...)
	}
	if err := prefillFeatures(ctx, t, ref.Prompts[3].PromptIDs, stdout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// prefillFeatures compares the EAGLE-3 features (SetCapture) of prompt on
// the prefill path (chunks of 100) with the 16-token path's.
func prefillFeatures(ctx context.Context, t *Target, prompt []int32, stdout io.Writer) error {
	layers := []int{0, 2, -1, t.cfg.Layers - 1}
	t.SetCapture(layers)
	defer t.SetCapture(nil)
	var got [2][][]float32
	for i, v := range []pfVariant{{"16-token", prefillOff, 0, 0}, {"split 100", prefillSplit, 100, 0}} {
		t.pf.mode, t.pf.chunk = v.mode, v.chunk
		if err := t.Rewind(0); err != nil {
			return err
		}
		if _, err := t.Forward(ctx, model.Batch{Tokens: prompt, Logits: model.LogitsLast}); err != nil {
			return fmt.Errorf("cuda-check: prefill features %s: %w", v.name, err)
		}
		for _, f := range t.Captured() {
			got[i] = append(got[i], slices.Clone(f))
		}
	}
	rel := 0.0
	for li, l := range layers {
		want := len(prompt) * t.cfg.Dim
		if l < 0 {
			want = 0
		}
		if len(got[0][li]) != want || len(got[1][li]) != want {
			return fmt.Errorf("cuda-check: prefill features layer %d: %d values on the 16-token path, %d on the prefill path, want %d", l, len(got[0][li]), len(got[1][li]), want)
		}
		if want > 0 {
			rel = math.Max(rel, relMax(got[1][li], got[0][li]))
		}
	}
	fmt.Fprintf(stdout, "EAGLE-3 features (layers %v) of prompt of %d tokens, split 100 against the 16-token path: max rel %.2e\n", layers, len(prompt), rel)
	if rel > prefillTol || math.IsNaN(rel) {
		return fmt.Errorf("cuda-check: prefill features: rel %.2e (tolerance %.0e)", rel, prefillTol)
	}
	return nil
}

// checkPrefill8B times prompts of 128, 512 and 2048 tokens on the llama-8b
// shape (synthetic bf16 weights) through the 16-token path and both
// prefill modes, compares their last logits rows (reported; above 0.1 or
// NaN fails), and breaks prefills of 512 and 2048 tokens down by kernel
// kind.
func checkPrefill8B(ctx context.Context, d *Device, stdout io.Writer, fa bool) error {
	cfg := llama8bConfig
	t, err := LoadSynthetic(d, cfg, 4096, 1)
	if err != nil {
		return fmt.Errorf("cuda-check: prefill 8B: %w", err)
	}
	defer t.Close()
	prompt := make([]int32, 2048)
	for i := range prompt {
		prompt[i] = int32(1000 + 7*i%5000)
	}
	type variant struct {
		name  string
		mode  string
		warps int
	}
	vs := []variant{{"16-token", prefillOff, 0}, {"split", prefillSplit, 8}, {"split w4", prefillSplit, 4}, {"bf16", prefillBF16, 8}, {"bf16 w4", prefillBF16, 4}}
	if fa {
		vs = []variant{{"16-token", prefillOff, 0}, {"bf16", prefillBF16, 8}, {"bf16fa", prefillBF16FA, 8}}
	}
	fmt.Fprintf(stdout, "\nprefill on the llama-8b shape (synthetic bf16) on %s: tok/s of one prompt from an empty cache (best of 3 after a warm-up);\n", d.Name)
	fmt.Fprintf(stdout, "rel = max|a-b|/max|b| of the last logits row against the 16-token path, argmax = its; w4: products of 4 warps (64x64 warp tiles) at 128-token tiles\n")
	fmt.Fprintf(stdout, "%-7s", "tokens")
	for _, v := range vs {
		fmt.Fprintf(stdout, " %10s", v.name)
	}
	fmt.Fprintf(stdout, "   %s\n", "speedup, rel and argmax= per variant")
	var errs []error
	for _, n := range []int{128, 512, 2048} {
		tps := make([]float64, len(vs))
		rows := make([][]float32, len(vs))
		for vi, v := range vs {
			t.pf.mode, t.pf.chunk, t.pf.warps = v.mode, PrefillChunk, v.warps
			best, l, err := timePrefill(ctx, t, prompt[:n])
			if err != nil {
				return fmt.Errorf("cuda-check: prefill 8B %s %d tokens: %w", v.name, n, err)
			}
			rows[vi], tps[vi] = l, float64(n)/best
		}
		fmt.Fprintf(stdout, "%-7d", n)
		for _, x := range tps {
			fmt.Fprintf(stdout, " %10.0f", x)
		}
		fmt.Fprintf(stdout, "  ")
		for vi := 1; vi < len(vs); vi++ {
			rel := relMax(rows[vi], rows[0])
			fmt.Fprintf(stdout, " | %s %.2fx %.1e %v", vs[vi].name, tps[vi]/tps[0], rel, argmax(rows[vi]) == argmax(rows[0]))
			// Reported: 32 random layers may amplify rounding differences
			// (the gocoder prompts and the kernel checks are the gates); a
			// gross difference or NaN is an error.
			if rel > 0.1 || math.IsNaN(rel) {
				errs = append(errs, fmt.Errorf("cuda-check: prefill 8B %s %d tokens: logits rel %.2e", vs[vi].name, n, rel))
			}
		}
		fmt.Fprintln(stdout)
	}
	for _, v := range vs[1:] {
		for _, n := range []int{512, 2048} {
			if n == 2048 && v.warps == 4 || fa && v.mode != prefillBF16FA {
				continue
			}
			if err := prefillProfile(ctx, t, v.mode, v.warps, prompt[:n], stdout); err != nil {
				errs = append(errs, err)
			}
		}
	}
	t.pf.warps = 0
	return errors.Join(errs...)
}

// prefillProfile runs prompt once with every prefill launch timed and
// prints the time and TFLOP/s per kernel kind.
func prefillProfile(ctx context.Context, t *Target, mode string, warps int, prompt []int32, stdout io.Writer) error {
	t.pf.mode, t.pf.chunk, t.pf.warps = mode, PrefillChunk, warps
	if err := t.Rewind(0); err != nil {
		return err
	}
	p := &profiler{}
	t.pf.prof = p
	_, err := t.Forward(ctx, model.Batch{Tokens: prompt, Logits: model.LogitsLast})
	t.pf.prof = nil
	if err != nil {
		return fmt.Errorf("cuda-check: prefill profile %s: %w", mode, err)
	}
	kt, err := p.kernelTimes()
	if err != nil {
		return err
	}
	var total float64
	for _, k := range kt {
		total += k.Micros
	}
	fmt.Fprintf(stdout, "prefill %s (products of %d warps at 128-token tiles), %d tokens (chunks of %d), kernels timed one by one: %.0f us = %.0f tok/s\n",
		mode, warps, len(prompt), PrefillChunk, total, float64(len(prompt))/total*1e6)
	fmt.Fprintf(stdout, "  %-10s %8s %10s %8s %10s\n", "kind", "launches", "us", "share", "TFLOP/s")
	for _, k := range kt {
		tf := "-"
		if k.Bytes > 0 {
			tf = fmt.Sprintf("%.1f", float64(k.Bytes)/(k.Micros*1e6))
		}
		fmt.Fprintf(stdout, "  %-10s %8d %10.0f %7.1f%% %10s\n", k.Kind, k.Launches, k.Micros, 100*k.Micros/total, tf)
	}
	return nil
}

// gocoderWeights loads gocoder-14m-hf's unsharded weights and the public
// reference for the check named check; w is nil (a line says why) when the
// folder is not in models. closeSrc closes the file the weights are read
// from, after the caller is done with them.
func gocoderWeights(models, check string, stdout io.Writer) (w *model.Weights, ref *refPrompts, closeSrc func() error, err error) {
	path := filepath.Join(models, "gocoder-14m-hf")
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(stdout, "\n%s: gocoder-14m-hf skipped: %v\n", check, err)
		return nil, nil, nil, nil
	}
	if ref, err = readRef(models); err != nil {
		return nil, nil, nil, fmt.Errorf("cuda-check: %s: %w", check, err)
	}
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cuda-check: %s: %w", check, err)
	}
	if w, err = model.LoadWeights(src, model.Shard{Rank: 0, Size: 1}); err != nil {
		src.Close()
		return nil, nil, nil, fmt.Errorf("cuda-check: %s: %w", check, err)
	}
	return w, ref, src.Close, nil
}

// timePrefill prefills toks from an empty cache 4 times and returns the
// best time of the last 3 (seconds; the first warms up) and the last
// run's logits (a copy).
func timePrefill(ctx context.Context, t *Target, toks []int32) (best float64, logits []float32, err error) {
	best = math.Inf(1)
	for rep := 0; rep < 4; rep++ {
		if err := t.Rewind(0); err != nil {
			return 0, nil, err
		}
		t0 := time.Now()
		l, err := t.Forward(ctx, model.Batch{Tokens: toks, Logits: model.LogitsLast})
		if err != nil {
			return 0, nil, err
		}
		if s := time.Since(t0).Seconds(); rep > 0 {
			best = math.Min(best, s)
		}
		logits = l
	}
	return best, slices.Clone(logits), nil
}
