package planner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
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

// RefBackend is the backend a forward timed with is preferred as the
// stand-in for a backend whose forward was not timed (its allreduce calls
// swapped for the other's per the allreduce table).
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
// forward and the drafters on the engine's device), adds it to c and
// saves c. The forward is timed per TP size and backend, at every batch
// size up to the largest verify (TokenSizes), the backends of one TP size
// interleaved so a burst of load elsewhere on the machine falls on all of
// them alike (timeForwards). auto is timed as the backends its table
// (auto[tp]) picks. Allreduce tables are not measured here: the timed
// forward holds the calls as a run makes them; a device's table
// (allreduce-bench) only stands in for a forward that was not timed.
func Measure(ctx context.Context, c *Cache, t Timer, shape Shape, auto map[int]*tp.AutoTable, preds []Prediction, opt Calibration) error {
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
	for _, p := range preds {
		if p.Config.Speculative() {
			maxTokens = max(maxTokens, p.Config.VerifyTokens())
		}
	}
	sizes := TokenSizes(maxTokens)
	type drKey struct {
		drafter, path string
		k, tree       int
		device        string
	}
	forwards := map[int]map[string]bool{} // TP size -> backends to time
	drafts := map[drKey]bool{}
	device := "cpu"
	for _, p := range preds {
		cfg := p.Config
		device = cfg.Device
		if p.OK() || p.Unfit != "" {
			continue
		}
		backends, err := timedBackends(cfg, auto, shape, sizes)
		if err != nil {
			return err
		}
		// What is missing past the first gap is not listed: look again.
		need := []int{1}
		if cfg.Speculative() {
			need = append(need, cfg.VerifyTokens())
		}
		for _, b := range backends {
			for _, n := range need {
				if _, m := c.Compute.Lookup(shape.Key, cfg.Device, cfg.TP, b, n); m != nil {
					if forwards[cfg.TP] == nil {
						forwards[cfg.TP] = map[string]bool{}
					}
					forwards[cfg.TP][b] = true
				}
			}
		}
		for _, m := range p.Missing {
			if m.Kind == "draft" && cfg.Drafter != "eagle3" { // a head's draft time comes from its runs
				drafts[drKey{cfg.Drafter, cfg.DrafterPath, cfg.K, cfg.Tree, cfg.Device}] = true
			}
		}
	}
	for _, tpSize := range sortedKeys(forwards, func(a, b int) bool { return a < b }) {
		backends := sortedKeys(forwards[tpSize], func(a, b string) bool { return a < b })
		say("compute: forward of %v tokens at TP %d (%s)", sizes, tpSize, strings.Join(backendWords(backends), ", "))
		perPass := repsPerPass
		if device != "cpu" {
			perPass = opt.Reps // a device target is rebuilt (weights uploaded) when its backend changes
		}
		pts, err := timeForwards(ctx, t, tpSize, backends, sizes, opt.Reps, perPass)
		if err != nil {
			return err
		}
		for _, p := range pts {
			p.Model = shape.Key
			c.putCompute(p)
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

// timedBackends is what a configuration's forward is timed with: nothing
// at TP 1, the backends auto's table picks over sizes, else its backend.
func timedBackends(cfg Config, auto map[int]*tp.AutoTable, shape Shape, sizes []int) ([]string, error) {
	switch {
	case cfg.TP == 1:
		return []string{""}, nil
	case cfg.Backend != "auto":
		return []string{cfg.Backend}, nil
	}
	t := auto[cfg.TP]
	if t == nil || len(t.Rules) == 0 {
		return nil, fmt.Errorf("planner: %s", Missing{Kind: "allreduce", Device: cfg.Device, TP: cfg.TP, Backend: "auto"})
	}
	var out []string
	for _, n := range sizes {
		if b := t.Pick(shape.MessageBytes(n)); !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out, nil
}

func backendWords(backends []string) []string {
	out := slices.Clone(backends)
	for i, b := range out {
		if b == "" {
			out[i] = "no allreduce"
		}
	}
	return out
}

// repsPerPass is how many repetitions of one backend timeForwards takes
// before the next backend's on CPU ranks: one, so every pass over the
// backends is short (a few seconds) and a stretch of load from elsewhere
// on the machine falls on all of a pass's backends alike. Each pass pays
// a warm-up.
const repsPerPass = 1

// timeForwards times the forward at TP tpSize with each backend at each
// batch size, reps samples each. With several backends, they take turns,
// perPass repetitions at a time (repsPerPass on CPU ranks), the order
// reversed every pass; then each sample is scaled by how much slower its
// pass ran than the passes' median (passLevels), so load from elsewhere
// on the machine that slowed a whole pass does not count against the
// backends timed in it, while a backend's own cost does. The points lack
// their Model.
func timeForwards(ctx context.Context, t Timer, tpSize int, backends []string, sizes []int, reps, perPass int) ([]ComputePoint, error) {
	type acc struct {
		device string
		calls  int
		walls  [][]float64 // per pass, microseconds
		ar     []time.Duration
	}
	got := map[string]map[int]*acc{}
	passes := []int{reps}
	if len(backends) > 1 && reps >= 2 {
		passes = nil
		for left := reps; left > 0; left -= perPass {
			passes = append(passes, min(left, perPass))
		}
	}
	for pass, n := range passes {
		order := slices.Clone(backends)
		if pass%2 == 1 {
			slices.Reverse(order)
		}
		for _, b := range order {
			fts, err := t.TimeForward(ctx, tpSize, b, sizes, n)
			if err != nil {
				if b == "" {
					return nil, fmt.Errorf("planner: timing the forward at TP %d: %w", tpSize, err)
				}
				return nil, fmt.Errorf("planner: timing the forward at TP %d with %s: %w", tpSize, b, err)
			}
			if got[b] == nil {
				got[b] = map[int]*acc{}
			}
			for _, ft := range fts {
				a := got[b][ft.Tokens]
				if a == nil {
					a = &acc{device: ft.Device, walls: make([][]float64, len(passes))}
					got[b][ft.Tokens] = a
				}
				a.calls = ft.Calls
				a.walls[pass] = append(a.walls[pass], micros(ft.Walls)...)
				a.ar = append(a.ar, ft.AllReduce...)
			}
		}
	}
	var out []ComputePoint
	for _, n := range sizes {
		cells := make([][][]float64, len(backends)) // backend, pass, samples
		for i, b := range backends {
			a := got[b][n]
			if a == nil {
				return nil, fmt.Errorf("planner: timing the forward at TP %d: no timing of %d tokens came back", tpSize, n)
			}
			cells[i] = a.walls
		}
		levels := passLevels(cells)
		for _, b := range backends {
			a := got[b][n]
			var walls []float64
			for p, xs := range a.walls {
				for _, x := range xs {
					walls = append(walls, x/levels[p])
				}
			}
			if len(walls) == 0 {
				return nil, fmt.Errorf("planner: timing the forward at TP %d with %s: no timing of %d tokens came back", tpSize, backendWords([]string{b})[0], n)
			}
			out = append(out, ComputePoint{Device: a.device, TP: tpSize, Backend: b, Tokens: n,
				WallUs: SpreadOf(walls), AllReduceUs: SpreadOf(micros(a.ar)), Calls: a.calls})
		}
	}
	slices.SortStableFunc(out, func(x, y ComputePoint) int { return strings.Compare(x.Backend, y.Backend) })
	return out, nil
}

// passLevels is, per pass, how much slower than usual the machine ran it:
// the median over backends of (the backend's median in the pass / its
// median over all passes). 1 for every pass when there is one backend
// (nothing to tell a backend's cost from the load with) or one pass.
func passLevels(cells [][][]float64) []float64 {
	nPass := 0
	for _, c := range cells {
		nPass = max(nPass, len(c))
	}
	levels := make([]float64, nPass)
	for p := range levels {
		levels[p] = 1
	}
	if len(cells) < 2 || nPass < 2 {
		return levels
	}
	overall := make([]float64, len(cells))
	for i, c := range cells {
		var all []float64
		for _, xs := range c {
			all = append(all, xs...)
		}
		overall[i] = SpreadOf(all).V
	}
	for p := range levels {
		var ratios []float64
		for i, c := range cells {
			if p < len(c) && len(c[p]) > 0 && overall[i] > 0 {
				ratios = append(ratios, SpreadOf(c[p]).V/overall[i])
			}
		}
		if r := SpreadOf(ratios).V; r > 0 {
			levels[p] = r
		}
	}
	return levels
}

func sortedKeys[K comparable, V any](m map[K]V, less func(a, b K) bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}
