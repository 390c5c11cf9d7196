//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/tensor/cpu"
	tp0 "rigscope/engine/tp"
)

// checkMoE runs the tiny-moe preset (4 experts, top 2, random weights) in
// each expert type the kernels read (moe.cu), and the tiny-mla preset
// (DeepSeek-V3's block: latent attention, a dense first layer, sigmoid
// grouped routing with the bias and a shared expert) in f32 and bf16 and
// in f32 with DeepSeek-V3's YaRN (the CPU's tables and mscale² scale),
// after the MoE and latent attention kernels alone (checkMoEKernels,
// checkMLAKernels), and checks, per preset and type: the
// GPU's first-step logits against the CPU engine's, its greedy tokens
// against the CPU's, a verify of 8 tokens against 8 decode steps (a
// verify's dense products are other kernels than decode's: within
// tolerance; the MoE block alone is checked bit for bit first, by
// checkMoEKernels), and TP 2's greedy tokens and first logits against
// TP 1's. The arch check does the
// same for the trained fixtures against transformers, within tolerances.
func checkMoE(ctx context.Context, d *Device, stdout io.Writer) error {
	var failed []string
	if err := checkMoEKernels(d, stdout); err != nil { // check_moe_kernels_test.go: the block alone, bitwise
		failed = append(failed, err.Error())
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
	}
	if err := checkMLAKernels(d, stdout); err != nil { // check_mla_kernels_test.go
		failed = append(failed, err.Error())
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
	}
	fmt.Fprintf(stdout, "\nmoe check (tiny-moe: 4 experts top 2; tiny-mla: DeepSeek-V3's block): vs the CPU engine, verify of 8 vs 8 decode steps (argmax, max rel), TP 2 vs TP 1\n")
	fmt.Fprintf(stdout, "%-20s %10s %8s %14s %8s %10s %8s\n", "preset type", "cpu rel", "=cpu", "verify=decode", "ver rel", "tp2 rel", "=tp1")
	for _, c := range []struct {
		preset, dt string
		yarn       bool // DeepSeek-V3's YaRN (factor 40 over 16 original positions, mscale = mscale_all_dim = 1)
	}{{"tiny-moe", "f32", false}, {"tiny-moe", "bf16", false}, {"tiny-moe", "f16", false}, {"tiny-mla", "f32", false}, {"tiny-mla", "bf16", false}, {"tiny-mla", "f32", true}} {
		name := c.preset + " " + c.dt
		if c.yarn {
			name += " yarn"
		}
		msg, err := checkMoEType(ctx, d, c.preset, c.dt, c.yarn, stdout)
		if err != nil {
			failed = append(failed, name+": "+err.Error())
			fmt.Fprintf(stdout, "%-20s ERROR: %v\n", name, err)
		}
		for _, m := range msg {
			failed = append(failed, name+": "+m)
			fmt.Fprintf(stdout, "%-20s FAIL: %s\n", name, m)
		}
	}
	// Quantized experts are refused by name.
	if msg, err := moeQuantRefusal(d); err != nil {
		failed = append(failed, "q8_0: "+err.Error())
		fmt.Fprintf(stdout, "%-6s FAIL: %v\n", "q8_0", err)
	} else {
		fmt.Fprintf(stdout, "%-6s refused: %s\n", "q8_0", msg)
	}
	if len(failed) > 0 {
		return fmt.Errorf("cuda-check: moe: %s", strings.Join(failed, "; "))
	}
	return nil
}

func checkMoEType(ctx context.Context, d *Device, preset, dt string, yarn bool, stdout io.Writer) (fails []string, err error) {
	syn, err := synthetic.Open("synthetic:" + preset + "?dtype=" + dt + "&seed=5")
	if err != nil {
		return nil, err
	}
	defer syn.Close()
	var src model.WeightSource = syn
	name := preset + " " + dt
	if yarn {
		cfg := syn.Config()
		cfg.RopeScaling = model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 40, OrigContext: 16, BetaFast: model.YaRNBetaFast, BetaSlow: model.YaRNBetaSlow,
			AttnFactor: model.YaRNAttentionFactor(40, 0, 1, 1), MScaleAllDim: 1}
		src, name = configSource{syn, cfg}, name+" yarn"
	}
	const ctxLen, n, k = 256, 16, 8
	rng := rand.New(rand.NewPCG(11, 0))
	prompt := make([]int32, 12)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(src.Config().Vocab))
	}
	load := func(tp int) (*Target, *model.Weights, error) {
		ws := make([]*model.Weights, tp)
		for r := range ws {
			if ws[r], err = model.LoadWeights(src, model.Shard{Rank: r, Size: tp}); err != nil {
				return nil, nil, err
			}
		}
		gt, err := LoadTP(d, ws, ctxLen)
		if err != nil {
			return nil, nil, err
		}
		if tp > 1 {
			if err := gt.SetAllReduce(ctx, "oneshot", tp0.GroupOptions{}); err != nil {
				gt.Close()
				return nil, nil, err
			}
		}
		return gt, ws[0], nil
	}

	// TP 1 against the CPU engine.
	gt, w, err := load(1)
	if err != nil {
		return nil, fmt.Errorf("tp 1: %w", err)
	}
	defer gt.Close()
	gl, toks, err := gpuGreedy(ctx, gt, prompt, n)
	if err != nil {
		return nil, fmt.Errorf("tp 1 greedy: %w", err)
	}
	cl, ctoks, err := moeCPU(ctx, w, ctxLen, prompt, n)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	cpuRel := relDiff(gl, cl)
	sameCPU := slices.Equal(toks, ctoks)

	// Verify of k tokens against k decode steps, every row bitwise.
	base, V := len(prompt), gt.Vocab()
	if err := gt.Rewind(base); err != nil {
		return nil, err
	}
	dec := make([]float32, 0, k*V)
	for i := range k {
		l, err := gt.Forward(ctx, model.Batch{Tokens: toks[i : i+1], Logits: model.LogitsLast})
		if err != nil {
			return nil, fmt.Errorf("decode %d: %w", i, err)
		}
		dec = append(dec, l...)
	}
	if err := gt.Rewind(base); err != nil {
		return nil, err
	}
	ver, err := gt.Forward(ctx, model.Batch{Tokens: toks[:k], Logits: model.LogitsAll})
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	sameArg, verRel := 0, 0.0
	for i := range k {
		r, want := ver[i*V:(i+1)*V], dec[i*V:(i+1)*V]
		verRel = math.Max(verRel, relDiff(r, want))
		if argmax(r) == argmax(want) {
			sameArg++
		}
	}

	// TP 2 against TP 1.
	g2, _, err := load(2)
	if err != nil {
		return nil, fmt.Errorf("tp 2: %w", err)
	}
	defer g2.Close()
	gl2, toks2, err := gpuGreedy(ctx, g2, prompt, n)
	if err != nil {
		return nil, fmt.Errorf("tp 2 greedy: %w", err)
	}
	tp2Rel := relDiff(gl2, gl)
	fmt.Fprintf(stdout, "%-20s %10.1e %8v %11d/%-2d %8.1e %10.1e %8v\n", name, cpuRel, sameCPU, sameArg, k, verRel, tp2Rel, slices.Equal(toks2, toks))
	if cpuRel > archGPUTol {
		fails = append(fails, fmt.Sprintf("first-step logits %.2e relative from the CPU engine", cpuRel))
	}
	if !sameCPU {
		fails = append(fails, fmt.Sprintf("greedy %v, CPU %v", toks, ctoks))
	}
	if sameArg != k || verRel > archGPUTol {
		fails = append(fails, fmt.Sprintf("verify rows: argmax as decode %d of %d, logits %.2e relative", sameArg, k, verRel))
	}
	if tp2Rel > archGPUTol || !slices.Equal(toks2, toks) {
		fails = append(fails, fmt.Sprintf("TP 2: logits %.2e relative from TP 1, greedy %v vs %v", tp2Rel, toks2, toks))
	}
	return fails, nil
}

// configSource is a weight source with its config replaced.
type configSource struct {
	model.WeightSource
	cfg model.Config
}

func (c configSource) Config() model.Config { return c.cfg }

// moeCPU is the CPU engine's first logits and n greedy tokens after prompt.
func moeCPU(ctx context.Context, w *model.Weights, ctxLen int, prompt []int32, n int) ([]float32, []int32, error) {
	ct := spec.NewRunnerTarget(model.NewRunner(w, ctxLen, nil, cpu.NewPool(runtime.NumCPU())))
	l, err := ct.Forward(ctx, model.Batch{Tokens: prompt, Logits: model.LogitsLast})
	if err != nil {
		return nil, nil, err
	}
	first := append([]float32(nil), l...)
	toks := []int32{argmax(l)}
	for len(toks) < n {
		if l, err = ct.Forward(ctx, model.Batch{Tokens: toks[len(toks)-1:], Logits: model.LogitsLast}); err != nil {
			return nil, nil, err
		}
		toks = append(toks, argmax(l))
	}
	return first, toks, nil
}

// moeQuantRefusal loads tiny-moe with Q8_0 experts, which the expert
// kernels do not read: the message of the refusal, an error when it loads
// or fails otherwise.
func moeQuantRefusal(d *Device) (string, error) {
	src, err := synthetic.Open("synthetic:tiny-moe?dtype=q8_0")
	if err != nil {
		return "", err
	}
	defer src.Close()
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return "", err
	}
	t, err := LoadTP(d, []*model.Weights{w}, 256)
	if err == nil {
		t.Close()
		return "", fmt.Errorf("loaded Q8_0 experts, which the expert kernels do not read")
	}
	if !strings.Contains(err.Error(), "expert tensor") || !strings.Contains(err.Error(), "--device cpu") {
		return "", fmt.Errorf("refused, but not by name: %w", err)
	}
	return err.Error(), nil
}
