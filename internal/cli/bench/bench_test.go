package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/stepstats"
	"rigscope/internal/fixtures"
)

func TestParseIntList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{{"1-4", []int{1, 2, 3, 4}, false}, {"0,2", []int{0, 2}, false}, {"3-1", nil, true}, {"a", nil, true}} {
		got, err := parseIntList(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("parseIntList(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestBenchVerdictTable runs `bench --verdict` at a tiny budget on the
// fixtures: the logic (alternation, the run's own baseline, pooling, the
// table), not the speed, which a short run cannot judge.
func TestBenchVerdictTable(t *testing.T) {
	fixtures.Path(t, "gocoder-draft-1m.F16.gguf") // skips (or fails under CI) without ../shared/models
	args := []string{"bench", "--verdict", "--drafters", "model", "--k", "2", "--prompts", "1", "--max-tokens", "24", "--json"}
	var out, errOut bytes.Buffer
	if err := Command.Run(context.Background(), args[1:], &out, &errOut); err != nil {
		t.Fatalf("rigscope %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var rows []verdictRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("rigscope %s: %d rows, %v: %s", strings.Join(args, " "), len(rows), err, out.String())
	}
	r := rows[0]
	if r.Drafter != "model" || r.K != 2 || r.PlainRuns != 1 || r.SpecRuns != 1 || r.Verdict.BaselineSource != stepstats.BaselineInRun ||
		r.BaseSteps == 0 || r.SpecSteps == 0 || r.Measured <= 0 || r.Agree == "" {
		t.Errorf("rigscope %s: row %+v", strings.Join(args, " "), r)
	}
}
