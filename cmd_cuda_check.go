//go:build cuda

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/tensor/cpu"
	"rigscope/gpu/cuda"
)

func init() {
	register(command{
		name:    "cuda-check",
		summary: "check the CUDA kernels against float64 and the CUDA target against the CPU engine on the gocoder fixtures",
		run:     runCUDACheck,
	})
}

type refPrompts struct {
	Prompts []struct {
		PromptIDs    []int32 `json:"prompt_ids"`
		TargetGreedy []int32 `json:"target_greedy"`
		DraftGreedy  []int32 `json:"draft_greedy"`
	} `json:"prompts"`
}

func runCUDACheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cuda-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	models := fs.String("models", "../shared/models", "folder with the gocoder fixtures and reference-public.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := cuda.Open(0)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# cuda-check on %s\n", d)
	if err := cuda.CheckKernels(d, stdout); err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(*models, "reference-public.json"))
	if err != nil {
		return fmt.Errorf("cuda-check: %w", err)
	}
	var ref refPrompts
	if err := json.Unmarshal(raw, &ref); err != nil {
		return fmt.Errorf("cuda-check: reference-public.json: %w", err)
	}
	cases := []struct {
		file  string
		draft bool
	}{
		{"gocoder-14m-hf", false},
		{"gocoder-14m.Q8_0.gguf", false},
		{"gocoder-draft-1m.F16.gguf", true},
	}
	fmt.Fprintf(stdout, "\n%-28s %8s %10s %14s %14s\n", "model", "prompts", "greedy=ref", "greedy=cpu", "max rel logit")
	for _, c := range cases {
		if err := checkModel(ctx, d, filepath.Join(*models, c.file), c.draft, &ref, stdout); err != nil {
			return fmt.Errorf("cuda-check: %s: %w", c.file, err)
		}
	}
	return nil
}

// prefill feeds tokens in chunks of at most cuda.MaxTokens and returns the
// last logits row.
func prefill(ctx context.Context, t spec.Target, toks []int32) ([]float32, error) {
	var out []float32
	for i := 0; i < len(toks); i += cuda.MaxTokens {
		j := min(len(toks), i+cuda.MaxTokens)
		mode := model.LogitsNone
		if j == len(toks) {
			mode = model.LogitsLast
		}
		l, err := t.Forward(ctx, model.Batch{Tokens: toks[i:j], Logits: mode})
		if err != nil {
			return nil, err
		}
		out = l
	}
	return out, nil
}

func argmax(v []float32) int32 {
	b := 0
	for i := range v {
		if v[i] > v[b] {
			b = i
		}
	}
	return int32(b)
}

func checkModel(ctx context.Context, d *cuda.Device, path string, draft bool, ref *refPrompts, stdout io.Writer) error {
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return err
	}
	const ctxLen = 1024
	gt, err := cuda.Load(d, w, ctxLen)
	if err != nil {
		return err
	}
	defer gt.Close()
	pool := cpu.NewPool(runtime.NumCPU())
	ct := spec.NewRunnerTarget(model.NewRunner(w, ctxLen, nil, pool))
	matchRef, matchCPU := 0, 0
	maxRel := 0.0
	for pi, p := range ref.Prompts {
		t0 := time.Now()
		want := p.TargetGreedy
		if draft {
			want = p.DraftGreedy
		}
		if err := gt.Rewind(0); err != nil {
			return err
		}
		if err := ct.Rewind(0); err != nil {
			return err
		}
		gl, err := prefill(ctx, gt, p.PromptIDs)
		if err != nil {
			return err
		}
		gl = append([]float32(nil), gl...)
		fmt.Fprintf(os.Stderr, "prompt %d (%d tokens): gpu prefill %v", pi, len(p.PromptIDs), time.Since(t0))
		cl, err := ct.Forward(ctx, model.Batch{Tokens: p.PromptIDs, Logits: model.LogitsLast})
		if err != nil {
			return err
		}
		var num, den float64
		for i := range cl {
			num = math.Max(num, math.Abs(float64(gl[i]-cl[i])))
			den = math.Max(den, math.Abs(float64(cl[i])))
		}
		if den > 0 {
			maxRel = math.Max(maxRel, num/den)
		}
		fmt.Fprintf(os.Stderr, ", cpu prefill done %v", time.Since(t0))
		// Greedy continuation on the GPU (ids only) and on the CPU.
		gtok := []int32{argmax(gl)}
		ctok := []int32{argmax(cl)}
		for len(gtok) < len(want) {
			ids, err := gt.ForwardIDs(ctx, model.Batch{Tokens: gtok[len(gtok)-1:], Logits: model.LogitsLast})
			if err != nil {
				return err
			}
			gtok = append(gtok, ids[0])
		}
		fmt.Fprintf(os.Stderr, ", gpu greedy done %v", time.Since(t0))
		for len(ctok) < len(want) {
			l, err := ct.Forward(ctx, model.Batch{Tokens: ctok[len(ctok)-1:], Logits: model.LogitsLast})
			if err != nil {
				return err
			}
			ctok = append(ctok, argmax(l))
		}
		fmt.Fprintf(os.Stderr, ", cpu greedy done %v\n", time.Since(t0))
		if equal(gtok, want) {
			matchRef++
		}
		if equal(gtok, ctok) {
			matchCPU++
		}
	}
	fmt.Fprintf(stdout, "%-28s %8d %10d %14d %14.2e\n", filepath.Base(path), len(ref.Prompts), matchRef, matchCPU, maxRel)
	return nil
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
