package plan

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"text/tabwriter"
)

// The check's backend ordering. Backends are compared within a block:
// one TP size, drafter and k. The runs of a block follow each other in
// every round (runOrder), so a burst of load from elsewhere on the
// machine falls on the block's backends alike, and each round gives one
// paired ratio per pair of backends; a pair's measured ratio is the median
// of its rounds' ratios, the predicted one likewise from the same rounds'
// predictions. That is what "backend x is faster than backend y" means on
// a shared machine; the best-of-rounds comparison (summarize's Pairs) sets
// runs that were minutes apart beside each other.

// blockKey names a configuration's block.
func blockKey(r CheckRow) string {
	return fmt.Sprintf("TP %d, %s", r.Config.TP, drafterWords(r.Config))
}

// runOrder is round's order of the rows: block after block, forwards in
// even rounds and backwards in odd ones, the backends of each block
// rotated by one every round (and reversed in odd rounds), so no backend
// always runs first or last in its block. Plain blocks come before the
// speculative ones of their TP size in round 0, as in the grid, so every
// speculative run has its configuration's session baseline.
func runOrder(rows []CheckRow, round int) []int {
	var names []string
	blocks := map[string][]int{}
	for i, r := range rows {
		k := blockKey(r)
		if _, ok := blocks[k]; !ok {
			names = append(names, k)
		}
		blocks[k] = append(blocks[k], i)
	}
	if round%2 == 1 {
		slices.Reverse(names)
	}
	var out []int
	for _, k := range names {
		b := slices.Clone(blocks[k])
		s := round % len(b)
		b = append(b[s:], b[:s]...)
		if round%2 == 1 {
			slices.Reverse(b)
		}
		out = append(out, b...)
	}
	return out
}

// pairedOrder fills r.Paired: every pair of backends in a block whose
// median paired measured ratio is beyond 1+margin.
func (r *CheckReport) pairedOrder(margin float64) {
	var names []string
	blocks := map[string][]int{}
	for i, row := range r.Rows {
		if row.Config.TP < 2 || len(row.Measured) == 0 || len(row.Rounds) == 0 {
			continue
		}
		k := blockKey(row)
		if _, ok := blocks[k]; !ok {
			names = append(names, k)
		}
		blocks[k] = append(blocks[k], i)
	}
	r.Paired, r.PairedAgreeing = nil, 0
	type tpPair struct {
		tp   int
		x, y string
	}
	pooled := map[tpPair][2][]float64{} // measured, predicted per-round ratios of x over y
	var pooledKeys []tpPair
	for _, k := range names {
		idx := blocks[k]
		for a := range idx {
			for b := a + 1; b < len(idx); b++ {
				x, y := r.Rows[idx[a]], r.Rows[idx[b]]
				pk := tpPair{x.Config.TP, x.Config.Backend, y.Config.Backend}
				ms, ps := roundRatios(x, y)
				if _, ok := pooled[pk]; !ok {
					pooledKeys = append(pooledKeys, pk)
				}
				pooled[pk] = [2][]float64{append(pooled[pk][0], ms...), append(pooled[pk][1], ps...)}
				m, p, sep := pairedRatios(x, y)
				if m < 1 {
					x, y, m, p = y, x, 1/m, 1/p
				}
				if m <= 1+margin {
					continue
				}
				pair := OrderPair{Group: k, Faster: x.Config.Backend, Slower: y.Config.Backend, MeasuredRatio: m, PredictedRatio: p,
					PredictedSameSide: p > 1, Separated: sep}
				if pair.PredictedSameSide {
					r.PairedAgreeing++
				}
				r.Paired = append(r.Paired, pair)
			}
		}
	}
	r.PairedByTP, r.PairedByTPAgreeing = nil, 0
	for _, pk := range pooledKeys {
		ms, ps := pooled[pk][0], pooled[pk][1]
		if len(ms) == 0 || len(ps) == 0 {
			continue
		}
		m, p := median(ms), median(ps)
		fast, slow := pk.x, pk.y
		if m < 1 {
			m, p, fast, slow = 1/m, 1/p, pk.y, pk.x
		}
		if m <= 1+margin {
			continue
		}
		pair := OrderPair{Group: fmt.Sprintf("TP %d", pk.tp), Faster: fast, Slower: slow, MeasuredRatio: m, PredictedRatio: p, PredictedSameSide: p > 1}
		if pair.PredictedSameSide {
			r.PairedByTPAgreeing++
		}
		r.PairedByTP = append(r.PairedByTP, pair)
	}
}

// roundRatios are x's tok/s over y's, round by round: measured, and
// predicted by that round's measurements.
func roundRatios(x, y CheckRow) (measured, predicted []float64) {
	for i := range min(len(x.Measured), len(y.Measured)) {
		if x.Measured[i] > 0 && y.Measured[i] > 0 {
			measured = append(measured, x.Measured[i]/y.Measured[i])
		}
	}
	for i := range min(len(x.Rounds), len(y.Rounds)) {
		if x.Rounds[i].V > 0 && y.Rounds[i].V > 0 {
			predicted = append(predicted, x.Rounds[i].V/y.Rounds[i].V)
		}
	}
	return measured, predicted
}

// pairedRatios is the median over rounds of x's measured tok/s over y's
// in the same round, the same of their predictions, and whether every
// round's measured ratio lay on the same side of 1.
func pairedRatios(x, y CheckRow) (measured, predicted float64, separated bool) {
	ms, ps := roundRatios(x, y)
	above, below := 0, 0
	for _, q := range ms {
		if q > 1 {
			above++
		} else if q < 1 {
			below++
		}
	}
	if len(ms) == 0 || len(ps) == 0 {
		return 1, 1, false
	}
	return median(ms), median(ps), len(ms) > 1 && (above == len(ms) || below == len(ms))
}

// TPSummary is one TP size's line of the closing table.
type TPSummary struct {
	TP          int     `json:"tp"`
	Configs     int     `json:"configurations"`
	MedianError float64 `json:"median_abs_error"`
	// MedianRoundError: the same round by round (CheckRow.RoundError).
	MedianRoundError float64 `json:"median_abs_round_error"`
	// Paired: pairs of backends (same drafter and k) whose paired measured
	// ratio is beyond the margin, and how many were predicted in that
	// order; Best the same by best rounds.
	Paired         int `json:"paired_pairs"`
	PairedAgreeing int `json:"paired_agreeing"`
	// Pooled: the same over all the TP size's drafters and k at once.
	Pooled         int `json:"pooled_pairs"`
	PooledAgreeing int `json:"pooled_agreeing"`
	Best           int `json:"best_round_pairs"`
	BestAgreeing   int `json:"best_round_agreeing"`
}

// perTP is the per-TP-size table: median error and backend ordering.
func (r *CheckReport) perTP() []TPSummary {
	byTP := map[int]*TPSummary{}
	errs, roundErrs := map[int][]float64{}, map[int][]float64{}
	get := func(n int) *TPSummary {
		if byTP[n] == nil {
			byTP[n] = &TPSummary{TP: n}
		}
		return byTP[n]
	}
	for _, row := range r.Rows {
		if row.Best > 0 {
			get(row.Config.TP).Configs++
			errs[row.Config.TP] = append(errs[row.Config.TP], math.Abs(row.Error))
			roundErrs[row.Config.TP] = append(roundErrs[row.Config.TP], math.Abs(row.RoundError))
		}
	}
	tpOf := func(group string) int {
		var n int
		fmt.Sscanf(group, "TP %d", &n)
		return n
	}
	for _, p := range r.Paired {
		s := get(tpOf(p.Group))
		s.Paired++
		if p.PredictedSameSide {
			s.PairedAgreeing++
		}
	}
	for _, p := range r.PairedByTP {
		s := get(tpOf(p.Group))
		s.Pooled++
		if p.PredictedSameSide {
			s.PooledAgreeing++
		}
	}
	for _, p := range r.Pairs {
		s := get(tpOf(p.Group))
		s.Best++
		if p.PredictedSameSide {
			s.BestAgreeing++
		}
	}
	var out []TPSummary
	for n, s := range byTP {
		s.MedianError, s.MedianRoundError = median(errs[n]), median(roundErrs[n])
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TP < out[j].TP })
	return out
}

// writeOrder prints the paired ordering and the per-TP table.
func (r *CheckReport) writeOrder(w io.Writer) {
	sep, sepAgree := separated(r.Paired)
	fmt.Fprintf(w, "backend ordering, paired (each round's runs of a TP size, drafter and k back to back; median over rounds of the ratio): %d of %d pairs differing by more than the margin predicted in the measured order; of the %d pairs on one side in every round, %d\n",
		r.PairedAgreeing, len(r.Paired), sep, sepAgree)
	for _, p := range r.Paired {
		if !p.PredictedSameSide {
			fmt.Fprintf(w, "  disagrees: %s: %s measured %.2fx %s, predicted %.2fx\n", p.Group, p.Faster, p.MeasuredRatio, p.Slower, p.PredictedRatio)
		}
	}
	fmt.Fprintf(w, "backend ordering per TP size, paired (every round and drafter and k of the TP size pooled; median of the ratios): %d of %d pairs differing by more than the margin predicted in the measured order\n",
		r.PairedByTPAgreeing, len(r.PairedByTP))
	for _, p := range r.PairedByTP {
		fmt.Fprintf(w, "  %s: %s measured %.2fx %s, predicted %.2fx\n", p.Group, p.Faster, p.MeasuredRatio, p.Slower, p.PredictedRatio)
	}
	fmt.Fprintln(w, "\nper TP size (ordering: pairs of backends differing by more than the margin, predicted in the measured order):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TP\tconfigurations\tmedian |error|, best rounds\tround by round\tpaired, per TP size\tpaired, per drafter and k\tbest rounds, per drafter and k\t")
	for _, s := range r.ByTPSize {
		fmt.Fprintf(tw, "%d\t%d\t%.1f%%\t%.1f%%\t%s\t%s\t%s\t\n", s.TP, s.Configs, 100*s.MedianError, 100*s.MedianRoundError, fraction(s.PooledAgreeing, s.Pooled),
			fraction(s.PairedAgreeing, s.Paired), fraction(s.BestAgreeing, s.Best))
	}
	tw.Flush()
}

func fraction(a, n int) string {
	if n == 0 {
		return "none over the margin"
	}
	return fmt.Sprintf("%d of %d", a, n)
}
