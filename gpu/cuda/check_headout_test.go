//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"unsafe"

	"gorgonia.org/cu"
)

// headOutMode is one way of running a greedy chain's draft tokens, for
// checkHeadOut: the fused draft token kernel (Tuning.HeadOut) or not, and
// with the next step's input built in the last kernel (EagleInFold) or
// not. Each mode keeps its own graphs, so the modes alternate without
// capturing again.
type headOutMode struct {
	label         string
	out, fold     bool
	graphs        map[[2]int]*graph
	toks          int // chains whose tokens equal the first mode's
	bits          int // chains whose last logits are bitwise the first mode's
	c54, c11, c15 []float64
	host          []float64
}

// checkHeadOut checks and times the fused draft token (tcnam*,
// kernels/headout.cu) on h in one process: chains random chains (1..16
// extended rows of random tokens and features at slot base, after a
// random prefix, k 1..8) run in each mode, their drafted tokens and their
// last draft step's logits compared with the unfused path's; then the
// device time per replay of the graphs of 5 rows and 4 tokens, 1 row and 1
// token, 1 row and 5 tokens, modes alternating over rounds (medians), and
// each mode's kernels (ungraphed). An error when any chain's tokens differ.
func checkHeadOut(ctx context.Context, d *Device, h *Head, label string, chains int, stdout io.Writer) (err error) {
	const base, rounds, maxK = 256, 5, 8
	c := h.cfg
	orig, origGraphs := h.tune, h.graphs
	modes := []*headOutMode{
		{label: "off", fold: orig.EagleInFold, graphs: origGraphs},
		{label: "on", out: true, fold: orig.EagleInFold, graphs: map[[2]int]*graph{}},
		{label: "on,nofold", out: true, fold: false, graphs: map[[2]int]*graph{}},
	}
	defer func() {
		unbind, berr := d.Bind()
		if berr == nil {
			if serr := h.stream.Synchronize(); serr != nil && err == nil {
				err = serr
			}
			for _, m := range modes[1:] {
				for _, g := range m.graphs {
					g.destroy()
				}
			}
			unbind()
		}
		h.tune, h.graphs = orig, origGraphs
	}()
	use := func(m *headOutMode) error {
		unbind, err := d.Bind()
		if err != nil {
			return err
		}
		defer unbind()
		if err := h.stream.Synchronize(); err != nil {
			return err
		}
		h.tune.HeadOut, h.tune.EagleInFold, h.graphs = m.out, m.fold, m.graphs
		return nil
	}
	name := fmt.Sprintf("tcnam%d_", h.tcWarps("output", h.lm.rows, false))
	if s, err := kernelSuffix(h.emb.dt); err == nil {
		name += s
	}
	if !h.lm.tiled || !h.dev.has(name) {
		fmt.Fprintf(stdout, "\nheadout (%s): no fused draft token kernel %s (lm_head tiled %v): every mode runs the unfused path\n", label, name, h.lm.tiled)
	}
	rng := rand.New(rand.NewPCG(19, uint64(chains)))
	feat := func(n int) []float32 {
		f := make([]float32, n*h.fw)
		for i := range f {
			f[i] = float32(rng.NormFloat64())
		}
		return f
	}
	tok := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(rng.IntN(c.Vocab))
		}
		return t
	}
	if err := h.Extend(ctx, 0, tok(base), feat(base)); err != nil {
		return fmt.Errorf("headout: prefix: %w", err)
	}
	lastLogits := func() ([]uint32, error) {
		unbind, err := d.Bind()
		if err != nil {
			return nil, err
		}
		defer unbind()
		v := make([]uint32, c.DraftVocab)
		if err := cu.MemcpyDtoH(unsafe.Pointer(&v[0]), h.logits, int64(4*len(v))); err != nil {
			return nil, fmt.Errorf("headout: logits back: %w", err)
		}
		return v, nil
	}
	var shown int
	for i := range chains {
		T, k := 1+rng.IntN(MaxTokens), 1+rng.IntN(maxK)
		toks, feats := tok(T), feat(T)
		var ref []int32
		var refL []uint32
		for mi, m := range modes {
			if err := use(m); err != nil {
				return err
			}
			got, err := h.GreedyChain(ctx, base, toks, feats, k)
			if err != nil {
				return fmt.Errorf("headout %s: chain %d: %w", m.label, i, err)
			}
			got = slices.Clone(got)
			l, err := lastLogits()
			if err != nil {
				return err
			}
			if mi == 0 {
				ref, refL = got, l
			}
			if slices.Equal(got, ref) {
				m.toks++
			} else if shown++; shown <= 5 {
				fmt.Fprintf(stdout, "headout %s: chain %d (%d rows, k %d): tokens %v, unfused %v\n", m.label, i, T, k, got, ref)
			}
			if slices.Equal(l, refL) {
				m.bits++
			} else if shown++; shown <= 5 {
				worst := 0.0
				for j := range l {
					a, b := float64(math.Float32frombits(l[j])), float64(math.Float32frombits(refL[j]))
					worst = max(worst, math.Abs(a-b)/max(math.Abs(b), 1e-30))
				}
				fmt.Fprintf(stdout, "headout %s: chain %d (%d rows, k %d): last logits differ, max rel %.2e\n", m.label, i, T, k, worst)
			}
		}
	}
	// Timing: the graphs on the chain of 5 rows (its step parameters set by
	// one call in the mode first), modes alternating.
	toks5, feats5 := tok(5), feat(5)
	for range rounds {
		for _, m := range modes {
			if err := use(m); err != nil {
				return err
			}
			host, err := usPerCall(10, 200, func() error {
				_, err := h.GreedyChain(ctx, base, toks5, feats5, 4)
				return err
			})
			if err != nil {
				return err
			}
			m.host = append(m.host, host)
			unbind, err := d.Bind()
			if err != nil {
				return err
			}
			tg, rel, err := streamTimer(h.stream)
			if err != nil {
				unbind()
				return err
			}
			for _, g := range []struct {
				dst  *[]float64
				rows int
				k    int
			}{{&m.c54, 5, 4}, {&m.c11, 1, 1}, {&m.c15, 1, 5}} {
				us, err := tg(300, func(int) error { return h.enqueueGraph(g.rows, g.k) })
				if err != nil {
					rel()
					unbind()
					return fmt.Errorf("headout %s: graph (%d, %d): %w", m.label, g.rows, g.k, err)
				}
				*g.dst = append(*g.dst, us)
			}
			rel()
			unbind()
		}
	}
	med := func(x []float64) float64 { y := slices.Clone(x); slices.Sort(y); return y[len(y)/2] }
	fmt.Fprintf(stdout, "\nheadout (%s, dim %d, draft vocab %d): fused draft token (RIGSCOPE_CUDA_HEADOUT=1, %s) vs lm_head + argmax_d2t(_in)\n", label, c.Dim, c.DraftVocab, name)
	fmt.Fprintf(stdout, "numerics, %d random chains (1..%d rows at %d, k 1..%d), against %s:", chains, MaxTokens, base, maxK, modes[0].label)
	for _, m := range modes[1:] {
		fmt.Fprintf(stdout, "  %s tokens equal %d/%d, last logits bitwise %d/%d;", m.label, m.toks, chains, m.bits, chains)
	}
	fmt.Fprintf(stdout, "\ndevice us per graph replay (median of %d rounds x 300, modes alternating) | host us per GreedyChain(5 rows, k 4)\n", rounds)
	for _, m := range modes {
		fmt.Fprintf(stdout, "  %-10s chain 5 rows 4 tokens %7.1f  chain 1 row 1 token %6.1f  chain 1 row 5 tokens %7.1f  (per draft step %.1f) | host %7.1f\n",
			m.label, med(m.c54), med(m.c11), med(m.c15), (med(m.c15)-med(m.c11))/4, med(m.host))
	}
	b, o := med(modes[0].c54), med(modes[1].c54)
	fmt.Fprintf(stdout, "  chain 5 rows 4 tokens: on/off %.3f (%+.1f us)\n", o/b, o-b)
	for _, m := range modes {
		if err := use(m); err != nil {
			return err
		}
		unbind, err := d.Bind()
		if err != nil {
			return err
		}
		p := &profiler{}
		h.prof = p
		err = h.enqueueChain(5, 4)
		h.prof = nil
		if err == nil {
			err = h.stream.Synchronize()
		}
		var kt []KernelTime
		if err == nil {
			kt, err = p.kernelTimes()
		}
		unbind()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  %-10s kernels of chain (5, 4), ungraphed:", m.label)
		for _, x := range kt {
			fmt.Fprintf(stdout, " %s %dx %.1f;", x.Kind, x.Launches, x.Micros)
		}
		fmt.Fprintln(stdout)
	}
	for _, m := range modes[1:] {
		if m.toks != chains {
			return fmt.Errorf("headout %s: drafted tokens differ from the unfused path's in %d of %d chains", m.label, chains-m.toks, chains)
		}
	}
	return nil
}
