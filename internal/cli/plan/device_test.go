package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/internal/fakegpu"
)

// TestCheckOnDevice: `plan --check --device D --tp 1,2 --allreduce
// oneshot,twoshot,host,auto` on a fake accelerator (internal/fakegpu,
// registered as a GPU build registers cuda): auto is predicted from the
// device step's own table, every row measured beside its prediction, and
// the report has the median error and the paired backend ordering.
// Table-driven over the drafters and the warm-up.
func TestCheckOnDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	d, err := fakegpu.Register("fakegpu-plan", map[string]float64{"oneshot": 10, "twoshot": 30, "host": 300}, 512)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		extra  []string
		rows   int
		warmup bool
		rounds int
	}{
		{"plain", []string{"--drafter", "none", "--rounds", "2"}, 1 + 4, false, 2},
		{"plain, warm-up", []string{"--drafter", "none", "--warmup", "--rounds", "2"}, 1 + 4, true, 2},
		{"ngram k=2", []string{"--drafter", "none,ngram", "--k", "2", "--rounds", "2"}, 2 + 4*2, false, 2},
		// --max-time: no second round would end in time; one is reported.
		{"time limit", []string{"--drafter", "none", "--rounds", "5", "--max-time", "1ms"}, 1 + 4, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jsonOut := filepath.Join(t.TempDir(), "check.json")
			args := append([]string{"--check", "--device", "fakegpu-plan", "--model", "synthetic:tiny", "--ctx", "512", "--tp", "1,2",
				"--allreduce", "oneshot,twoshot,host,auto", "--reps", "2", "--max-tokens", "16", "--prompt-len", "16",
				"--prompt", "func main() { return 1 }", "--json-out", jsonOut}, tc.extra...)
			var out, errb bytes.Buffer
			if err := Run(context.Background(), args, &out, &errb); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			s := out.String()
			for _, want := range []string{"on fakegpu-plan", "median absolute error:", "backend ordering, paired", "backend ordering per TP size, paired"} {
				if !strings.Contains(s, want) {
					t.Errorf("report lacks %q:\n%s", want, s)
				}
			}
			if !strings.Contains(s, fmt.Sprintf("16 tokens per run, %d round(s)", tc.rounds)) {
				t.Errorf("want %d round(s) reported:\n%s", tc.rounds, s)
			}
			if tc.warmup != strings.Contains(s, "after an unmeasured one") {
				t.Errorf("warm-up %v, report setup:\n%s", tc.warmup, s)
			}
			data, err := os.ReadFile(jsonOut)
			if err != nil {
				t.Fatal(err)
			}
			var rep CheckReport
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != tc.rows {
				t.Fatalf("%d rows, want %d", len(rep.Rows), tc.rows)
			}
			sawAuto := false
			for _, r := range rep.Rows {
				if r.Missing != "" || len(r.Measured) != tc.rounds || len(r.Rounds) != tc.rounds || r.Best <= 0 || r.Predicted.V <= 0 {
					t.Errorf("%s: missing %q, measured %v, predicted %v", r.Config, r.Missing, r.Measured, r.Rounds)
				}
				sawAuto = sawAuto || r.Config.Backend == "auto"
			}
			if !sawAuto {
				t.Error("no auto row")
			}
			// host's 300 us calls make it far slower than oneshot: the pair
			// is measured and predicted in the same order.
			agree := false
			for _, p := range rep.PairedByTP {
				if p.Faster != "host" && p.Slower == "host" && p.PredictedSameSide {
					agree = true
				}
			}
			if !agree {
				t.Errorf("no paired TP 2 pair with host the slower, predicted so: %+v", rep.PairedByTP)
			}
			loads, backends, _ := d.Seen()
			if loads == 0 || len(backends) == 0 {
				t.Errorf("the device saw %d loads and backends %v", loads, backends)
			}
		})
	}
}
