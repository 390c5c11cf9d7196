//go:build cuda

package cudabench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/loader/synthetic"
	"rigscope/engine/metrics"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	tp0 "rigscope/engine/tp"
	"rigscope/gpu/cuda"
	"rigscope/internal/cli"
)

// Command is `rigscope cuda-bench`.
var Command = cli.Command{
	Name:    "cuda-bench",
	Summary: "decode tokens/s of synthetic llama shapes on the GPU vs the bandwidth bound, verify cost, per-kernel bandwidth",
	Run:     runCUDABench,
}

var benchShapes = map[string]model.Config{
	"llama-8b": {Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 128256, NormEps: 1e-5, RopeTheta: 500000, RopeLayout: model.RopeHalf},
	"llama-1b": {Arch: "llama", Dim: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192, Vocab: 128256, NormEps: 1e-5, RopeTheta: 500000, RopeLayout: model.RopeHalf},
}

func cudaMedian(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func runCUDABench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cuda-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shapes := fs.String("shapes", "llama-8b,llama-1b", "comma-separated shapes")
	ctxLen := fs.Int("ctx", 512, "context: decode steps are timed with this many cached positions")
	steps := fs.Int("steps", 100, "timed decode steps per repeat")
	tpFlag := fs.String("tp", "1", "comma-separated tensor-parallel sizes (ranks share the GPU)")
	arFlag := fs.String("allreduce", "oneshot", "comma-separated allreduce backends timed at each TP size > 1: "+strings.Join(cuda.StepBackends, ", "))
	cacheDir := fs.String("cache-dir", "", "where auto's GPU calibration is cached (default: the user cache directory)")
	modelPath := fs.String("model", "", "a model file (GGUF, safetensors) to time instead of --shapes, loaded as generate --device cuda loads it (its own types: Q4_K_M, Q8_0, FP8 ...)")
	dtypeFlag := fs.String("dtype", "bf16", "the layer matrices' type: bf16, or f8_e4m3 (FP8 with 128x128 block scales; embedding and output stay bf16, as FP8 releases keep them)")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	var dtype tensor.DType
	switch strings.ToLower(*dtypeFlag) {
	case "bf16":
		dtype = tensor.BF16
	case "f8_e4m3", "fp8":
		dtype = tensor.F8_E4M3
	default:
		return fmt.Errorf("cuda-bench: --dtype %q: bf16 or f8_e4m3", *dtypeFlag)
	}
	d, err := cuda.Open(0)
	if err != nil {
		return err
	}
	cbw, bw, err := cuda.Bandwidth(d, 4<<30)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# cuda-bench on %s; read bandwidth %.0f GB/s (16-byte streaming loads, the bound below); device-to-device copy %.0f GB/s (read+write)\n", d, bw, cbw)
	info, err := cuda.KernelInfo(d, []string{"tc16_1", "tcn16_1", "tcglu16_1", "tcglu16_1r2", "tcn16_1r2", "tcn16_1r4", "attn_128_1", "attn_128_2", "tcf16_1", "attnx_128_1", "attnx_128_2"}, []int{512, 512, 512, 512, 512, 512, 128, 128, 512, 128, 128})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# kernels (registers, blocks per SM by registers):%s\n", info)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "RIGSCOPE_CUDA_") {
			fmt.Fprintf(stdout, "# knob %s\n", kv)
		}
	}
	var tps []int
	for _, f := range strings.Split(*tpFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("cuda-bench: --tp %q: %q is not a tensor-parallel size", *tpFlag, f)
		}
		tps = append(tps, n)
	}
	backends := strings.Split(*arFlag, ",")
	type row struct {
		shape                 string
		tp                    int
		backend               string
		p50, p99              float64
		gb, bound, tok, ratio float64
		verify, arShare       float64
		devDec                float64
	}
	var rows []row
	targets, closeSrc, err := benchTargets(d, *modelPath, *shapes, dtype, *ctxLen+64)
	if err != nil {
		return err
	}
	defer closeSrc()
	for _, bt := range targets {
		name, cfg := bt.name, bt.cfg
		for _, tp := range tps {
			t, err := bt.load(tp)
			if err != nil {
				return err
			}
			// Fill the cache to ctx-1 positions, MaxTokens a forward.
			rng := rand.New(rand.NewPCG(1, 2))
			tok := func() int32 { return int32(rng.IntN(cfg.Vocab)) }
			if err := cuda.FillRandom(ctx, t, *ctxLen-1, rng); err != nil {
				return err
			}
			base := t.Len()
			bs := backends
			if tp == 1 {
				bs = []string{"-"}
			}
			for bi, backend := range bs {
				lat := metrics.NewLatencySet()
				if tp > 1 {
					err := t.SetAllReduce(ctx, backend, tp0.GroupOptions{Latency: lat, CacheDir: *cacheDir,
						Warn: func(m string) { fmt.Fprintf(stderr, "cuda-bench: %s\n", m) }})
					if err != nil {
						return fmt.Errorf("cuda-bench: %s tp %d: %w", name, tp, err)
					}
				}
				// Decode (T=1) and verify (T=5) steps alternate, a batch of each
				// per repeat, so both see the same clocks; the first repeat
				// warms up (graph capture).
				batch := map[int][]int32{}
				timeBatch := func(T int) (float64, error) {
					b := batch[T]
					if b == nil {
						b = make([]int32, T)
						for i := range b {
							b[i] = tok()
						}
						batch[T] = b
					}
					mode := model.LogitsLast
					if T > 1 {
						mode = model.LogitsAll
					}
					start := time.Now()
					for s := 0; s < *steps; s++ {
						if err := t.Rewind(base); err != nil {
							return 0, err
						}
						ids, err := t.ForwardIDs(ctx, model.Batch{Tokens: b, Logits: mode})
						if err != nil {
							return 0, err
						}
						b[0] = ids[0]
					}
					return time.Since(start).Seconds() / float64(*steps), nil
				}
				var decs, vers []float64
				for rep := 0; rep < 6; rep++ {
					d, err := timeBatch(1)
					if err != nil {
						return err
					}
					v, err := timeBatch(5)
					if err != nil {
						return err
					}
					if rep > 0 {
						decs, vers = append(decs, d), append(vers, v)
					}
				}
				dec, ver := cudaMedian(decs), cudaMedian(vers)
				// The allreduce share of a graphed decode step: the device's
				// own stamps (rank 0's calls) over the batch's wall time.
				ar0 := t.AllReduceTime()
				lat.Reset()
				decWall, err := timeBatch(1)
				if err != nil {
					return err
				}
				arShare := (t.AllReduceTime() - ar0).Seconds() / (decWall * float64(*steps))
				var p50, p99 float64
				if sm, ok := metrics.DominantBucket(lat.Summaries(), backend); ok {
					p50, p99 = float64(sm.P50)/1e3, float64(sm.P99)/1e3
				}
				// One more batch of decode steps with the device time of each
				// step measured (events around it): what the host adds.
				if _, err := t.TimeSteps(true); err != nil {
					return err
				}
				if _, err := timeBatch(1); err != nil {
					return err
				}
				devDec, err := t.TimeSteps(false)
				if err != nil {
					return err
				}
				gb := float64(t.WeightBytes()) / 1e9
				bound := bw / gb
				if bi == 0 {
					if _, err := printKernelTimes(stdout, t, fmt.Sprintf("%s tp %d %s", name, tp, backend), base, dec, ver); err != nil {
						return err
					}
				}
				rows = append(rows, row{name, tp, backend, p50, p99, gb, bound, 1 / dec, (1 / dec) / bound, ver / dec, arShare, devDec})
			}
			t.Close()
		}
	}
	what := fmt.Sprintf("%v synthetic layer weights", dtype)
	if *modelPath != "" {
		what = "the file's own weights"
	}
	fmt.Fprintf(stdout, "\n# decode, batch 1, %s, context %d, CUDA graph per step, argmax on device (read bandwidth %.0f GB/s)\n", what, *ctxLen, bw)
	fmt.Fprintf(stdout, "# allreduce = the share of a graphed decode step's wall time in allreduce (rank 0's calls, timed by the kernels' globaltimer stamps); p50/p99 per call, decode\n")
	fmt.Fprintf(stdout, "%-10s %3s %-8s %9s %12s %10s %9s %16s %10s %8s %8s %14s\n", "shape", "tp", "backend", "weight GB", "bound tok/s", "tok/s", "of bound", "verify k=4/decode", "allreduce", "p50 us", "p99 us", "device us/step")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-10s %3d %-8s %9.2f %12.0f %10.1f %8.0f%% %16.3f %9.1f%% %8.2f %8.2f %8.0f (%2.0f%%)\n", r.shape, r.tp, r.backend, r.gb, r.bound, r.tok, 100*r.ratio, r.verify, 100*r.arShare,
			r.p50, r.p99, r.devDec*1e6, 100*r.devDec*r.tok)
	}
	return nil
}

// benchTarget is one model cuda-bench times: its row name, shape, and how
// it loads at a TP size (ranks sharing GPU 0).
type benchTarget struct {
	name string
	cfg  model.Config
	load func(tp int) (*cuda.Target, error)
}

// benchTargets is the model file at path, loaded as the product loads it
// (cuda.NewTarget: the same checks, weights and kernels as generate), or
// else the synthetic shapes named in shapes with layer weights of dt;
// closeSrc closes the file.
func benchTargets(d *cuda.Device, path, shapes string, dt tensor.DType, ctxLen int) (ts []benchTarget, closeSrc func(), err error) {
	if path != "" {
		src, err := loader.Open(path, loader.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("cuda-bench: --model: %w", err)
		}
		return []benchTarget{{filepath.Base(path), src.Config(), func(tp int) (*cuda.Target, error) {
			st, err := cuda.NewTarget(src, tp, nil, ctxLen)
			if err != nil {
				return nil, fmt.Errorf("cuda-bench: %s tp %d: %w", path, tp, err)
			}
			return st.(*cuda.Target), nil
		}}}, func() { src.Close() }, nil
	}
	for _, name := range strings.Split(shapes, ",") {
		cfg, ok := benchShapes[name]
		if p, found := synthetic.Presets[name]; !ok && found { // qwen3-8b, mixtral-8x7b, qwen3-30b-a3b, deepseek-v3: weight GB is what a token reads (an MoE layer's k experts, its shared expert and router)
			cfg, ok = p, true
		}
		if !ok {
			return nil, nil, fmt.Errorf("cuda-bench: unknown shape %q", name)
		}
		ts = append(ts, benchTarget{name, cfg, func(tp int) (*cuda.Target, error) {
			return cuda.LoadSyntheticTPType(d, cfg, tp, ctxLen, 1, dt)
		}})
	}
	return ts, func() {}, nil
}

// printKernelTimes profiles one ungraphed decode step and one verify step of
// 5 tokens with events around every launch and prints time per kernel kind;
// it returns the decode step's share of time in allreduce.
func printKernelTimes(w io.Writer, t *cuda.Target, name string, base int, dec, ver float64) (float64, error) {
	profs := make([]map[string]cuda.KernelTime, 2)
	var order []string
	var tot [2]float64
	for i, T := range []int{1, 5} {
		prof, err := t.ProfileStep(T)
		if err != nil {
			return 0, err
		}
		profs[i] = map[string]cuda.KernelTime{}
		for _, k := range prof {
			profs[i][k.Kind] = k
			tot[i] += k.Micros
			if i == 0 {
				order = append(order, k.Kind)
			}
		}
	}
	fmt.Fprintf(w, "\n## %s: one ungraphed step at %d cached, per kernel kind (events around each launch); decode total %.0f us (graphed %.0f), verify of 5 total %.0f us (graphed %.0f)\n",
		name, base, tot[0], dec*1e6, tot[1], ver*1e6)
	fmt.Fprintf(w, "%-12s %8s %10s %7s %10s %8s %12s %8s\n", "kernel", "launches", "decode us", "%", "MB", "GB/s", "verify-5 us", "ratio")
	for _, kind := range order {
		k, v := profs[0][kind], profs[1][kind]
		fmt.Fprintf(w, "%-12s %8d %10.1f %7.1f %10.1f %8.0f %12.1f %8.2f\n", kind, k.Launches, k.Micros, 100*k.Micros/tot[0],
			float64(k.Bytes)/1e6, k.GBps, v.Micros, v.Micros/k.Micros)
	}
	return profs[0]["allreduce"].Micros / tot[0], nil
}
