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

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/quant"
)

// checkQuantModels decodes the quantized gocoder files found in models
// greedily on the GPU against the reference and the CPU engine
// (checkModel), and checks that verifying the greedy tokens in one pass
// gives back the same tokens as decoding them one at a time, and how far
// its logits are from decode's (checkVerifyDecode). The Q4_K_M and Q4_0
// files, when models lacks them, are written from its Q8_0 file first
// (rigscope write-gguf's encoder, into a temporary directory), and a BF16
// copy of it, whose verify/decode logits show what the float path (the
// attention above all) leaves of T-dependence without int8 activations.
func checkQuantModels(ctx context.Context, d *Device, models string, w io.Writer) error {
	ref, err := readRef(models)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "rigscope-quant-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	q8 := filepath.Join(models, "gocoder-14m.Q8_0.gguf")
	made := map[string]string{}
	for _, m := range []struct {
		file string
		ft   quant.FileType
	}{{"gocoder-14m.Q4_K_M.gguf", quant.Q4KM}, {"gocoder-14m.Q4_0.gguf", quant.Q4_0}, {"gocoder-14m.BF16.gguf", quant.BF16}} {
		if _, err := os.Stat(filepath.Join(models, m.file)); err == nil {
			continue
		}
		if _, err := os.Stat(q8); err != nil {
			continue
		}
		path := filepath.Join(tmp, m.file)
		if _, err := quant.WriteFile(q8, m.ft, path, true); err != nil {
			return fmt.Errorf("write %s from %s: %w", m.file, q8, err)
		}
		made[m.file] = path
		fmt.Fprintf(w, "wrote %s from gocoder-14m.Q8_0.gguf (write-gguf --type %s)\n", m.file, m.ft)
	}
	fmt.Fprintf(w, "\n%-28s %8s %10s %14s %14s\n", "model", "prompts", "greedy=ref", "greedy=cpu", "max rel logit")
	var errs []error
	var found []string
	for _, f := range []string{"gocoder-14m.Q8_0.gguf", "gocoder-14m.Q4_0.gguf", "gocoder-14m.Q4_K_M.gguf", "gocoder-14m.Q6_K.gguf"} {
		path := filepath.Join(models, f)
		if p, ok := made[f]; ok {
			path = p
		}
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(w, "%-28s skipped: %v\n", f, err)
			continue
		}
		found = append(found, path)
		if err := checkModel(ctx, d, path, false, ref, w); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		}
	}
	if p, ok := made["gocoder-14m.BF16.gguf"]; ok {
		found = append(found, p)
	}
	fmt.Fprintf(w, "\nverify(15) vs 15 decode steps: tokens (device argmax) equal per prompt; logits rows bitwise equal; max relative L2 difference of a row; the first token that differs, with decode's margin between the two tokens and the row's largest |difference|\n")
	for _, path := range found {
		if err := checkVerifyDecode(ctx, d, path, ref, w); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(path), err))
		}
	}
	return errors.Join(errs...)
}

// Tolerance of verify's logits against decode's (relative L2 per row).
// The quantized products are bitwise the same for every T (the kernel
// check asserts it), but the attention is not: decode attends to the step's
// earlier tokens as cached slots (split with the rest of the cache, in
// chunks from the split's start) and verify as the step's new slots (one
// chunk in the last split), so the online softmax rounds differently (last
// bits; the BF16 row shows its size). The int8 activation turns such a
// last-bit difference into a whole quantization step where a value sits on
// a rounding edge, so the quantized files' logits differ by more and a
// near-tie's argmax may flip. Beyond this tolerance a row is a bug.
const (
	tolVerifyFloat = 1e-4
	tolVerifyQuant = 2e-2
)

// checkVerifyDecode: for every reference prompt, 16 greedy tokens decoded
// one at a time, then the first 15 fed back in one verify pass (T=15,
// every row's argmax): row i should give token i+1; then the same with
// logits (15 decode steps vs one verify) to say by how much they differ.
func checkVerifyDecode(ctx context.Context, d *Device, path string, ref *refPrompts, w io.Writer) error {
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	wts, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return err
	}
	gt, err := Load(d, wts, 1024)
	if err != nil {
		return err
	}
	defer gt.Close()
	tol := tolVerifyFloat
	for _, t := range matrices(wts) {
		if quantized(t.DType) {
			tol = tolVerifyQuant
		}
	}
	V := wts.Cfg.Vocab
	same, rowsEq, rows, first := 0, 0, 0, ""
	var worst float64
	// reprefill empties the cache and prefills the prompt again.
	reprefill := func(prompt []int32) error {
		if err := gt.Rewind(0); err != nil {
			return err
		}
		_, err := prefill(ctx, gt, prompt)
		return err
	}
	for pi, p := range ref.Prompts {
		_, toks, err := gpuGreedy(ctx, gt, p.PromptIDs, 16)
		if err != nil {
			return err
		}
		if err := reprefill(p.PromptIDs); err != nil {
			return err
		}
		ids, err := gt.ForwardIDs(ctx, model.Batch{Tokens: toks[:15], Logits: model.LogitsAll})
		if err != nil {
			return err
		}
		// The logits: 15 decode steps, then one verify.
		if err := reprefill(p.PromptIDs); err != nil {
			return err
		}
		dec := make([]float32, 0, 15*V)
		for i := 0; i < 15; i++ {
			l, err := gt.Forward(ctx, model.Batch{Tokens: toks[i : i+1], Logits: model.LogitsLast})
			if err != nil {
				return err
			}
			dec = append(dec, l...)
		}
		if err := reprefill(p.PromptIDs); err != nil {
			return err
		}
		ver, err := gt.Forward(ctx, model.Batch{Tokens: toks[:15], Logits: model.LogitsAll})
		if err != nil {
			return err
		}
		if len(ids) != 15 || len(ver) != 15*V {
			return fmt.Errorf("verify gave %d ids, %d logits for 15 tokens", len(ids), len(ver))
		}
		ok := true
		for i := 0; i < 15; i++ {
			a, b := ver[i*V:(i+1)*V], dec[i*V:(i+1)*V]
			eq := true
			var num, den, maxd float64
			for k := range a {
				if math.Float32bits(a[k]) != math.Float32bits(b[k]) {
					eq = false
				}
				df := float64(a[k]) - float64(b[k])
				num += df * df
				den += float64(b[k]) * float64(b[k])
				maxd = math.Max(maxd, math.Abs(df))
			}
			rows++
			if eq {
				rowsEq++
			}
			worst = math.Max(worst, math.Sqrt(num/math.Max(den, 1e-300)))
			if ids[i] != toks[i+1] {
				ok = false
				if first == "" {
					first = fmt.Sprintf("prompt %d row %d: verify %d, decode %d, decode margin %.3g, row max |diff| %.3g",
						pi, i, ids[i], toks[i+1], b[toks[i+1]]-b[ids[i]], maxd)
				}
			}
		}
		if ok {
			same++
		}
	}
	fmt.Fprintf(w, "%-28s tokens %2d/%d  rows bitwise %3d/%d  max rel %.2e (tol %.0e)  %s\n",
		filepath.Base(path), same, len(ref.Prompts), rowsEq, rows, worst, tol, first)
	if worst > tol {
		return fmt.Errorf("verify's logits %.2e relative from decode's (tolerance %.0e)", worst, tol)
	}
	return nil
}
