//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"gorgonia.org/cu"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/quant"
	"rigscope/engine/tensor"
)

// llama-8b's products (one layer, and the output projection).
type q8bShape struct {
	name string
	N, K int
	kind int // 0: + residual (mode 1), 1: fused norm, 2: GLU (gate and up)
}

var q8bShapes = []q8bShape{
	{"qkv 6144x4096 +norm", 6144, 4096, 1},
	{"wo 4096x4096 +add", 4096, 4096, 0},
	{"gate_up 2x14336x4096", 14336, 4096, 2},
	{"down 4096x14336 +add", 4096, 14336, 0},
	{"output 128256x4096", 128256, 4096, 1},
}

// checkQuantBandwidth times each type's products on llama-8b's shapes for
// 1, 5 and 16 tokens (qx included: that is what a step pays), as weight
// bytes per second against the device's read bandwidth, and sums them into
// the products' part of an 8B decode step (32 layers and the output; the
// attention, embedding and argmax are not in it), also for a Q4_K_M file's
// mix of Q4_K and Q6_K as llama-quantize lays it out.
func checkQuantBandwidth(d *Device, w io.Writer) error {
	_, readGBps, err := Bandwidth(d, 1<<30)
	if err != nil {
		return err
	}
	unbind, err := d.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return err
	}
	defer s.Destroy()
	e0, _ := cu.MakeEvent(cu.DefaultEvent)
	e1, _ := cu.MakeEvent(cu.DefaultEvent)
	defer cu.DestroyEvent(&e0)
	defer cu.DestroyEvent(&e1)
	// timed is the mean time (us) of n calls of op after 3 untimed ones.
	timed := func(n int, op func(i int) error) (float64, error) {
		for i := 0; i < 3; i++ {
			if err := op(i); err != nil {
				return 0, err
			}
		}
		if err := e0.Record(s); err != nil {
			return 0, err
		}
		for i := 0; i < n; i++ {
			if err := op(i); err != nil {
				return 0, err
			}
		}
		if err := e1.Record(s); err != nil {
			return 0, err
		}
		if err := e1.Synchronize(); err != nil {
			return 0, fmt.Errorf("cuda check: %w", err)
		}
		ms, err := e0.Elapsed(e1)
		return float64(ms) * 1000 / float64(n), err
	}
	rng := rand.New(rand.NewPCG(8, 23))
	tgt := &Target{launcher: launcher{dev: d, stream: s, ls: s, eps: 1e-5}, cfg: model.Config{NormEps: 1e-5}}
	Ts := []int{1, 5, 16}
	us := map[string]float64{} // type/shape/T[/ksK] -> us per call
	var sweeps []string        // the same at every K split, T 1 and 5
	fmt.Fprintf(w, "\nquantized products on llama-8b shapes (device read bandwidth %.0f GB/s; weights rotated over copies >= 256 MB, so not from L2; qx included)\n", readGBps)
	fmt.Fprintf(w, "%-6s %-22s %8s %9s %7s %6s %9s %6s %9s %6s\n", "type", "matrix", "MB", "T=1 us", "GB/s", "%read", "T=5 us", "/T=1", "T=16 us", "/T=1")
	run := func(dt tensor.DType, sh q8bShape, mats []dweight, label string) error {
		h := newDevHelper(s)
		defer h.free()
		xd := h.up(f32bytes(randn32(rng, MaxTokens*sh.K, 0, 1)))
		gd := h.up(f32bytes(randn32(rng, sh.K, 1, 0.2)))
		out := h.alloc(int64(4 * MaxTokens * sh.N))
		if h.err != nil {
			return h.err
		}
		per := mats[0].bytes()
		if sh.kind == 2 {
			per *= 2
		}
		line := fmt.Sprintf("%-6s %-22s %8.1f", label, sh.name, float64(per)/1e6)
		var t1 float64
		for _, T := range Ts {
			op := func(i int) error {
				switch sh.kind {
				case 0:
					return tgt.matvec("bw", out, sh.N, xd, 0, mats[i%len(mats)], T, 1, 0)
				case 1:
					return tgt.matvec("bw", out, sh.N, xd, 0, mats[i%len(mats)], T, 0, gd)
				}
				j := 2 * (i % (len(mats) / 2))
				return tgt.glu(out, 0, xd, mats[j], mats[j+1], T, gd)
			}
			t, err := timed(max(20, 2*len(mats)), op)
			if err != nil {
				return fmt.Errorf("%v %s T=%d: %w", dt, sh.name, T, err)
			}
			us[fmt.Sprintf("%s/%s/%d", label, sh.name, T)] = t
			if T <= 5 { // the K split sweep (mqSplit's choice is the line above)
				sweep := fmt.Sprintf("%-6s %-22s T=%-2d policy ks=%d:", label, sh.name, T, tgt.mqSplit(sh.N))
				for _, ks := range []int{1, 2, 4} {
					tgt.mqks = ks
					tk, err := timed(max(20, 2*len(mats)), op)
					tgt.mqks = 0
					if err != nil {
						return fmt.Errorf("%v %s T=%d ks=%d: %w", dt, sh.name, T, ks, err)
					}
					us[fmt.Sprintf("%s/%s/%d/ks%d", label, sh.name, T, ks)] = tk
					sweep += fmt.Sprintf("  ks=%d %8.1f us", ks, tk)
				}
				sweeps = append(sweeps, sweep)
			}
			if T == 1 {
				t1 = t
				gbps := float64(per) / (t * 1e3)
				line += fmt.Sprintf(" %9.1f %7.0f %5.0f%%", t, gbps, 100*gbps/readGBps)
			} else {
				line += fmt.Sprintf(" %9.1f %6.2f", t, t/t1)
			}
		}
		fmt.Fprintln(w, line)
		return nil
	}
	// upload puts n copies of the (N, K) matrices made by mk on the device.
	upload := func(m *dmodel, mk func() []*tensor.Tensor, minCopies int) ([]dweight, error) {
		ts := mk()
		var mats []dweight
		one, err := m.uploadLayerMatrix(ts...)
		if err != nil {
			return nil, err
		}
		copies := max(minCopies, min(16, int((256<<20)/max(one.bytes(), 1))+1))
		mats = append(mats, one)
		for len(mats) < copies {
			c, err := m.uploadLayerMatrix(ts...)
			if err != nil {
				return nil, err
			}
			mats = append(mats, c)
		}
		return mats, nil
	}
	var errs []error
	for _, dt := range quantTypes {
		for _, sh := range q8bShapes {
			m := &dmodel{}
			data := randBlocks(rng, dt, sh.N, sh.K)
			mk := func() []*tensor.Tensor {
				return []*tensor.Tensor{{Name: sh.name, DType: dt, Shape: []int{sh.N, sh.K}, Data: data}}
			}
			minCopies := 1
			if sh.kind == 2 {
				minCopies = 2
			}
			mats, err := upload(m, mk, minCopies)
			if err == nil {
				if sh.kind == 2 && len(mats)%2 == 1 {
					mats = mats[:len(mats)-1]
				}
				err = run(dt, sh, mats, dt.String())
			}
			m.free()
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	// A Q4_K_M layer's qkv whose attn_v is Q6_K: Q4_K q, k and Q6_K v.
	{
		m := &dmodel{}
		qk, v := randBlocks(rng, tensor.Q4_K, 5120, 4096), randBlocks(rng, tensor.Q6_K, 1024, 4096)
		mk := func() []*tensor.Tensor {
			return []*tensor.Tensor{{Name: "wqk", DType: tensor.Q4_K, Shape: []int{5120, 4096}, Data: qk},
				{Name: "wv", DType: tensor.Q6_K, Shape: []int{1024, 4096}, Data: v}}
		}
		mats, err := upload(m, mk, 1)
		if err == nil {
			err = run(tensor.Q4_K, q8bShapes[0], mats, "Q4_K+6")
		}
		m.free()
		if err != nil {
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(w, "\nK split sweep (ks warps share a row group's units: quant_layout.go mqSplit picks per shape; times as above)\n")
	for _, l := range sweeps {
		fmt.Fprintln(w, l)
	}
	// qx alone, for its share.
	for _, K := range []int{4096, 14336} {
		h := newDevHelper(s)
		m := &dmodel{}
		xq, err := m.scratch(K)
		xd := h.up(f32bytes(randn32(rng, MaxTokens*K, 0, 1)))
		if err == nil && h.err != nil {
			err = h.err
		}
		line := fmt.Sprintf("%-6s qx K=%-16d", "", K)
		for _, T := range Ts {
			if err != nil {
				break
			}
			var t float64
			t, err = timed(50, func(int) error {
				_, _, _, e := tgt.quantizeX(xd, dweight{dt: tensor.Q8_0, rows: 1, cols: K, xq: xq}, T, 0)
				return e
			})
			line += fmt.Sprintf("  T=%d %5.1f us", T, t)
		}
		fmt.Fprintln(w, line)
		m.free()
		h.free()
		if err != nil {
			errs = append(errs, err)
		}
	}
	// The products' part of an 8B step, per file type.
	// at is a product's time at T: with mqSplit's K split, or (best) with
	// the split fastest at T=1.
	at := func(typ, shape string, T int, best bool) float64 {
		if !best {
			return us[fmt.Sprintf("%s/%s/%d", typ, shape, T)]
		}
		bk := 1
		for _, ks := range []int{2, 4} {
			if us[fmt.Sprintf("%s/%s/1/ks%d", typ, shape, ks)] < us[fmt.Sprintf("%s/%s/1/ks%d", typ, shape, bk)] {
				bk = ks
			}
		}
		return us[fmt.Sprintf("%s/%s/%d/ks%d", typ, shape, T, bk)]
	}
	step := func(T int, typeOf func(part string, l int) string, best bool) float64 {
		var sum float64
		for l := 0; l < 32; l++ {
			for _, sh := range q8bShapes[:4] {
				sum += at(typeOf(sh.name, l), sh.name, T, best)
			}
		}
		return sum + at(typeOf(q8bShapes[4].name, 0), q8bShapes[4].name, T, best)
	}
	fmt.Fprintf(w, "\nllama-8b decode step, quantized products only (sum of the timed kernels, one launch after another, no graph; best: each shape at its fastest K split at T=1)\n%-8s %12s %14s %12s %12s %12s %12s\n",
		"file", "T=1 us", "tok/s bound", "T=5 us", "verify/dec", "best T=1", "best T=5")
	files := []struct {
		name   string
		typeOf func(part string, l int) string
	}{
		{"Q8_0", func(string, int) string { return "Q8_0" }},
		{"Q4_0", func(p string, _ int) string {
			if p == q8bShapes[4].name {
				return "Q6_K"
			}
			return "Q4_0"
		}},
		{"Q4_K_M", func(p string, l int) string {
			switch p {
			case q8bShapes[0].name:
				if quant.Q4KM.TensorType(fmt.Sprintf("blk.%d.attn_v.weight", l), []int{1024, 4096}, 32, false) == tensor.Q6_K {
					return "Q4_K+6"
				}
			case q8bShapes[3].name:
				return quant.Q4KM.TensorType(fmt.Sprintf("blk.%d.ffn_down.weight", l), []int{4096, 14336}, 32, false).String()
			case q8bShapes[4].name:
				return "Q6_K"
			}
			return "Q4_K"
		}},
		{"Q6_K", func(string, int) string { return "Q6_K" }},
		{"Q5_K", func(string, int) string { return "Q5_K" }},
	}
	for _, f := range files {
		a, b := step(1, f.typeOf, false), step(5, f.typeOf, false)
		ba, bb := step(1, f.typeOf, true), step(5, f.typeOf, true)
		fmt.Fprintf(w, "%-8s %12.0f %14.0f %12.0f %12.2f %12.0f %12.0f\n", f.name, a, 1e6/a, b, b/a, ba, bb)
	}
	return errors.Join(errs...)
}

// checkQuantModels decodes the quantized gocoder files found in models
// greedily on the GPU against the reference and the CPU engine
// (checkModel), and checks that verifying the greedy tokens in one pass
// gives back the same tokens as decoding them one at a time. The Q4_K_M
// and Q4_0 files, when models lacks them, are written from its Q8_0 file
// first (rigscope write-gguf's encoder, into a temporary directory).
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
	}{{"gocoder-14m.Q4_K_M.gguf", quant.Q4KM}, {"gocoder-14m.Q4_0.gguf", quant.Q4_0}} {
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
	for _, path := range found {
		if err := checkVerifyDecode(ctx, d, path, ref, w); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(path), err))
		}
	}
	return errors.Join(errs...)
}

// checkVerifyDecode: for every reference prompt, 16 greedy tokens decoded
// one at a time, then the first 15 fed back in one verify pass (T=15,
// every row's argmax): row i must give token i+1.
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
	same, first := 0, ""
	for pi, p := range ref.Prompts {
		_, toks, err := gpuGreedy(ctx, gt, p.PromptIDs, 16)
		if err != nil {
			return err
		}
		if err := gt.Rewind(0); err != nil {
			return err
		}
		if _, err := prefill(ctx, gt, p.PromptIDs); err != nil {
			return err
		}
		ids, err := gt.ForwardIDs(ctx, model.Batch{Tokens: toks[:15], Logits: model.LogitsAll})
		if err != nil {
			return err
		}
		ok := len(ids) == 15
		for i := 0; ok && i < 15; i++ {
			if ids[i] != toks[i+1] {
				ok = false
				if first == "" {
					first = fmt.Sprintf("prompt %d row %d: verify %d, decode %d", pi, i, ids[i], toks[i+1])
				}
			}
		}
		if ok {
			same++
		}
	}
	fmt.Fprintf(w, "%-28s verify(15) = decode on %d of %d prompts %s\n", filepath.Base(path), same, len(ref.Prompts), first)
	if same != len(ref.Prompts) {
		return fmt.Errorf("verify differs from decode: %s", first)
	}
	return nil
}
