package planner

import (
	"context"
	"fmt"
	"sort"
	"time"

	"rigscope/engine"
	"rigscope/engine/tp"
)

// Timer times the product path: the engine's forward and drafters
// (*engine.Engine implements it).
type Timer interface {
	TimeForward(ctx context.Context, tpSize int, backend string, tokens []int, reps int) ([]engine.ForwardTiming, error)
	TimeDraft(ctx context.Context, dc engine.DrafterConfig, contextLen, reps int) ([]time.Duration, error)
}

// RefBackend is the backend compute is timed with at TP > 1; other
// backends' forwards swap its allreduce calls for theirs.
const RefBackend = "oneshot"

// Calibration says how hard to measure.
type Calibration struct {
	Reps int // repetitions per timed cell (0: 7)
	// DraftContext is the context a drafter is timed after (0: 128).
	DraftContext int
	// Progress, when set, hears what is being measured.
	Progress func(what string)
}

// TokenSizes are the batch sizes the compute and allreduce tables are
// measured at for verifies of up to maxTokens rows: every size up to 9,
// then powers of two plus one, and maxTokens.
func TokenSizes(maxTokens int) []int {
	var out []int
	for n := 1; n <= min(maxTokens, 9); n++ {
		out = append(out, n)
	}
	for n := 17; n < maxTokens; n = 2*n - 1 {
		out = append(out, n)
	}
	if maxTokens > 9 {
		out = append(out, maxTokens)
	}
	return out
}

// Measure runs what the predictions' Missing lists name through t (the
// forward and the drafters on the engine's device, the allreduce table on
// CPU ranks), adds it to c and saves c. Allreduce cells are measured for
// every size the compute table is (so interpolation has neighbours);
// compute cells per TP size with RefBackend. A device's own allreduce
// table is not measured here: its absence is refused by name.
func Measure(ctx context.Context, c *Cache, t Timer, shape Shape, preds []Prediction, opt Calibration) error {
	if opt.Reps <= 0 {
		opt.Reps = 7
	}
	if opt.DraftContext <= 0 {
		opt.DraftContext = 128
	}
	say := func(f string, a ...any) {
		if opt.Progress != nil {
			opt.Progress(fmt.Sprintf(f, a...))
		}
	}
	maxTokens := 1
	type arKey struct {
		device  string
		ranks   int
		backend string
	}
	type drKey struct {
		drafter, path string
		k, tree       int
		device        string
	}
	computeTP := map[int]bool{}
	arCells := map[arKey]bool{}
	drafts := map[drKey]bool{}
	for _, p := range preds {
		cfg := p.Config
		if cfg.Speculative() {
			maxTokens = max(maxTokens, cfg.VerifyTokens())
		}
		if p.OK() || p.Unfit != "" {
			continue
		}
		// What is missing past the first gap is not listed: look again.
		need := []int{1}
		if cfg.Speculative() {
			need = append(need, cfg.VerifyTokens())
		}
		for _, n := range need {
			if _, _, m := c.Compute.Lookup(shape.Key, cfg.Device, cfg.TP, n); m != nil {
				computeTP[cfg.TP] = true
			}
			if cfg.TP == 1 {
				continue
			}
			backends := []string{cfg.Backend, RefBackend}
			if cfg.Backend == "auto" {
				backends = []string{"ring", "tree", "oneshot", "twoshot"}
			}
			for _, b := range backends {
				if _, m := c.AllReduce.Lookup(cfg.Device, cfg.TP, b, shape.MessageBytes(n)); m != nil {
					arCells[arKey{cfg.Device, cfg.TP, b}] = true
				}
			}
		}
		for _, m := range p.Missing {
			if m.Kind == "draft" && cfg.Drafter != "eagle3" { // a head's draft time comes from its runs
				drafts[drKey{cfg.Drafter, cfg.DrafterPath, cfg.K, cfg.Tree, cfg.Device}] = true
			}
		}
	}
	sizes := TokenSizes(maxTokens)
	for tpSize := range computeTP {
		if tpSize > 1 {
			arCells[arKey{"cpu", tpSize, RefBackend}] = true
		}
	}
	for _, k := range sortedKeys(arCells, func(a, b arKey) bool { return a.ranks < b.ranks || a.ranks == b.ranks && a.backend < b.backend }) {
		if k.device != "cpu" {
			return fmt.Errorf("planner: no allreduce table of %s on %d %s ranks: the planner measures CPU ranks' allreduce only; allreduce-bench --device %s measures the device's backends", k.backend, k.ranks, k.device, k.device)
		}
		say("allreduce: %s on %d ranks", k.backend, k.ranks)
		for _, n := range sizes {
			us, err := TimeAllReduce(ctx, k.backend, k.ranks, shape.MessageBytes(n), opt.Reps)
			if err != nil {
				return err
			}
			c.putAllReduce(AllReducePoint{Device: k.device, Ranks: k.ranks, Backend: k.backend, Bytes: shape.MessageBytes(n), Us: us})
		}
	}
	for _, tpSize := range sortedKeys(computeTP, func(a, b int) bool { return a < b }) {
		backend := ""
		if tpSize > 1 {
			backend = RefBackend
		}
		say("compute: forward of %v tokens at TP %d", sizes, tpSize)
		fts, err := t.TimeForward(ctx, tpSize, backend, sizes, opt.Reps)
		if err != nil {
			return fmt.Errorf("planner: timing the forward at TP %d: %w", tpSize, err)
		}
		for _, ft := range fts {
			c.putCompute(ComputePoint{Model: shape.Key, Device: ft.Device, TP: ft.TP, Backend: ft.Backend, Tokens: ft.Tokens,
				WallUs: SpreadOf(micros(ft.Walls)), AllReduceUs: SpreadOf(micros(ft.AllReduce)), Calls: ft.Calls})
		}
	}
	for _, k := range sortedKeys(drafts, func(a, b drKey) bool { return a.drafter < b.drafter || a.drafter == b.drafter && a.k < b.k }) {
		say("draft: %s k=%d", k.drafter, k.k)
		ds, err := t.TimeDraft(ctx, engine.DrafterConfig{Kind: k.drafter, Path: k.path, K: k.k, Tree: k.tree}, opt.DraftContext, opt.Reps)
		if err != nil {
			return fmt.Errorf("planner: timing the %s drafter at k=%d: %w", k.drafter, k.k, err)
		}
		key := Config{Drafter: k.drafter, DrafterPath: k.path}.DrafterKey()
		c.putDraft(DraftPoint{Drafter: key, Device: k.device, K: k.k, Tree: k.tree, Us: SpreadOf(micros(ds))})
	}
	return c.Save()
}

// TimeAllReduce measures one allreduce call of bytes on ranks CPU ranks
// with backend: reps runs of as many calls as fit in about 20 ms (2 to
// 30, so values stay finite), each run's mean per call one sample,
// summarized by SpreadOf.
func TimeAllReduce(ctx context.Context, backend string, ranks int, bytes int64, reps int) (Range, error) {
	g, err := tp.NewGroup(backend, ranks, tp.GroupOptions{})
	if err != nil {
		return Range{}, fmt.Errorf("planner: %w", err)
	}
	elems := int(max(bytes/4, 1))
	fresh := tp.RandomInputs(ranks, elems, 1)
	bufs := tp.RandomInputs(ranks, elems, 1)
	reset := func() {
		for r := range bufs {
			copy(bufs[r], fresh[r])
		}
	}
	once, err := tp.Measure(ctx, g, bufs, 1)
	if err != nil {
		return Range{}, fmt.Errorf("planner: %s allreduce of %d bytes on %d ranks: %w", backend, bytes, ranks, err)
	}
	iters := 2
	if once > 0 {
		iters = int(min(30, max(2, int64(20*time.Millisecond/once))))
	}
	samples := make([]float64, 0, reps)
	for range reps {
		reset()
		d, err := tp.Measure(ctx, g, bufs, iters)
		if err != nil {
			return Range{}, fmt.Errorf("planner: %s allreduce of %d bytes on %d ranks: %w", backend, bytes, ranks, err)
		}
		samples = append(samples, float64(d.Nanoseconds())/1e3)
	}
	return SpreadOf(samples), nil
}

func sortedKeys[K comparable](m map[K]bool, less func(a, b K) bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}
