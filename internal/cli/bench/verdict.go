package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"rigscope/engine"
	"rigscope/engine/stepstats"
)

// verdictRow is one line of `bench --verdict`: the verdict the panel would
// show for a drafter and k (pooled over the prompt set, baseline measured
// inside the speculative runs as in a fresh session) against the speedup
// measured end to end, plain and speculative runs alternated.
type verdictRow struct {
	Drafter   string            `json:"drafter"`
	K         int               `json:"k"`
	Verdict   stepstats.Verdict `json:"verdict"`
	PerRun    map[string]int    `json:"per_run_verdicts"` // state -> runs
	PlainTokS float64           `json:"plain_tokens_per_s"`
	SpecTokS  float64           `json:"spec_tokens_per_s"`
	Measured  float64           `json:"measured_speedup"` // all speculative tok/s over all plain tok/s
	// PairSpeedup is the geometric mean of each prompt's speculative over
	// plain tok/s, with its 95% interval: how sure the measurement is.
	PairSpeedup   float64 `json:"pair_speedup"`
	PairSpeedupLo float64 `json:"pair_speedup_lo"`
	PairSpeedupHi float64 `json:"pair_speedup_hi"`
	Agree         string  `json:"agree"`
	PlainRuns     int     `json:"plain_runs"`
	SpecRuns      int     `json:"spec_runs"`
	SpecSteps     int     `json:"spec_steps"`
	BaseSteps     int     `json:"baseline_steps"`
	MeanAccLen    float64 `json:"mean_accept_len"`
	ElapsedSecs   float64 `json:"elapsed_s"`
}

// verdictMargin is how far from 1 a measured speedup must be for the
// verdict to be held to its sign.
const verdictMargin = 0.10

// decodeRate sums decoded tokens and decode time over runs.
type decodeRate struct {
	tokens float64
	time   time.Duration
}

func (d *decodeRate) add(st engine.Stats) {
	if n := st.GeneratedTokens - 1; n > 0 && st.DecodeTokensPerS > 0 {
		d.tokens += float64(n)
		d.time += time.Duration(float64(n) / st.DecodeTokensPerS * float64(time.Second))
	}
}

func (d decodeRate) tokS() float64 {
	if d.time <= 0 {
		return 0
	}
	return d.tokens / d.time.Seconds()
}

// benchVerdict runs, for each drafter and k, every prompt `rounds` times as
// a plain run and then a speculative one (alternating, in one process), and
// compares the verdict with the measured speedup. Plain runs go to their
// own engine so the speculative engine never has a session baseline: its
// verdict rests on the plain steps measured inside its own runs, as in a
// fresh panel session.
func benchVerdict(ctx context.Context, set benchSet, opts engine.Options, base engine.RunConfig, drafters []engine.DrafterConfig,
	rounds int, stderr io.Writer) ([]verdictRow, error) {
	plainEng, err := engine.Open(ctx, set.model, opts)
	if err != nil {
		return nil, err
	}
	defer plainEng.Close()
	specEng, err := engine.Open(ctx, set.model, opts)
	if err != nil {
		return nil, err
	}
	defer specEng.Close()
	defer specEng.CloseDrafters()
	var rows []verdictRow
	for _, dc := range drafters {
		t0 := time.Now()
		row := verdictRow{Drafter: dc.Kind, K: dc.K, PerRun: map[string]int{}}
		pooled := stepstats.NewCounts(dc.K)
		pooled.Source = stepstats.BaselineInRun
		var plain, spec decodeRate
		var pairs stepstats.Sample // log(spec tok/s / plain tok/s) per prompt
		for range max(rounds, 1) {
			for _, p := range set.prompts {
				cfg := base
				cfg.PromptIDs = p
				st, err := plainEng.Run(ctx, cfg, nil)
				if err != nil {
					return nil, fmt.Errorf("bench --verdict: plain: %w", err)
				}
				plain.add(st)
				row.PlainRuns++
				plainTokS := st.DecodeTokensPerS
				cfg.Drafter = dc
				st, err = specEng.Run(ctx, cfg, func(ev engine.Event) {
					if ev.Kind == engine.EventStep {
						pooled.Add(ev.Step)
					}
				})
				if err != nil {
					return nil, fmt.Errorf("bench --verdict: %s k=%d: %w", dc.Kind, dc.K, err)
				}
				if st.Verdict.BaselineSource != stepstats.BaselineInRun {
					return nil, fmt.Errorf("bench --verdict: %s k=%d: baseline from %s, want the run's own", dc.Kind, dc.K, st.Verdict.BaselineSource)
				}
				spec.add(st)
				row.SpecRuns++
				if plainTokS > 0 && st.DecodeTokensPerS > 0 {
					pairs.Add(math.Log(st.DecodeTokensPerS / plainTokS))
				}
				row.PerRun[st.Verdict.State]++
			}
		}
		row.Verdict = stepstats.Judge(pooled, true)
		row.PlainTokS, row.SpecTokS = plain.tokS(), spec.tokS()
		if row.PlainTokS > 0 {
			row.Measured = row.SpecTokS / row.PlainTokS
		}
		row.Agree = stepstats.Agreement(row.Verdict, row.Measured, verdictMargin)
		row.PairSpeedup, row.PairSpeedupLo, row.PairSpeedupHi = stepstats.RatioInterval(pairs)
		row.SpecSteps, row.BaseSteps, row.MeanAccLen = pooled.Run.X.N, pooled.Base.N, pooled.MeanAcceptLen()
		row.ElapsedSecs = time.Since(t0).Seconds()
		fmt.Fprintf(stderr, "  %s k=%d: %s; measured %.2fx (%.1f vs %.1f tok/s)\n", dc.Kind, dc.K, row.Verdict.State, row.Measured, row.SpecTokS, row.PlainTokS)
		rows = append(rows, row)
	}
	return rows, nil
}

// printVerdicts writes the verdict-vs-measured table.
func printVerdicts(w io.Writer, rows []verdictRow, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "drafter\tk\tverdict (pooled, 95% CI)\tbreak-even (95% CI)\tper-run verdicts\tmeasured speedup\tper-prompt speedup (95% CI)\tagree?")
	for _, r := range rows {
		v := r.Verdict
		fmt.Fprintf(tw, "%s\t%d\t%s %.2fx (%.2f–%.2f)\t%.2f (%.2f–%.2f) vs %.2f tok/step\t%s\t%.2fx (%.1f / %.1f tok/s)\t%.2fx (%.2f–%.2f)\t%s\n",
			r.Drafter, r.K, v.State, v.Speedup, v.SpeedupLo, v.SpeedupHi, v.BreakEven, v.BreakEvenLo, v.BreakEvenHi, v.TokensPerStep,
			perRun(r.PerRun), r.Measured, r.SpecTokS, r.PlainTokS, r.PairSpeedup, r.PairSpeedupLo, r.PairSpeedupHi, r.Agree)
	}
	return tw.Flush()
}

// perRun lists per-run verdict counts in a fixed order.
func perRun(m map[string]int) string {
	s := ""
	for _, st := range []string{stepstats.Pays, stepstats.DoesNotPay, stepstats.CannotPay, stepstats.TooClose, stepstats.TooFew} {
		if n := m[st]; n > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%d %s", n, st)
		}
	}
	return s
}
