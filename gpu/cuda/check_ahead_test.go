//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"rigscope/engine/spec"
)

// checkAhead compares plain greedy decoding through spec.Generate with
// steps enqueued a step ahead (ahead.go, the default) and one step at a
// time (ForwardIDs; RIGSCOPE_CUDA_AHEAD=0), in one process, alternating:
// the tokens must be equal, and the rates say what the host's round trip
// cost. gocoder-14m on the 12 public prompts (when the fixtures are
// there) and the llama-8b shape (synthetic bf16 weights) with a
// 384-token prompt and 256 new tokens, as bench/cuda/product.sh runs it.
func checkAhead(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	type job struct {
		name    string
		t       *Target
		prompts [][]int32
		n       int
	}
	var jobs []job
	if _, err := os.Stat(filepath.Join(models, "gocoder-14m-hf")); err == nil {
		ref, err := readRef(models)
		if err != nil {
			return err
		}
		t, closeT, err := loadTarget1k(d, filepath.Join(models, "gocoder-14m-hf"))
		if err != nil {
			return err
		}
		defer closeT()
		j := job{name: "gocoder-14m", t: t, n: 64}
		for _, p := range ref.Prompts {
			j.prompts = append(j.prompts, p.PromptIDs)
		}
		jobs = append(jobs, j)
	}
	cfg := kvTestConfig
	cfg.MaxSeq = 8192
	t8, err := LoadSyntheticTP(d, cfg, 1, 1024, 1)
	if err != nil {
		return err
	}
	defer t8.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	p8 := make([]int32, 384)
	for i := range p8 {
		p8[i] = int32(rng.IntN(cfg.Vocab))
	}
	jobs = append(jobs, job{name: "llama-8b shape", t: t8, prompts: [][]int32{p8}, n: 256})

	fmt.Fprintf(stdout, "\nplain greedy decoding through spec.Generate: steps enqueued ahead against one at a time (ForwardIDs), alternating, tok/s of the decode (3 rounds)\n")
	fmt.Fprintf(stdout, "%-16s %8s %14s %14s %8s\n", "model", "prompts", "one at a time", "ahead", "ratio")
	var fails []string
	for _, j := range jobs {
		var rate [2][]float64
		var toks [2][][]int32
		for round := 0; round < 4; round++ { // round 0 warms up (graphs)
			for mode, on := range []bool{false, true} {
				j.t.tune.Ahead = on
				var n int
				var s float64
				var got [][]int32
				for _, p := range j.prompts {
					res, err := spec.Generate(ctx, j.t, p, spec.Options{MaxTokens: j.n, EOS: -1})
					if err != nil {
						j.t.tune.Ahead = true
						return fmt.Errorf("%s (ahead %v): %w", j.name, on, err)
					}
					n += len(res.Tokens) - 1
					s += res.Decode.Seconds()
					got = append(got, res.Tokens)
				}
				if round > 0 {
					rate[mode] = append(rate[mode], float64(n)/s)
				}
				toks[mode] = got
			}
		}
		j.t.tune.Ahead = true
		same := 0
		for i := range toks[0] {
			if slices.Equal(toks[0][i], toks[1][i]) {
				same++
			} else {
				fails = append(fails, fmt.Sprintf("%s prompt %d: ahead %v, one at a time %v", j.name, i, toks[1][i], toks[0][i]))
			}
		}
		a, b := median(rate[0]), median(rate[1])
		fmt.Fprintf(stdout, "%-16s %5d/%-2d %14.1f %14.1f %8.3f   (tokens equal in %d of %d prompts; rounds %.1f vs %.1f)\n",
			j.name, same, len(toks[0]), a, b, b/a, same, len(toks[0]), rate[0], rate[1])
	}
	if len(fails) > 0 {
		return fmt.Errorf("cuda-check: ahead: %v", fails)
	}
	return nil
}
