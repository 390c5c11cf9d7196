//go:build cuda

package cuda

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// The cuBLAS prefill check (-checks cublas, and part of -checks prefill):
// the cuBLAS path (prefill_cublas.go) against the split path, its oracle.
//
// Tolerance: the cuBLAS path rounds x (normalized) and attention's output
// to bf16 as the bf16 mode does (2^-9 relative; on gocoder the bf16 mode
// is 2.9e-3 from the 16-token path, session 10), so a prompt's logits row
// may differ from the split path's by at most cublasTol of the row's
// largest |logit|, and greedy tokens must be identical on all 12 prompts.
// The untiling kernel must be exact.
const cublasTol = 1e-2

func checkPrefillCublas(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	var errs []error
	if err := checkCublasModel(ctx, d, models, stdout); err != nil {
		errs = append(errs, err)
	}
	if err := checkCublas8B(ctx, d, stdout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cbScratch makes t's cuBLAS path untile before each product (on) or keep
// the row-major copy (off), dropping the state made the other way.
func cbScratch(t *Target, on bool) error {
	if t.pf.cb.forceScratch == on {
		return nil
	}
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	if err := t.stream.Synchronize(); err != nil {
		return err
	}
	t.cbDrop()
	t.pf.cb.forceScratch = on
	return nil
}

// checkUntile runs cb_untile on a random tiled matrix (rows, cols) and
// requires the row-major bytes back exactly.
func checkUntile(t *Target, rows, cols int, stdout io.Writer) error {
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	rng := rand.New(rand.NewPCG(12, uint64(rows*cols)))
	want := make([]byte, 2*rows*cols)
	for i := range rows * cols {
		b := tensor.F32ToBF16(float32(rng.NormFloat64()))
		want[2*i], want[2*i+1] = byte(b), byte(b>>8)
	}
	tiled := tileBF16(want, rows, cols)
	src, err := cu.MemAlloc(int64(len(tiled)))
	if err != nil {
		return err
	}
	defer cu.MemFree(src)
	dst, err := cu.MemAlloc(int64(len(want)))
	if err != nil {
		return err
	}
	defer cu.MemFree(dst)
	if err := cu.MemcpyHtoD(src, unsafe.Pointer(&tiled[0]), int64(len(tiled))); err != nil {
		return err
	}
	if err := cu.MemsetD8(dst, 0xff, int64(len(want))); err != nil {
		return err
	}
	if err := t.cbUntile(dst, dweight{dt: tensor.BF16, w: src, rows: rows, cols: cols, tiled: true}); err != nil {
		return err
	}
	if err := t.stream.Synchronize(); err != nil {
		return err
	}
	got := make([]byte, len(want))
	if err := cu.MemcpyDtoH(unsafe.Pointer(&got[0]), dst, int64(len(got))); err != nil {
		return err
	}
	ok := bytes.Equal(got, want)
	fmt.Fprintf(stdout, "cb_untile %dx%d: row-major bytes exact: %v\n", rows, cols, ok)
	if !ok {
		return fmt.Errorf("cuda-check: cublas: cb_untile %dx%d differs from the row-major matrix", rows, cols)
	}
	return nil
}

// checkCublasModel runs the 12 public prompts of gocoder-14m-hf through
// the split path and the cuBLAS variants and compares greedy tokens and
// logits (prompt's last row and the first decode step's).
func checkCublasModel(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	w, ref, closeSrc, err := gocoderWeights(models, "cublas", stdout)
	if err != nil || w == nil {
		return err
	}
	defer closeSrc()
	t, err := Load(d, w, 1024)
	if err != nil {
		return fmt.Errorf("cuda-check: cublas: %w", err)
	}
	defer t.Close()
	lib, err := cublasLoad()
	if err != nil {
		return fmt.Errorf("cuda-check: cublas: %w", err)
	}
	fmt.Fprintf(stdout, "\n# cuBLAS prefill: %s\n", lib)
	var errs []error
	for _, s := range [][2]int{{48, 80}, {4096, 64}, {16, 14336}} {
		if err := checkUntile(t, s[0], s[1], stdout); err != nil {
			errs = append(errs, err)
		}
	}
	type result struct {
		pl, dl []float32
		toks   []int32
	}
	split := make([]result, len(ref.Prompts))
	for pi, p := range ref.Prompts {
		pl, dl, toks, err := pfRun(ctx, t, pfVariant{"split 512", prefillSplit, 512, 0}, p.PromptIDs, len(p.TargetGreedy))
		if err != nil {
			return fmt.Errorf("cuda-check: cublas: split path, prompt %d: %w", pi, err)
		}
		split[pi] = result{pl, dl, toks}
	}
	fmt.Fprintf(stdout, "cuBLAS prefill on gocoder-14m-hf, %d public prompts; logits rel = max|a-b|/max|b| against the split path (tolerance %.0e)\n", len(ref.Prompts), cublasTol)
	fmt.Fprintf(stdout, "%-24s %10s %13s %16s %16s %10s  %s\n", "variant", "greedy=ref", "greedy=split", "prompt logits rel", "1st decode rel", "time", "path")
	for _, v := range []struct {
		pfVariant
		scratch bool
	}{
		{pfVariant{"cublas 512", prefillCublas, 512, 0}, false},
		{pfVariant{"cublas 100", prefillCublas, 100, 0}, false},
		{pfVariant{"cublas 64 after 7", prefillCublas, 64, 7}, false},
		{pfVariant{"cublas scratch 100", prefillCublas, 100, 0}, true},
		{pfVariant{"cublasfa 512", prefillCublasFA, 512, 0}, false},
	} {
		if err := cbScratch(t, v.scratch); err != nil {
			return err
		}
		matchRef, matchSplit := 0, 0
		var relP, relD float64
		t0 := time.Now()
		for pi, p := range ref.Prompts {
			pl, dl, toks, err := pfRun(ctx, t, v.pfVariant, p.PromptIDs, len(p.TargetGreedy))
			if err != nil {
				return fmt.Errorf("cuda-check: cublas %s, prompt %d: %w", v.name, pi, err)
			}
			b := split[pi]
			relP, relD = math.Max(relP, relMax(pl, b.pl)), math.Max(relD, relMax(dl, b.dl))
			if slices.Equal(toks, p.TargetGreedy) {
				matchRef++
			}
			if slices.Equal(toks, b.toks) {
				matchSplit++
			} else {
				fmt.Fprintf(stdout, "  %s prompt %d (%d tokens): greedy %v, split path %v\n", v.name, pi, len(p.PromptIDs), toks, b.toks)
			}
		}
		fmt.Fprintf(stdout, "%-24s %7d/%-2d %10d/%-2d %16.2e %16.2e %10v  %s\n", v.name, matchRef, len(ref.Prompts), matchSplit, len(ref.Prompts),
			relP, relD, time.Since(t0).Round(time.Millisecond), t.PrefillPath())
		if v.mode == prefillCublasFA { // experimental attention: reported
			continue
		}
		if matchSplit != len(ref.Prompts) || relP > cublasTol || relD > cublasTol || math.IsNaN(relP+relD) {
			errs = append(errs, fmt.Errorf("cuda-check: cublas %s: greedy %d/%d like the split path, logits rel %.2e / %.2e (tolerance %.0e)",
				v.name, matchSplit, len(ref.Prompts), relP, relD, cublasTol))
		}
	}
	return errors.Join(errs...)
}

// checkCublas8B times prompts of 512 and 2048 tokens on the llama-8b
// shape (synthetic bf16 weights) on the split, bf16 and cuBLAS paths,
// compares their last logits rows with the split path's (argmax must
// agree; rel above 0.1 or NaN fails) and breaks the cuBLAS prefill of 512
// tokens down by kind.
func checkCublas8B(ctx context.Context, d *Device, stdout io.Writer) error {
	cfg := llama8bConfig
	t, err := LoadSynthetic(d, cfg, 4096, 1)
	if err != nil {
		return fmt.Errorf("cuda-check: cublas 8B: %w", err)
	}
	defer t.Close()
	prompt := make([]int32, 2048)
	for i := range prompt {
		prompt[i] = int32(1000 + 7*i%5000)
	}
	type variant struct {
		name, mode string
		scratch    bool
	}
	vs := []variant{{"split", prefillSplit, false}, {"bf16", prefillBF16, false}, {"cublas", prefillCublas, false},
		{"cublas scratch", prefillCublas, true}, {"cublasfa", prefillCublasFA, false}}
	fmt.Fprintf(stdout, "\ncuBLAS prefill on the llama-8b shape (synthetic bf16) on %s: tok/s of one prompt from an empty cache (best of 3 after a warm-up);\n", d.Name)
	fmt.Fprintf(stdout, "rel = max|a-b|/max|b| of the last logits row against the split path, argmax= its\n%-7s", "tokens")
	for _, v := range vs {
		fmt.Fprintf(stdout, " %14s", v.name)
	}
	fmt.Fprintln(stdout, "   speedup over split, rel and argmax= per variant")
	var errs []error
	paths := map[string]string{}
	for _, n := range []int{512, 2048} {
		tps := make([]float64, len(vs))
		rows := make([][]float32, len(vs))
		for vi, v := range vs {
			if err := cbScratch(t, v.scratch); err != nil {
				return err
			}
			t.pf.mode, t.pf.chunk, t.pf.warps = v.mode, PrefillChunk, 0
			best, l, err := timePrefill(ctx, t, prompt[:n])
			if err != nil {
				return fmt.Errorf("cuda-check: cublas 8B %s %d tokens: %w", v.name, n, err)
			}
			rows[vi], tps[vi] = l, float64(n)/best
			paths[v.name] = t.PrefillPath()
		}
		fmt.Fprintf(stdout, "%-7d", n)
		for _, x := range tps {
			fmt.Fprintf(stdout, " %14.0f", x)
		}
		fmt.Fprintf(stdout, "  ")
		for vi := 1; vi < len(vs); vi++ {
			rel, same := relMax(rows[vi], rows[0]), argmax(rows[vi]) == argmax(rows[0])
			fmt.Fprintf(stdout, " | %s %.2fx %.1e %v", vs[vi].name, tps[vi]/tps[0], rel, same)
			if vs[vi].mode == prefillCublas && (!same || rel > 0.1 || math.IsNaN(rel)) {
				errs = append(errs, fmt.Errorf("cuda-check: cublas 8B %s %d tokens: logits rel %.2e, argmax equal %v", vs[vi].name, n, rel, same))
			}
		}
		fmt.Fprintln(stdout)
	}
	for _, v := range vs[2:] {
		fmt.Fprintf(stdout, "  %s: %s\n", v.name, paths[v.name])
	}
	if err := cbScratch(t, false); err != nil {
		return err
	}
	if err := prefillProfile(ctx, t, prefillCublas, 0, prompt[:512], stdout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
