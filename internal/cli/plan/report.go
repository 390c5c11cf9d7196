package plan

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// The check's report: each row's error, the backend ordering, the table.

// Summarize is summarize for a report read back from --json-out (with
// another margin, say).
func (r *CheckReport) Summarize(margin float64) { r.summarize(margin) }

// summarize fills each row's mean and error, the median error and the
// backend order pairs.
func (r *CheckReport) summarize(margin float64) {
	r.Pairs, r.Agreeing, r.ByTP, r.ByTPAgreeing = nil, 0, nil, 0
	var errs, roundErrs []float64
	groups := map[string][]int{}
	var names []string
	for i := range r.Rows {
		row := &r.Rows[i]
		for _, p := range row.Rounds {
			if p.V > row.Predicted.V {
				row.Predicted = p
			}
		}
		if len(row.Measured) == 0 || row.Predicted.V <= 0 {
			continue
		}
		row.Best, row.Median = slices.Max(row.Measured), median(row.Measured)
		row.Error = (row.Predicted.V - row.Best) / row.Best
		var re []float64
		for i := range min(len(row.Rounds), len(row.Measured)) {
			if row.Measured[i] > 0 && row.Rounds[i].V > 0 {
				re = append(re, (row.Rounds[i].V-row.Measured[i])/row.Measured[i])
			}
		}
		row.RoundError = median(re)
		roundErrs = append(roundErrs, math.Abs(row.RoundError))
		errs = append(errs, math.Abs(row.Error))
		if row.Config.TP > 1 {
			c := row.Config
			g := fmt.Sprintf("TP %d, %s", c.TP, drafterWords(c))
			if _, ok := groups[g]; !ok {
				names = append(names, g)
			}
			groups[g] = append(groups[g], i)
		}
	}
	r.MedianError = median(errs)
	r.MedianRoundError = median(roundErrs)
	r.orderByTP(margin)
	r.pairedOrder(margin)
	defer func() { r.ByTPSize = r.perTP() }()
	for _, g := range names {
		idx := groups[g]
		for a := range idx {
			for b := a + 1; b < len(idx); b++ {
				x, y := r.Rows[idx[a]], r.Rows[idx[b]]
				if x.Best < y.Best {
					x, y = y, x
				}
				if x.Best <= (1+margin)*y.Best {
					continue
				}
				p := OrderPair{Group: g, Faster: x.Config.Backend, Slower: y.Config.Backend, MeasuredRatio: x.Best / y.Best,
					PredictedRatio: x.Predicted.V / y.Predicted.V}
				p.PredictedSameSide = x.Predicted.V > y.Predicted.V
				p.Separated = slices.Min(x.Measured) > slices.Max(y.Measured)
				if p.PredictedSameSide {
					r.Agreeing++
				}
				r.Pairs = append(r.Pairs, p)
			}
		}
	}
}

// orderByTP compares each TP size's backends by the geometric mean of their
// configurations' best rounds (and predictions): one figure per backend
// from every drafter and k, so one disturbed run moves it less.
func (r *CheckReport) orderByTP(margin float64) {
	type agg struct {
		logBest, logPred float64
		n                int
	}
	byTP := map[int]map[string]*agg{}
	var tps []int
	var backends []string
	for _, row := range r.Rows {
		c := row.Config
		if c.TP < 2 || row.Best <= 0 || row.Predicted.V <= 0 {
			continue
		}
		if byTP[c.TP] == nil {
			byTP[c.TP] = map[string]*agg{}
			tps = append(tps, c.TP)
		}
		a := byTP[c.TP][c.Backend]
		if a == nil {
			a = &agg{}
			byTP[c.TP][c.Backend] = a
			if !slices.Contains(backends, c.Backend) {
				backends = append(backends, c.Backend)
			}
		}
		a.logBest += math.Log(row.Best)
		a.logPred += math.Log(row.Predicted.V)
		a.n++
	}
	for _, n := range tps {
		for i, bx := range backends {
			for _, by := range backends[i+1:] {
				x, y := byTP[n][bx], byTP[n][by]
				if x == nil || y == nil {
					continue
				}
				mx, my := math.Exp(x.logBest/float64(x.n)), math.Exp(y.logBest/float64(y.n))
				px, py := math.Exp(x.logPred/float64(x.n)), math.Exp(y.logPred/float64(y.n))
				fast, slow := bx, by
				if mx < my {
					mx, my, px, py, fast, slow = my, mx, py, px, by, bx
				}
				if mx <= (1+margin)*my {
					continue
				}
				p := OrderPair{Group: fmt.Sprintf("TP %d", n), Faster: fast, Slower: slow, MeasuredRatio: mx / my, PredictedRatio: px / py, PredictedSameSide: px > py}
				if p.PredictedSameSide {
					r.ByTPAgreeing++
				}
				r.ByTP = append(r.ByTP, p)
			}
		}
	}
}

// Write prints the report: the table, the median error against maxErr,
// and the backend ordering (a report read back from --json-out, too).
func (r *CheckReport) Write(w io.Writer, maxErr float64) { r.write(w, maxErr) }

func (r *CheckReport) write(w io.Writer, maxErr float64) {
	fmt.Fprintf(w, "# plan --check: %s\n# load average before: %s; after: %s; %.0f s\n", r.Setup, r.LoadBefore, r.LoadAfter, r.Elapsed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TP\tbackend\tdrafter\tk\tpredicted tok/s\trange\tmeasured tok/s (per round)\tbest\terror\t")
	for _, row := range r.Rows {
		c := row.Config
		backend, k := c.Backend, "—"
		if c.TP == 1 {
			backend = "—"
		}
		if c.Speculative() {
			k = fmt.Sprint(c.K)
		}
		if row.Missing != "" {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t—\t—\t—\t—\t—\t  %s\n", c.TP, backend, c.Drafter, k, row.Missing)
			continue
		}
		per := make([]string, len(row.Measured))
		for i, v := range row.Measured {
			per[i] = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f\t%.1f–%.1f\t%s\t%.1f\t%+.0f%%\t\n", c.TP, backend, c.Drafter, k, row.Predicted.V, row.Predicted.Lo, row.Predicted.Hi,
			strings.Join(per, " "), row.Best, 100*row.Error)
	}
	tw.Flush()
	within := 0
	for _, row := range r.Rows {
		if row.Best > 0 && math.Abs(row.Error) <= maxErr {
			within++
		}
	}
	n := 0
	for _, row := range r.Rows {
		if row.Best > 0 {
			n++
		}
	}
	verdict := "met"
	if r.MedianError > maxErr {
		verdict = "NOT met"
	}
	fmt.Fprintf(w, "\nmedian absolute error: %.1f%% over %d configurations (target <= %.0f%%: %s); %d within %.0f%%\n", 100*r.MedianError, n, 100*maxErr, verdict, within, 100*maxErr)
	fmt.Fprintf(w, "median absolute error round by round (each round's prediction against the same round's run, median over rounds): %.1f%%\n", 100*r.MedianRoundError)
	sep, sepAgree := separated(r.Pairs)
	fmt.Fprintf(w, "backend ordering per TP size, drafter and k, best rounds: %d of %d pairs differing by more than the margin predicted in the measured order; of the %d pairs whose rounds do not overlap (a difference beyond the run-to-run spread), %d\n",
		r.Agreeing, len(r.Pairs), sep, sepAgree)
	shown := 0
	for _, p := range r.Pairs {
		if !p.PredictedSameSide {
			if shown++; shown > maxShownPairs {
				continue
			}
			fmt.Fprintf(w, "  disagrees: %s: %s measured %.2fx %s, predicted %.2fx\n", p.Group, p.Faster, p.MeasuredRatio, p.Slower, p.PredictedRatio)
		}
	}
	if shown > maxShownPairs {
		fmt.Fprintf(w, "  ... and %d more (--json lists every pair)\n", shown-maxShownPairs)
	}
	fmt.Fprintf(w, "backend ordering per TP size (geometric mean over its drafters and k): %d of %d pairs differing by more than the margin predicted in the measured order\n", r.ByTPAgreeing, len(r.ByTP))
	for _, p := range r.ByTP {
		if !p.PredictedSameSide {
			fmt.Fprintf(w, "  disagrees: %s: %s measured %.2fx %s, predicted %.2fx\n", p.Group, p.Faster, p.MeasuredRatio, p.Slower, p.PredictedRatio)
		}
	}
	r.writeOrder(w)
}

// maxShownPairs bounds the disagreeing pairs the table lists.
const maxShownPairs = 12

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
