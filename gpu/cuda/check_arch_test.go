//go:build cuda

package cuda

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
	tp0 "rigscope/engine/tp"
)

var checkArchDir = flag.String("arch", "../../../shared/models/arch", "folder with the architecture fixtures (tiny-*-hf, tiny-*.F16.gguf; its README) for the arch check")

// archRef is a fixture folder's reference.json (the fields read).
type archRef struct {
	Prompts []struct {
		PromptIDs []int32      `json:"prompt_ids"`
		Greedy    []int32      `json:"greedy"`
		FirstTop  [][2]float64 `json:"first_logits_top"`
	} `json:"prompts"`
}

// gpuArchFixtures are the fixtures of the architectures the GPU runs, each
// with the folder holding its reference.json; gpuArchRefused those it
// refuses by name (the check makes sure it still does). The Gemma 3 GGUF
// as written does not say which layer is global (it reads as llama.cpp
// reads it, every 6th); NAME+layer_types is a copy with the HF folder's
// layer types written in, as the CPU's golden test makes (withLayerTypes).
var (
	gpuArchFixtures = []struct{ file, ref string }{
		{"tiny-llama31-hf", "tiny-llama31-hf"},
		{"tiny-llama31.F16.gguf", "tiny-llama31-hf"},
		{"tiny-qwen2-hf", "tiny-qwen2-hf"},
		{"tiny-qwen2.F16.gguf", "tiny-qwen2-hf"},
		{"tiny-qwen3-hf", "tiny-qwen3-hf"},
		{"tiny-qwen3.F16.gguf", "tiny-qwen3-hf"},
		{"tiny-mistral-hf", "tiny-mistral-hf"},
		{"tiny-gemma3-hf", "tiny-gemma3-hf"},
		{"tiny-gemma3.F16.gguf" + layerTypesSuffix, "tiny-gemma3-hf"},
		{"tiny-mixtral-hf", "tiny-mixtral-hf"},
		{"tiny-mixtral.F16.gguf", "tiny-mixtral-hf"},
		{"tiny-qwen3moe-hf", "tiny-qwen3moe-hf"},
		{"tiny-deepseekv3-hf", "tiny-deepseekv3-hf"},
	}
	gpuArchRefused []string // every fixture's architecture runs on the GPU
)

// Tolerances of the arch check: first-step logits against transformers'
// top 10 (|d| / max(|want|, 1), as engine/golden_arch_test.go), and
// against the CPU engine and between the GPU's own paths (max |d| / max
// |cpu logit|); at least all but one prompt greedy = reference in full.
const (
	archRefTol = 1e-3
	archGPUTol = 1e-3
)

// archRow is one fixture at one TP size.
type archRow struct {
	full, sameCPU, sameTP1   int
	prefix                   []string
	refAbs, refRel           float64
	cpuRel, tp1Rel           float64
	verArg, verN, treeArg    int
	verRel, treeRel, keepRel float64
}

// checkArch runs every fixture of gpuArchFixtures found in dir at TP 1 and
// TP 2 (ranks sharing the GPU, oneshot allreduce): greedy tokens and
// first-step logits against reference.json, the CPU engine (TP 1) and
// the GPU's TP 1; then per prompt a verify of 8 greedy tokens and a tree
// of 8 nodes (the greedy chain of 5 plus 3 decoys) against 8 decode
// steps, the tree's path kept (KeepPath) and one more decode after it.
// It prints a row per fixture and TP, and per prompt what differs.
func checkArch(ctx context.Context, d *Device, dir string, stdout io.Writer) error {
	fmt.Fprintf(stdout, "\narch check (%s): greedy 32 tokens vs reference.json, first-step logits vs reference top-10 (abs, rel) and vs the CPU engine (max rel over the vocab),\n"+
		"TP 2 vs TP 1 on this GPU, verify of 8 greedy tokens vs 8 decode steps (argmax rows equal, max rel), tree of 8 (chain of 5 + 3 decoys) vs decode, decode after KeepPath\n", dir)
	fmt.Fprintf(stdout, "%-22s %2s %7s %8s %8s %7s %8s %7s %8s %9s %8s %9s %8s %8s  %s\n",
		"fixture", "tp", "=ref", "ref abs", "ref rel", "=cpu", "cpu rel", "=tp1", "tp1 rel", "verify=", "ver rel", "tree=", "tree rel", "keep rel", "prefix = ref per prompt")
	var failed []string
	tmp, err := os.MkdirTemp("", "rigscope-arch-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, f := range gpuArchFixtures {
		file, derive := strings.CutSuffix(f.file, layerTypesSuffix)
		path := filepath.Join(dir, file)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stdout, "%-22s skipped: not in %s\n", f.file, dir)
			continue
		}
		if derive {
			if path, err = withLayerTypes(path, filepath.Join(dir, f.ref, "config.json"), tmp); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", f.file, err))
				fmt.Fprintf(stdout, "%-22s ERROR: %v\n", f.file, err)
				continue
			}
		}
		t0 := time.Now()
		fails, err := checkArchFixture(ctx, d, path, f.file, filepath.Join(dir, f.ref, "reference.json"), stdout)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", f.file, err))
			fmt.Fprintf(stdout, "%-22s ERROR: %v\n", f.file, err)
			continue
		}
		for _, m := range fails {
			failed = append(failed, f.file+": "+m)
			fmt.Fprintf(stdout, "%-22s FAIL: %s\n", f.file, m)
		}
		fmt.Fprintf(os.Stderr, "arch %s: %v\n", f.file, time.Since(t0).Round(time.Millisecond))
	}
	for _, name := range gpuArchRefused {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stdout, "%-22s skipped: not in %s\n", name, dir)
			continue
		}
		msg, err := archRefusal(d, path)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			msg = "FAIL: " + err.Error()
		}
		fmt.Fprintf(stdout, "%-22s refused: %s\n", name, msg)
	}
	if len(failed) > 0 {
		return fmt.Errorf("cuda-check: arch: %s", strings.Join(failed, "; "))
	}
	return nil
}

// archRefusal loads path on the GPU and returns the refusal's message; an
// error when it loads.
func archRefusal(d *Device, path string) (string, error) {
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	defer src.Close()
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return "", fmt.Errorf("load on the CPU: %w", err)
	}
	return refusedByName(LoadTP(d, []*model.Weights{w}, 256))
}

// refusedByName is the message of LoadTP's refusal; an error when it
// loaded or failed otherwise.
func refusedByName(t *Target, err error) (string, error) {
	if err == nil {
		t.Close()
		return "", fmt.Errorf("loaded on the GPU, which does not implement it")
	}
	if !strings.Contains(err.Error(), "GPU path does not implement") {
		return "", fmt.Errorf("refused, but not by name: %w", err)
	}
	return err.Error(), nil
}

// cpuResult is the CPU engine's greedy tokens and first logits of a prompt.
type cpuResult struct {
	toks   []int32
	logits []float32
}

func checkArchFixture(ctx context.Context, d *Device, path, name, refPath string, stdout io.Writer) (fails []string, err error) {
	var ref archRef
	if err := readJSON(refPath, &ref); err != nil {
		return nil, err
	}
	if len(ref.Prompts) == 0 {
		return nil, fmt.Errorf("%s: no prompts", refPath)
	}
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	const ctxLen = 1024
	var cpuRes []cpuResult
	var tp1 [][]int32
	var tp1Logits [][]float32
	for _, tp := range []int{1, 2} {
		ws := make([]*model.Weights, tp)
		for r := range ws {
			if ws[r], err = model.LoadWeights(src, model.Shard{Rank: r, Size: tp}); err != nil {
				return fails, fmt.Errorf("tp %d: %w", tp, err)
			}
		}
		if tp == 1 {
			if cpuRes, err = archCPU(ctx, ws[0], ctxLen, &ref); err != nil {
				return fails, fmt.Errorf("cpu: %w", err)
			}
		}
		if len(gpuMissing(ws[0].Cfg, tp)) > 0 {
			msg, err := refusedByName(LoadTP(d, ws, ctxLen))
			if err != nil {
				return fails, fmt.Errorf("tp %d: %w", tp, err)
			}
			fmt.Fprintf(stdout, "%-22s %2d refused: %s\n", name, tp, msg)
			continue
		}
		gt, err := LoadTP(d, ws, ctxLen)
		if err != nil {
			return fails, fmt.Errorf("tp %d: %w", tp, err)
		}
		if tp > 1 {
			if err := gt.SetAllReduce(ctx, "oneshot", tp0.GroupOptions{}); err != nil {
				gt.Close()
				return fails, fmt.Errorf("tp %d: %w", tp, err)
			}
		}
		row, notes, err := archRun(ctx, gt, &ref, cpuRes, tp1, tp1Logits)
		if tp == 1 {
			tp1, tp1Logits = row.toks, row.logits
		}
		gt.Close()
		if err != nil {
			return fails, fmt.Errorf("tp %d: %w", tp, err)
		}
		r, n := row.archRow, len(ref.Prompts)
		tp1Col, tp1Rel := "-", "-"
		if tp > 1 {
			tp1Col, tp1Rel = fmt.Sprintf("%d/%d", r.sameTP1, n), fmt.Sprintf("%.1e", r.tp1Rel)
		}
		fmt.Fprintf(stdout, "%-22s %2d %4d/%-2d %8.1e %8.1e %4d/%-2d %8.1e %7s %8s %6d/%-2d %8.1e %6d/%-2d %8.1e %8.1e  %s\n",
			name, tp, r.full, n, r.refAbs, r.refRel, r.sameCPU, n, r.cpuRel, tp1Col, tp1Rel,
			r.verArg, r.verN, r.verRel, r.treeArg, r.verN*5/8, r.treeRel, r.keepRel, strings.Join(r.prefix, " "))
		for _, s := range notes {
			fmt.Fprintf(stdout, "    tp %d %s\n", tp, s)
		}
		switch {
		case r.full < n-1:
			fails = append(fails, fmt.Sprintf("tp %d: greedy = reference in full on %d of %d prompts", tp, r.full, n))
		case r.refRel > archRefTol:
			fails = append(fails, fmt.Sprintf("tp %d: first-step logits %.2e relative from the reference", tp, r.refRel))
		case r.cpuRel > archGPUTol:
			fails = append(fails, fmt.Sprintf("tp %d: first-step logits %.2e relative from the CPU engine", tp, r.cpuRel))
		case tp > 1 && r.tp1Rel > archGPUTol:
			fails = append(fails, fmt.Sprintf("tp %d: first-step logits %.2e relative from TP 1", tp, r.tp1Rel))
		case r.verRel > archGPUTol || r.treeRel > archGPUTol || r.keepRel > archGPUTol:
			fails = append(fails, fmt.Sprintf("tp %d: verify/tree/keep logits %.2e/%.2e/%.2e relative from decode", tp, r.verRel, r.treeRel, r.keepRel))
		}
	}
	return fails, nil
}

// archCPU is the CPU engine's greedy continuation and first logits of
// every prompt (the oracle).
func archCPU(ctx context.Context, w *model.Weights, ctxLen int, ref *archRef) ([]cpuResult, error) {
	tune, err := CurrentTuning()
	if err != nil {
		return nil, err
	}
	ct := spec.NewRunnerTarget(cpuOracle(w, ctxLen, tune.KV, cpu.NewPool(runtime.NumCPU())))
	out := make([]cpuResult, len(ref.Prompts))
	for i, p := range ref.Prompts {
		if err := ct.Rewind(0); err != nil {
			return nil, err
		}
		l, err := ct.Forward(ctx, model.Batch{Tokens: p.PromptIDs, Logits: model.LogitsLast})
		if err != nil {
			return nil, fmt.Errorf("prompt %d: %w", i, err)
		}
		res := cpuResult{logits: append([]float32(nil), l...), toks: []int32{argmax(l)}}
		for len(res.toks) < len(p.Greedy) {
			l, err := ct.Forward(ctx, model.Batch{Tokens: res.toks[len(res.toks)-1:], Logits: model.LogitsLast})
			if err != nil {
				return nil, fmt.Errorf("prompt %d: %w", i, err)
			}
			res.toks = append(res.toks, argmax(l))
		}
		out[i] = res
	}
	return out, nil
}

// archRunResult is a row plus the GPU's greedy tokens and first logits per
// prompt (TP 1's are the others' baseline).
type archRunResult struct {
	archRow
	toks   [][]int32
	logits [][]float32
}

// relDiff is max |a-b| / max |b|.
func relDiff(a, b []float32) float64 {
	var num, den float64
	for i := range b {
		num = math.Max(num, math.Abs(float64(a[i])-float64(b[i])))
		den = math.Max(den, math.Abs(float64(b[i])))
	}
	return num / math.Max(den, 1e-30)
}

func archRun(ctx context.Context, gt *Target, ref *archRef, cpuRes []cpuResult, tp1 [][]int32, tp1Logits [][]float32) (res archRunResult, notes []string, err error) {
	for pi, p := range ref.Prompts {
		gl, toks, err := gpuGreedy(ctx, gt, p.PromptIDs, len(p.Greedy))
		if err != nil {
			return res, notes, fmt.Errorf("prompt %d: %w", pi, err)
		}
		res.toks, res.logits = append(res.toks, toks), append(res.logits, gl)
		n := matchLen(toks, p.Greedy)
		res.prefix = append(res.prefix, fmt.Sprint(n))
		if n == len(p.Greedy) {
			res.full++
		} else {
			notes = append(notes, fmt.Sprintf("prompt %d: greedy %v, reference %v (first %d equal)", pi, toks, p.Greedy, n))
		}
		for _, tl := range p.FirstTop {
			dd := math.Abs(float64(gl[int(tl[0])]) - tl[1])
			res.refAbs, res.refRel = math.Max(res.refAbs, dd), math.Max(res.refRel, dd/math.Max(math.Abs(tl[1]), 1))
		}
		c := cpuRes[pi]
		res.cpuRel = math.Max(res.cpuRel, relDiff(gl, c.logits))
		if slices.Equal(toks, c.toks) {
			res.sameCPU++
		} else {
			notes = append(notes, fmt.Sprintf("prompt %d: cpu greedy %v (first %d equal)", pi, c.toks, matchLen(toks, c.toks)))
		}
		if tp1 != nil {
			res.tp1Rel = math.Max(res.tp1Rel, relDiff(gl, tp1Logits[pi]))
			if slices.Equal(toks, tp1[pi]) {
				res.sameTP1++
			} else {
				notes = append(notes, fmt.Sprintf("prompt %d: tp 1 greedy %v (first %d equal)", pi, tp1[pi], matchLen(toks, tp1[pi])))
			}
		}
		if err := archVerify(ctx, gt, p.PromptIDs, toks, &res.archRow, &notes, pi); err != nil {
			return res, notes, fmt.Errorf("prompt %d: verify: %w", pi, err)
		}
	}
	return res, notes, nil
}

func matchLen(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// archVerify checks, after prompt, that a verify of toks[:8] (one step)
// and a tree holding toks[:5] among decoys give the logits of 8 decode
// steps of the same tokens, and that after keeping the tree's greedy path
// (KeepPath) the next decode does too. It adds to row and notes.
func archVerify(ctx context.Context, gt spec.Target, prompt, toks []int32, row *archRow, notes *[]string, pi int) error {
	const k = 8
	base, V := len(prompt), gt.Vocab()
	if len(toks) < k {
		return fmt.Errorf("%d greedy tokens, want at least %d", len(toks), k)
	}
	if err := gt.Rewind(base); err != nil {
		return err
	}
	dec := make([][]float32, k)
	for i := range dec {
		l, err := gt.Forward(ctx, model.Batch{Tokens: toks[i : i+1], Logits: model.LogitsLast})
		if err != nil {
			return fmt.Errorf("decode %d: %w", i, err)
		}
		dec[i] = append([]float32(nil), l...)
	}
	compare := func(what string, rows []float32, n int, rel *float64, same *int) {
		for i := range n {
			r := rows[i*V : (i+1)*V]
			*rel = math.Max(*rel, relDiff(r, dec[i]))
			if a, b := argmax(r), argmax(dec[i]); a == b {
				*same++
			} else {
				*notes = append(*notes, fmt.Sprintf("prompt %d: %s row %d argmax %d, decode %d (rel diff %.2e)", pi, what, i, a, b, relDiff(r, dec[i])))
			}
		}
	}
	if err := gt.Rewind(base); err != nil {
		return err
	}
	l, err := gt.Forward(ctx, model.Batch{Tokens: toks[:k], Logits: model.LogitsAll})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	compare("verify", l, k, &row.verRel, &row.verArg)
	row.verN += k
	// The tree: nodes 0-4 the greedy chain, 5 a sibling of 1, 6 its
	// child, 7 a sibling of 3; positions base + depth.
	tree := model.Batch{
		Tokens: []int32{toks[0], toks[1], toks[2], toks[3], toks[4], (toks[1] + 1) % int32(V), (toks[2] + 7) % int32(V), (toks[3] + 3) % int32(V)},
		Parent: []int32{-1, 0, 1, 2, 3, 0, 5, 2},
		Logits: model.LogitsAll,
	}
	for _, depth := range []int32{0, 1, 2, 3, 4, 1, 2, 3} {
		tree.Pos = append(tree.Pos, int32(base)+depth)
	}
	if err := gt.Rewind(base); err != nil {
		return err
	}
	if l, err = gt.Forward(ctx, tree); err != nil {
		return fmt.Errorf("tree: %w", err)
	}
	compare("tree", l, 5, &row.treeRel, &row.treeArg)
	if err := gt.KeepPath(base, []int{0, 1, 2, 3, 4}); err != nil {
		return fmt.Errorf("keep path: %w", err)
	}
	if l, err = gt.Forward(ctx, model.Batch{Tokens: toks[5:6], Logits: model.LogitsLast}); err != nil {
		return fmt.Errorf("decode after keep path: %w", err)
	}
	row.keepRel = math.Max(row.keepRel, relDiff(l, dec[5]))
	return nil
}

// layerTypesSuffix marks a gpuArchFixtures GGUF to be read with its HF
// folder's layer types (withLayerTypes).
const layerTypesSuffix = "+layer_types"

// withLayerTypes writes into tmp a copy of the gemma3 GGUF path that states
// gemma3.attention.sliding_window_pattern (true = local) from the HF
// config's layer_types, and returns the copy's path.
func withLayerTypes(path, config, tmp string) (string, error) {
	var hf struct {
		LayerTypes []string `json:"layer_types"`
	}
	if err := readJSON(config, &hf); err != nil {
		return "", err
	}
	if len(hf.LayerTypes) == 0 {
		return "", fmt.Errorf("%s: no layer_types", config)
	}
	pattern := make([]bool, len(hf.LayerTypes))
	for i, lt := range hf.LayerTypes {
		pattern[i] = lt == "sliding_attention"
	}
	f, err := gguf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	kv := append(append([]gguf.KV{}, f.KV...), gguf.KV{Key: "gemma3.attention.sliding_window_pattern", Value: pattern})
	var ts []*tensor.Tensor
	for _, ti := range f.Tensors {
		t, err := f.Tensor(ti.Name)
		if err != nil {
			return "", err
		}
		ts = append(ts, t)
	}
	out := filepath.Join(tmp, filepath.Base(path))
	w, err := os.Create(out)
	if err != nil {
		return "", err
	}
	if err := gguf.Write(w, kv, ts); err != nil {
		w.Close()
		return "", fmt.Errorf("write %s: %w", out, err)
	}
	return out, w.Close()
}

// cpuOracle is the CPU engine's runner to compare with a GPU target whose
// cache is in format kv: with a bf16 cache, the CPU's rounds its values as
// the GPU's (KVCache.BF16).
func cpuOracle(w *model.Weights, ctxLen int, kv kvFormat, pool *cpu.Pool) *model.Runner {
	r := model.NewRunner(w, ctxLen, nil, pool)
	r.KV.BF16 = kv == kvBF16
	return r
}
