//go:build cuda

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/gpu/cuda"
)

func init() {
	register(command{
		name:    "cuda-bench",
		summary: "decode tokens/s of synthetic llama shapes on the GPU vs the bandwidth bound, verify cost, per-kernel bandwidth",
		run:     runCUDABench,
	})
	register(command{
		name:    "cuda-allreduce",
		summary: "GPU allreduce backends (oneshot, twoshot, host, nccl) on ranks sharing one GPU, checked against a float64 sum",
		run:     runCUDAAllReduce,
	})
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := cuda.Open(0)
	if err != nil {
		return err
	}
	bw, err := cuda.CopyBandwidth(d, 4<<30)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# cuda-bench on %s; device-to-device copy %.0f GB/s (read+write)\n", d, bw)
	type row struct {
		shape                 string
		gb, bound, tok, ratio float64
		verify                float64
	}
	var rows []row
	for _, name := range strings.Split(*shapes, ",") {
		cfg, ok := benchShapes[name]
		if !ok {
			return fmt.Errorf("cuda-bench: unknown shape %q", name)
		}
		t, err := cuda.LoadSynthetic(d, cfg, *ctxLen+64, 1)
		if err != nil {
			return err
		}
		// Fill the cache to ctx-1 positions with 16-token chunks.
		rng := rand.New(rand.NewPCG(1, 2))
		tok := func() int32 { return int32(rng.IntN(cfg.Vocab)) }
		for t.Len() < *ctxLen-1 {
			n := min(cuda.MaxTokens, *ctxLen-1-t.Len())
			b := make([]int32, n)
			for i := range b {
				b[i] = tok()
			}
			if _, err := t.Forward(ctx, model.Batch{Tokens: b, Logits: model.LogitsNone}); err != nil {
				return err
			}
		}
		base := t.Len()
		timeT := func(T int) (float64, error) {
			var reps []float64
			b := make([]int32, T)
			for i := range b {
				b[i] = tok()
			}
			mode := model.LogitsLast
			if T > 1 {
				mode = model.LogitsAll
			}
			for rep := 0; rep < 5; rep++ {
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
				if rep > 0 { // first repeat warms up (graph capture)
					reps = append(reps, time.Since(start).Seconds()/float64(*steps))
				}
			}
			return cudaMedian(reps), nil
		}
		dec, err := timeT(1)
		if err != nil {
			return err
		}
		ver, err := timeT(5)
		if err != nil {
			return err
		}
		gb := float64(t.WeightBytes()) / 1e9
		bound := bw / gb
		rows = append(rows, row{name, gb, bound, 1 / dec, (1 / dec) / bound, ver / dec})
		prof, err := t.ProfileStep(1)
		if err != nil {
			return err
		}
		var tot float64
		for _, k := range prof {
			tot += k.Micros
		}
		fmt.Fprintf(stdout, "\n## %s: one ungraphed decode step at %d cached, per kernel kind (events around each launch; total %.0f us, graphed step %.0f us)\n", name, base, tot, dec*1e6)
		fmt.Fprintf(stdout, "%-12s %8s %10s %8s %10s %8s\n", "kernel", "launches", "us", "%", "MB", "GB/s")
		for _, k := range prof {
			fmt.Fprintf(stdout, "%-12s %8d %10.1f %8.1f %10.1f %8.0f\n", k.Kind, k.Launches, k.Micros, 100*k.Micros/tot, float64(k.Bytes)/1e6, k.GBps)
		}
		t.Close()
	}
	fmt.Fprintf(stdout, "\n# decode, batch 1, bf16 synthetic weights, context %d, CUDA graph per step, argmax on device (copy bandwidth %.0f GB/s)\n", *ctxLen, bw)
	fmt.Fprintf(stdout, "%-10s %9s %12s %10s %9s %16s\n", "shape", "weight GB", "bound tok/s", "tok/s", "of bound", "verify k=4/decode")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-10s %9.2f %12.0f %10.1f %8.0f%% %16.3f\n", r.shape, r.gb, r.bound, r.tok, 100*r.ratio, r.verify)
	}
	return nil
}

func runCUDAAllReduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cuda-allreduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ranksFlag := fs.String("ranks", "2,4,8", "comma-separated rank counts (all on GPU 0)")
	maxN := fs.Int("max", 64<<20, "largest message in floats")
	iters := fs.Int("iters", 20, "timed calls per cell")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := cuda.Open(0)
	if err != nil {
		return err
	}
	if v, err := cuda.NCCLVersion(); err != nil {
		fmt.Fprintf(stdout, "# nccl: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "# nccl: libnccl.so.2 version %s loaded with dlopen\n", v)
	}
	var sizes []int
	for n := 1; n <= *maxN; n *= 4 {
		sizes = append(sizes, n)
		if n > 1 && n*4 > *maxN && n != *maxN {
			sizes = append(sizes, *maxN)
		}
	}
	sizes = append(sizes, 1000003)
	sort.Ints(sizes)
	fmt.Fprintf(stdout, "# float32 sum, ranks share %s; time = median of %d, events barrier to barrier (host: wall)\n", d.Name, *iters)
	fmt.Fprintf(stdout, "%-8s %5s %10s %10s %10s %10s %12s\n", "backend", "ranks", "floats", "time us", "algbw GB/s", "busbw GB/s", "max rel err")
	for _, rs := range strings.Split(*ranksFlag, ",") {
		var R int
		fmt.Sscan(rs, &R)
		for _, be := range cuda.Backends {
			g, err := cuda.NewGroup(d, be, R, *maxN)
			if err != nil {
				fmt.Fprintf(stdout, "%-8s %5d unavailable: %v\n", be, R, err)
				continue
			}
			for _, n := range sizes {
				rel, err := cuda.CheckAllReduce(g, n, uint32(n*31+R))
				if err != nil {
					g.Close()
					return err
				}
				var ts []float64
				it := *iters
				if n >= 16<<20 {
					it = 5
				}
				for i := 0; i < it; i++ {
					dt, err := g.AllReduce(n)
					if err != nil {
						g.Close()
						return err
					}
					ts = append(ts, dt.Seconds())
				}
				m := cudaMedian(ts)
				alg := float64(4*n) / m / 1e9
				fmt.Fprintf(stdout, "%-8s %5d %10d %10.1f %10.2f %10.2f %12.1e\n", be, R, n, m*1e6, alg, alg*2*float64(R-1)/float64(R), rel)
				if rel > 1e-5 || math.IsNaN(rel) {
					g.Close()
					return fmt.Errorf("cuda-allreduce: %s with %d ranks, %d floats: relative error %.2e", be, R, n, rel)
				}
			}
			g.Close()
		}
	}
	_ = unsafe.Pointer(nil)
	_ = cu.DevicePtr(0)
	return nil
}
