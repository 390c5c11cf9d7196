package plan

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"rigscope/engine/planner"
)

func TestRunOrder(t *testing.T) {
	var rows []CheckRow
	for _, tpSize := range []int{1, 2} {
		backends := []string{"ring", "tree", "oneshot"}
		if tpSize == 1 {
			backends = []string{""}
		}
		for _, b := range backends {
			for _, d := range []string{"none", "ngram"} {
				rows = append(rows, CheckRow{Config: planner.Config{TP: tpSize, Backend: b, Drafter: d, K: 2}})
			}
		}
	}
	name := func(i int) string {
		c := rows[i].Config
		return fmt.Sprintf("%d/%s/%s", c.TP, c.Backend, c.Drafter)
	}
	for _, tc := range []struct {
		round int
		want  string
	}{
		// Blocks in grid order, plain before speculative at each TP size.
		{0, "1//none 1//ngram 2/ring/none 2/tree/none 2/oneshot/none 2/ring/ngram 2/tree/ngram 2/oneshot/ngram"},
		// Blocks backwards; backends rotated by one, then reversed.
		{1, "2/ring/ngram 2/oneshot/ngram 2/tree/ngram 2/ring/none 2/oneshot/none 2/tree/none 1//ngram 1//none"},
		{2, "1//none 1//ngram 2/oneshot/none 2/ring/none 2/tree/none 2/oneshot/ngram 2/ring/ngram 2/tree/ngram"},
	} {
		var got []string
		for _, i := range runOrder(rows, tc.round) {
			got = append(got, name(i))
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("round %d: %s\nwant      %s", tc.round, s, tc.want)
		}
	}
}

// TestPairedOrder: one disturbed round makes a backend's best run look
// faster than another's by more than the margin; round by round the two
// are level, and the paired comparison says so.
func TestPairedOrder(t *testing.T) {
	row := func(b string, pred float64, measured ...float64) CheckRow {
		r := CheckRow{Config: planner.Config{TP: 2, Backend: b, Drafter: "none"}, Measured: measured}
		for range measured {
			r.Rounds = append(r.Rounds, planner.Exact(pred))
		}
		return r
	}
	r := CheckReport{Rows: []CheckRow{
		row("ring", 100, 100, 60, 80, 90, 70),      // round 0 quiet for ring only
		row("tree", 101, 70, 62, 79, 92, 71),       // level with ring round by round
		row("oneshot", 120, 130, 78, 104, 117, 91), // 1.3x ring every round: predicted faster
		row("twoshot", 90, 95, 80, 120, 100, 110),  // 1.2-1.5x ring in 4 rounds, predicted slower
	}}
	r.summarize(0.20)
	// ring predicted 100 each round, measured 100 60 80 90 70: round
	// errors 0, 67%, 25%, 11%, 43%, median 25%; against the best run 0.
	if re := r.Rows[0].RoundError; re < 0.25-1e-9 || re > 0.25+1e-9 || r.Rows[0].Error != 0 {
		t.Errorf("ring: round error %v, error %v; want 0.25 and 0", re, r.Rows[0].Error)
	}
	got := map[string]OrderPair{}
	for _, p := range r.Paired {
		got[p.Faster+">"+p.Slower] = p
	}
	if _, ok := got["ring>tree"]; ok {
		t.Errorf("ring and tree are level round by round, paired %+v", got["ring>tree"])
	}
	if p, ok := got["oneshot>ring"]; !ok || !p.PredictedSameSide || !p.Separated || p.MeasuredRatio < 1.29 || p.MeasuredRatio > 1.31 {
		t.Errorf("oneshot>ring: %+v (present %v)", p, ok)
	}
	if p, ok := got["twoshot>ring"]; !ok || p.PredictedSameSide || p.Separated {
		t.Errorf("twoshot>ring: %+v (present %v), want a disagreement, not separated (round 0 is 0.95x)", p, ok)
	}
	// Best rounds: ring 100 vs tree 92 is within the margin, but best
	// rounds call oneshot (130) 1.41x tree (92).
	var b bytes.Buffer
	r.write(&b, 0.15)
	s := b.String()
	for _, want := range []string{"backend ordering, paired", "disagrees: TP 2, plain: twoshot measured", "per TP size (ordering", "median |error|", "backend ordering per TP size, paired"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	// Pooled over the TP size (one block here): the same pairs.
	if len(r.PairedByTP) != len(r.Paired) || r.PairedByTPAgreeing != r.PairedAgreeing || r.ByTPSize[0].Pooled != len(r.Paired) {
		t.Errorf("pooled pairs %+v, want the block's %+v", r.PairedByTP, r.Paired)
	}
	if len(r.ByTPSize) != 1 || r.ByTPSize[0].TP != 2 || r.ByTPSize[0].Configs != 4 || r.ByTPSize[0].Paired != len(r.Paired) || r.ByTPSize[0].PairedAgreeing != r.PairedAgreeing {
		t.Errorf("per TP: %+v (paired %d, agreeing %d)", r.ByTPSize, len(r.Paired), r.PairedAgreeing)
	}
}
