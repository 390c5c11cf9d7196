package plan

import (
	"fmt"
	"io"
	"text/tabwriter"

	"rigscope/engine/planner"
)

// WriteTable prints one row per prediction; rows that lack a measurement
// or do not fit say so instead of figures. Footnotes give each acceptance
// model's source once.
func WriteTable(w io.Writer, preds []planner.Prediction) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The last cell (acceptance, or what is missing) is not tab-ended, so
	// a long message does not widen the columns.
	fmt.Fprintln(tw, "TP\tbackend\tdrafter\tk\tdecode ms\tverify ms\tallreduce ms\tdraft ms\tloop ms\ttok/s\trange\tbaseline\tbreak-even\tspeedup\tverdict\t  acceptance")
	var sources []string
	for _, p := range preds {
		c := p.Config
		backend, drafter, k := c.Backend, c.Drafter, "—"
		if c.TP == 1 {
			backend = "—"
		}
		if c.Speculative() {
			k = fmt.Sprint(c.K)
			if c.Tree > 0 {
				k += fmt.Sprintf("x%d", c.Tree)
			}
		}
		lead := fmt.Sprintf("%d\t%s\t%s\t%s\t", c.TP, backend, drafter, k)
		switch {
		case p.Unfit != "":
			fmt.Fprintf(tw, "%s—\t—\t—\t—\t—\t—\t—\t—\t—\t—\t—\t  does not fit: %s\n", lead, p.Unfit)
			continue
		case !p.OK():
			fmt.Fprintf(tw, "%s—\t—\t—\t—\t—\t—\t—\t—\t—\t—\t—\t  %s\n", lead, p.Missing[0])
			continue
		}
		verify, ar, draft, be, acc := "—", "—", "—", "—", ""
		if c.TP > 1 {
			ar = fmt.Sprintf("%.2f", p.VerifyAllReduceMs.V)
		}
		if c.Speculative() {
			verify = fmt.Sprintf("%.2f", p.VerifyStepMs.V)
			draft = fmt.Sprintf("%.2f", p.DraftMs.V)
			be = fmt.Sprintf("%.2f", p.BreakEven.V)
			acc = fmt.Sprintf("%.2f tok/step", p.TokensPerStep.V)
			if p.Acceptance != nil {
				i := index(&sources, fmt.Sprintf("%s k=%d: %s", p.Acceptance.Drafter, p.Acceptance.K, p.Acceptance.Source))
				acc += fmt.Sprintf(" [%d]", i+1)
			}
		} else if c.TP > 1 {
			ar = fmt.Sprintf("%.2f", p.DecodeAllReduceMs.V)
		}
		fmt.Fprintf(tw, "%s%.2f\t%s\t%s\t%s\t%.3f\t%.1f\t%.1f–%.1f\t%.1f\t%s\t%.2fx\t%s\t  %s\n", lead, p.DecodeStepMs.V, verify, ar, draft, p.LoopMs.V,
			p.TokS.V, p.TokS.Lo, p.TokS.Hi, p.BaselineTokS.V, be, p.Speedup.V, planner.VerdictWords(p.Verdict), acc)
	}
	tw.Flush()
	for i, s := range sources {
		fmt.Fprintf(w, "[%d] %s\n", i+1, s)
	}
	fmt.Fprintln(w, "verify: a full proposal's forward (k+1 tokens); allreduce: its calls (one decode step at TP>1 without a drafter): rank 0's time inside them in the forward timed with that backend (its waits for slower ranks included), or the allreduce table's per-call time where the forward was timed with another backend and its calls swapped; loop: the run loop's own time per step beyond the draft and the forward (emitting the tokens, the step's records), the mean of earlier runs' steps on this kind of device; tok/s: from the median of each timing's repetitions; range: their 10th-90th percentiles and the acceptance's ~95% interval, combined at the ends that widen it.")
}

// index returns s's position in list, appending it when new.
func index(list *[]string, s string) int {
	for i, x := range *list {
		if x == s {
			return i
		}
	}
	*list = append(*list, s)
	return len(*list) - 1
}

// drafterWords is a configuration's drafter and k in a few words.
func drafterWords(c planner.Config) string {
	if !c.Speculative() {
		return "plain"
	}
	return fmt.Sprintf("%s k=%d", c.Drafter, c.K)
}
