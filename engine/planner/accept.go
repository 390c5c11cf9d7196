package planner

import (
	"fmt"
	"math"

	"rigscope/engine/stepstats"
)

// Acceptance is how a drafter behaves at one k, as the planner models it:
// the tokens a step yields, how often it proposes and how much, from the
// steps of earlier runs, or a stated default.
type Acceptance struct {
	Drafter string `json:"drafter"`
	K       int    `json:"k"`
	Tree    int    `json:"tree,omitempty"`
	// TokensPerStep is the mean tokens a step yields, the bonus token
	// counted (for a drafter that always proposes, the mean acceptance
	// length), with about its 95% interval.
	TokensPerStep Range `json:"tokens_per_step"`
	// ProposeRate is the share of steps that verified a proposal (an
	// n-gram drafter finds no match in some); MeanDrafted the nodes a
	// proposal had on average (a chain can be cut short).
	ProposeRate float64 `json:"propose_rate"`
	MeanDrafted float64 `json:"mean_drafted"`
	// Sizes is the share of steps whose verify had i proposed nodes
	// (index 0: no proposal, a plain step): a forward's time is not linear
	// in its rows, so the step time averages over the sizes, not at the
	// mean size.
	Sizes []float64 `json:"proposal_sizes"`
	// DraftUs is the runs' mean draft time per speculative step (0: none
	// logged), used when the draft table has no time for this drafter.
	DraftUs Range `json:"draft_us"`
	// PerPos is vLLM's per-position acceptance rate behind the figures.
	PerPos  []float64 `json:"per_pos,omitempty"`
	Steps   int       `json:"steps"`
	Source  string    `json:"source"`
	Default bool      `json:"default,omitempty"`
}

// DefaultAlpha is the default acceptance model's chance that a drafted
// token is accepted after an accepted one, with the range the default is
// stated with, when no run of a drafter was logged.
const (
	DefaultAlpha   = 0.5
	DefaultAlphaLo = 0.3
	DefaultAlphaHi = 0.7
)

// Book holds the step tallies of earlier runs per drafter, k and shape.
// The zero value is empty.
type Book struct {
	counts map[bookKey]*stepstats.Counts
	runs   map[bookKey]int
	sizes  map[bookKey][]int // (nodes+1) non-baseline steps that verified n proposed nodes
	loop   map[loopKey]*loopTally
}

type bookKey struct {
	drafter string
	k, tree int
}

// AddRun records an earlier run's steps: drafter is Config.DrafterKey, k
// and tree the run's shape. Baseline steps count only towards nothing
// here (they are plain on purpose).
func (b *Book) AddRun(drafter string, k, tree int, steps []stepstats.Step) {
	if drafter == "" || drafter == "none" || k < 1 || len(steps) == 0 {
		return
	}
	if b.counts == nil {
		b.counts, b.runs, b.sizes = map[bookKey]*stepstats.Counts{}, map[bookKey]int{}, map[bookKey][]int{}
	}
	key := bookKey{drafter, k, tree}
	c := b.counts[key]
	if c == nil {
		n := stepstats.NewCounts(k)
		c = &n
		b.counts[key] = c
	}
	sizes := b.sizes[key]
	if sizes == nil {
		sizes = make([]int, k*max(tree, 1)+1)
	}
	for _, s := range steps {
		c.Add(s)
		if !s.Baseline && s.Drafted >= 0 && s.Drafted < len(sizes) {
			sizes[s.Drafted]++
		}
	}
	b.sizes[key] = sizes
	b.runs[key]++
}

// For is the acceptance model of drafter (its kind for the default) at k
// and tree: from runs of exactly that shape; else, for a chain, from runs
// of a longer chain cut at k (per-position counts); else the default.
func (b *Book) For(drafter, kind string, k, tree int) Acceptance {
	if c, ok := b.counts[bookKey{drafter, k, tree}]; ok && c.Run.X.N > 0 {
		a := fromCounts(drafter, k, tree, *c, k)
		a.Sizes = shares(b.sizes[bookKey{drafter, k, tree}], k*max(tree, 1))
		a.Source = fmt.Sprintf("%d logged run(s), %d steps, at k=%d", b.runs[bookKey{drafter, k, tree}], a.Steps, k)
		return a
	}
	if tree == 0 {
		best := 0
		for key, c := range b.counts {
			if key.drafter == drafter && key.tree == 0 && key.k > k && c.Drafts > 0 && (best == 0 || key.k < best) {
				best = key.k
			}
		}
		if best > 0 {
			a := fromCounts(drafter, k, 0, *b.counts[bookKey{drafter, best, 0}], best)
			a.Sizes = shares(b.sizes[bookKey{drafter, best, 0}], k) // a longer chain cut at k
			a.Source = fmt.Sprintf("%d logged run(s), %d steps, at k=%d, cut at position %d", b.runs[bookKey{drafter, best, 0}], a.Steps, best, k)
			return a
		}
	}
	return defaultAcceptance(drafter, kind, k, tree)
}

// shares turns a histogram of proposal sizes into shares of steps, sizes
// above max counted at max (a longer chain cut at k).
func shares(hist []int, maxSize int) []float64 {
	out := make([]float64, maxSize+1)
	total := 0
	for n, c := range hist {
		out[min(n, maxSize)] += float64(c)
		total += c
	}
	if total == 0 {
		return nil
	}
	for i := range out {
		out[i] /= float64(total)
	}
	return out
}

// fromCounts builds the model from a tally of runs at draft length runK,
// read at k <= runK: a step yields 1 + the drafted tokens accepted at
// positions below k.
func fromCounts(drafter string, k, tree int, c stepstats.Counts, runK int) Acceptance {
	steps := c.Run.X.N
	a := Acceptance{Drafter: drafter, K: k, Tree: tree, Steps: steps, PerPos: c.AcceptPerPos()}
	if c.Drafts > 0 {
		a.ProposeRate = float64(c.Drafts) / float64(steps)
		a.DraftUs = Exact(float64(c.Draft.Microseconds()) / float64(c.Drafts))
	}
	if k == runK {
		a.MeanDrafted = safeDiv(float64(c.DraftTokens), float64(c.Drafts))
		mean := c.TokensPerStep()
		half := 2 * math.Sqrt(c.Run.X.Var()/float64(steps)) // about the 95% interval
		a.TokensPerStep = Range{mean, max(1, mean-half), mean + half}
		return a
	}
	accepted, drafted := 0, 0
	for i := 0; i < k && i < len(c.PosAccepted); i++ {
		accepted += c.PosAccepted[i]
		drafted += c.PosDrafted[i]
	}
	a.MeanDrafted = safeDiv(float64(drafted), float64(c.Drafts))
	mean := 1 + float64(accepted)/float64(steps)
	// The cut keeps each step's first k positions; their spread is at most
	// the full run's, so the full run's standard error bounds it.
	half := 2 * math.Sqrt(c.Run.X.Var()/float64(steps))
	a.TokensPerStep = Range{mean, max(1, mean-half), mean + half}
	return a
}

// defaultAcceptance: each drafted token accepted with probability alpha
// after an accepted one, so position i is reached with alpha^i, and a
// proposal every step.
func defaultAcceptance(drafter, kind string, k, tree int) Acceptance {
	tokens := func(alpha float64) float64 {
		t, p := 1.0, 1.0
		for range k {
			p *= alpha
			t += p
		}
		return t
	}
	nodes := k * max(tree, 1)
	sizes := make([]float64, nodes+1)
	sizes[nodes] = 1
	a := Acceptance{Drafter: drafter, K: k, Tree: tree, ProposeRate: 1, MeanDrafted: float64(nodes), Sizes: sizes, Default: true,
		TokensPerStep: Range{tokens(DefaultAlpha), tokens(DefaultAlphaLo), tokens(DefaultAlphaHi)}}
	a.Source = fmt.Sprintf("default (no logged run of %s at k=%d or longer): each drafted token accepted with probability %.1f after an accepted one (range %.1f-%.1f); run it once to measure", kind, k, DefaultAlpha, DefaultAlphaLo, DefaultAlphaHi)
	return a
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
