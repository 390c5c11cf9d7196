//go:build cuda

package cuda

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

var checkHeadKnobs = flag.String("headknobs", "base", "headknobs check: variants separated by ';', each a label and RIGSCOPE_CUDA_* assignments joined by '&' (label NAME=V&NAME2=V2; NAME without the prefix)")

// checkHeadKnobsRun times the 8B-shaped head (loadHead8B) under tuning
// variants in one process, alternating them over rounds: the one draft
// step (a chain of 1 row and 1 token, host time per call, as head8b) and
// a draft step inside a chain ((1 row 5 tokens - 1 row 1 token)/4), the
// median of the rounds, then each variant's kernel profile.
func checkHeadKnobsRun(ctx context.Context, d *Device, stdout io.Writer) error {
	const reps, rounds, ctxLen, base = 50, 7, 1024, 512
	type variant struct {
		label     string
		tune      Tuning
		one, step []float64
	}
	var vs []*variant
	for _, f := range strings.Split(*checkHeadKnobs, ";") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		label, assign, _ := strings.Cut(f, " ")
		env := map[string]string{}
		for _, a := range strings.Split(assign, "&") {
			if k, v, ok := strings.Cut(strings.TrimSpace(a), "="); ok {
				env["RIGSCOPE_CUDA_"+k] = v
			}
		}
		tv, err := ParseTuning(func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			return os.LookupEnv(k)
		})
		if err != nil {
			return fmt.Errorf("variant %q: %w", f, err)
		}
		vs = append(vs, &variant{label: label, tune: tv})
	}
	dh, err := loadHead8B(d, ctxLen)
	if err != nil {
		return err
	}
	defer dh.Close()
	prompt := []int32{1000}
	feats := make([]float32, dh.fw)
	for i := range feats {
		feats[i] = float32(i%13-6) * 0.05
	}
	chain := func(k int) func() error {
		return func() error {
			_, err := dh.GreedyChain(ctx, base, prompt, feats, k)
			return err
		}
	}
	use := func(v *variant) error {
		unbind, err := d.Bind()
		if err != nil {
			return err
		}
		defer unbind()
		if err := dh.stream.Synchronize(); err != nil {
			return err
		}
		for _, g := range dh.graphs {
			g.destroy()
		}
		clear(dh.graphs)
		dh.tune = v.tune
		dh.pdl = d.Major >= 9 && v.tune.PDL
		return nil
	}
	for range rounds {
		for _, v := range vs {
			if err := use(v); err != nil {
				return err
			}
			one, err := usPerCall(5, reps, chain(1))
			if err != nil {
				return fmt.Errorf("%s: %w", v.label, err)
			}
			five, err := usPerCall(5, reps, chain(5))
			if err != nil {
				return fmt.Errorf("%s: %w", v.label, err)
			}
			v.one, v.step = append(v.one, one), append(v.step, (five-one)/4)
		}
	}
	med := func(x []float64) float64 { y := slices.Clone(x); slices.Sort(y); return y[len(y)/2] }
	fmt.Fprintf(stdout, "\nheadknobs: EAGLE-3 8B-shaped head, us per call (median of %d rounds of %d, variants alternating)\n", rounds, reps)
	for _, v := range vs {
		fmt.Fprintf(stdout, "%-14s one step %7.1f  chain step %7.1f   (one:", v.label, med(v.one), med(v.step))
		for _, x := range v.one {
			fmt.Fprintf(stdout, " %.1f", x)
		}
		fmt.Fprintln(stdout, ")")
	}
	for _, v := range vs {
		if err := use(v); err != nil {
			return err
		}
		hk, err := headKernelTimes(d, dh)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-14s kernels:", v.label)
		for _, k := range hk {
			fmt.Fprintf(stdout, " %s %.1f %.0f;", k.Kind, k.Micros, k.GBps)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
