//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"rigscope/engine/loader"
	"rigscope/engine/metrics"
	"rigscope/engine/model"
	tp0 "rigscope/engine/tp"
)

// checkTP splits gocoder-14m-hf over 2, 4 and 8 ranks sharing the GPU,
// joined by each step backend in turn on the same loaded target (the
// weights stay; SetAllReduce swaps the backend), and compares greedy tokens
// and first logits with TP=1 on the GPU and with the reference; it prints
// each backend's per-call latency as the run measured it (device stamps)
// and the bytes the engine counted, and fails when an exact backend's
// greedy tokens differ from TP=1's.
func checkTP(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	ref, err := readRef(models)
	if err != nil {
		return err
	}
	src, err := loader.Open(filepath.Join(models, "gocoder-14m-hf"), loader.Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	cache, err := os.MkdirTemp("", "rigscope-tp-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	fmt.Fprintf(stdout, "\ntensor parallel on one GPU, gocoder-14m-hf, 12 prompts; path: shared = the ranks share the GPU's context, kernels and buffers;\neach = every rank opens the GPU as its own device (RIGSCOPE_CUDA_RANKDEVS=each: the path of one rank per GPU, rankdev.go)\n%-4s %-6s %-8s %12s %12s %14s %9s %9s %7s %14s\n",
		"tp", "path", "backend", "greedy=tp1", "greedy=ref", "max rel vs tp1", "p50 us", "p99 us", "calls", "bytes/rank")
	var base [][]int32
	var baseLogits [][]float32
	var failed []string
	type run struct {
		tp   int
		path string
	}
	var runs []run
	for _, tp := range []int{1, 2, 4, 8} {
		runs = append(runs, run{tp, "shared"})
		if tp > 1 {
			runs = append(runs, run{tp, "each"})
		}
	}
	for _, rn := range runs {
		tp, path := rn.tp, rn.path
		ws := make([]*model.Weights, tp)
		for r := range ws {
			if ws[r], err = model.LoadWeights(src, model.Shard{Rank: r, Size: tp}); err != nil {
				return err
			}
		}
		var t *Target
		if path == "shared" {
			t, err = LoadTP(d, ws, 1024)
		} else {
			gpus := make([]int, tp)
			for r := range gpus {
				gpus[r] = d.Ordinal
			}
			devs, pl, err := openRanks(gpus, true) // as NewTarget with RIGSCOPE_CUDA_RANKDEVS=each
			if err != nil {
				return fmt.Errorf("tp %d each: %w", tp, err)
			}
			t, err = loadOn(devs, pl, ws, 1024, t0KV())
			if err == nil && !t.anyRemote() {
				err = fmt.Errorf("tp %d each: no rank took the remote path", tp)
			}
		}
		if err != nil {
			return fmt.Errorf("tp %d %s: %w", tp, path, err)
		}
		backends := []string{"oneshot"}
		if tp > 1 {
			backends = []string{"oneshot", "twoshot", "host", "auto"}
			if err := t.SetAllReduce(ctx, "nccl", tp0.GroupOptions{}); err != nil {
				fmt.Fprintf(stdout, "%-4d %-6s %-8s refused: %v\n", tp, path, "nccl", err)
			}
		}
		for _, b := range backends {
			lat, bytes := metrics.NewLatencySet(), metrics.NewRankBytes(tp)
			var note string
			o := tp0.GroupOptions{Latency: lat, Bytes: bytes, CacheDir: cache, Warn: func(m string) { note = m }}
			if err := t.SetAllReduce(ctx, b, o); err != nil {
				t.Close()
				return fmt.Errorf("tp %d %s %s: %w", tp, path, b, err)
			}
			same, sameRef, maxRel := 0, 0, 0.0
			for pi, p := range ref.Prompts {
				l, toks, err := gpuGreedy(ctx, t, p.PromptIDs, len(p.TargetGreedy))
				if err != nil {
					t.Close()
					return fmt.Errorf("tp %d %s %s, prompt %d: %w", tp, path, b, pi, err)
				}
				if tp == 1 {
					base, baseLogits = append(base, toks), append(baseLogits, l)
				}
				if slices.Equal(toks, base[pi]) {
					same++
				}
				if slices.Equal(toks, p.TargetGreedy) {
					sameRef++
				}
				var num, den float64
				for i := range l {
					num = math.Max(num, math.Abs(float64(l[i]-baseLogits[pi][i])))
					den = math.Max(den, math.Abs(float64(baseLogits[pi][i])))
				}
				maxRel = math.Max(maxRel, num/math.Max(den, 1e-30))
			}
			if same != len(ref.Prompts) {
				failed = append(failed, fmt.Sprintf("tp %d %s %s: greedy = tp1 on %d/%d", tp, path, b, same, len(ref.Prompts)))
			}
			var p50, p99 float64
			var calls int64
			if sm, ok := metrics.DominantBucket(lat.Summaries(), b); ok {
				p50, p99, calls = float64(sm.P50)/1e3, float64(sm.P99)/1e3, int64(sm.Count)
			}
			var sent int64
			if s := bytes.Sent(); len(s) > 0 {
				sent = s[0]
			}
			fmt.Fprintf(stdout, "%-4d %-6s %-8s %9d/%d %9d/%d %14.2e %9.2f %9.2f %7d %14d\n", tp, path, b, same, len(ref.Prompts), sameRef, len(ref.Prompts), maxRel, p50, p99, calls, sent)
			if a := t.AllReduceTable(); a != nil {
				fmt.Fprintf(stdout, "     auto: %s (%s)\n", a.Describe(), a.Note)
			}
			if note != "" {
				fmt.Fprintf(stdout, "     warning: %s\n", note)
			}
		}
		if path == "each" {
			if msg := checkRankFails(ctx, t, ref.Prompts[0].PromptIDs, base[0]); msg != "" {
				failed = append(failed, fmt.Sprintf("tp %d each: %s", tp, msg))
			}
		}
		t.Close()
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

// t0KV is the cache format LoadTP uses (RIGSCOPE_CUDA_KV).
func t0KV() kvFormat { t, _ := CurrentTuning(); return t.KV }

// checkRankFails makes the last rank fail in the middle of a step (its
// phases refuse to enqueue): the step must return that rank's error, not
// hang, keep the cache length, and the target must give want's greedy
// tokens again once the rank works. It returns what went wrong ("" when
// nothing did).
func checkRankFails(ctx context.Context, t *Target, prompt, want []int32) string {
	if _, _, err := gpuGreedy(ctx, t, prompt, 2); err != nil {
		return fmt.Sprintf("before the failure: %v", err)
	}
	t.UseGraphs = true
	t.dropGraphs() // the failing rank fails while its step is captured
	n := t.Len()
	t.failRank = len(t.ranks)
	_, err := t.ForwardIDs(ctx, model.Batch{Tokens: want[:1], Logits: model.LogitsLast})
	t.failRank = 0
	rank := fmt.Sprintf("rank %d on GPU", len(t.ranks)-1)
	switch {
	case err == nil:
		return "a failing rank's step succeeded"
	case !strings.Contains(err.Error(), rank) || !strings.Contains(err.Error(), "injected"):
		return fmt.Sprintf("a failing rank's step said %q, want %q and the rank's error", err, rank)
	case t.Len() != n:
		return fmt.Sprintf("the failed step left %d cached positions, want %d", t.Len(), n)
	}
	_, toks, err := gpuGreedy(ctx, t, prompt, len(want))
	if err != nil {
		return fmt.Sprintf("after the failure: %v", err)
	}
	if !slices.Equal(toks, want) {
		return "after the failure: greedy differs from TP 1"
	}
	return ""
}
