//go:build cuda

package cuda

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
)

var checkPresets = flag.String("presets", "tiny-mla,deepseek-v3", "synthetic presets (engine/loader/synthetic) the presets check builds on the device and steps")

// checkPresetSteps builds each synthetic preset of names on the device
// (LoadSyntheticTP: the weights the benchmarks time, random, never read
// on the host) at TP 1 and 2, runs a prompt of 40 tokens, 8 decode steps,
// then times 32 decode steps and 8 verifies of 5: it fails when a step
// fails or returns a token outside the vocabulary, and prints each step's
// time against the bytes one decode token reads (WeightBytes: an MoE
// layer's k experts, shared expert and router; the latent attention's
// products and up-projections), the figure cuda-bench divides the
// bandwidth by.
func checkPresetSteps(ctx context.Context, d *Device, names string, stdout io.Writer) error {
	fmt.Fprintf(stdout, "\nsynthetic presets on the device: decode and verify-of-5 step times (ctx 40..80), bytes one decode token reads\n")
	fmt.Fprintf(stdout, "%-16s %2s %10s %12s %10s %12s\n", "preset", "tp", "token GB", "decode us", "GB/s", "verify5/dec")
	var failed []string
	for _, name := range strings.Split(names, ",") {
		cfg, ok := synthetic.Presets[name]
		if !ok {
			return fmt.Errorf("cuda-check: presets: unknown preset %q", name)
		}
		for _, tp := range []int{1, 2} {
			if err := presetSteps(ctx, d, name, cfg, tp, stdout); err != nil {
				failed = append(failed, fmt.Sprintf("%s tp %d: %v", name, tp, err))
				fmt.Fprintf(stdout, "%-16s %2d ERROR: %v\n", name, tp, err)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("cuda-check: presets: %s", strings.Join(failed, "; "))
	}
	return nil
}

func presetSteps(ctx context.Context, d *Device, name string, cfg model.Config, tp int, stdout io.Writer) error {
	t, err := LoadSyntheticTP(d, cfg, tp, 512, 1)
	if err != nil {
		return err
	}
	defer t.Close()
	rng := rand.New(rand.NewPCG(7, uint64(tp)))
	toks := func(n int) []int32 {
		b := make([]int32, n)
		for i := range b {
			b[i] = int32(rng.IntN(cfg.Vocab))
		}
		return b
	}
	if _, err := t.Forward(ctx, model.Batch{Tokens: toks(40), Logits: model.LogitsNone}); err != nil {
		return fmt.Errorf("prompt: %w", err)
	}
	step := func(n int) (time.Duration, error) {
		t0 := time.Now()
		ids, err := t.ForwardIDs(ctx, model.Batch{Tokens: toks(n), Logits: model.LogitsAll})
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			if id < 0 || int(id) >= cfg.Vocab {
				return 0, fmt.Errorf("token %d outside the vocabulary of %d", id, cfg.Vocab)
			}
		}
		return time.Since(t0), nil
	}
	for range 8 {
		if _, err := step(1); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
	}
	var dec, ver time.Duration
	for range 32 {
		dt, err := step(1)
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		dec += dt
	}
	for range 8 {
		dt, err := step(5)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		ver += dt
		if err := t.Rewind(t.Len() - 5); err != nil {
			return err
		}
	}
	us := float64(dec.Microseconds()) / 32
	gb := float64(t.WeightBytes()) / 1e9
	fmt.Fprintf(stdout, "%-16s %2d %10.3f %12.1f %10.0f %12.2f\n", name, tp, gb, us, gb/(us*1e-6), (float64(ver.Microseconds())/8)/us)
	return nil
}
