package metrics

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rigscope/engine/stepstats"
)

// memRecord is a run kept in memory (as the panel keeps it): two steps laid
// out on two ranks, bytes per rank and summary columns.
func memRecord() RunRecord {
	r := RunRecord{
		RunID: "7", Model: "tiny", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Complete: true,
		Config: json.RawMessage(`{"tp":2,"allreduce":"ring"}`), Stats: json.RawMessage(`{"generated_tokens":8}`),
		Label: "ring tp2", BytesSent: []int64{4000, 4000},
		Summary: []Field{{"tok_s", "101.50"}, {"run_id", "ignored"}, {"bytes_moved", "8000"}},
	}
	for i := range 2 {
		s := stepstats.Step{Step: i + 1, At: time.Duration(i+1) * time.Millisecond, Draft: 100 * time.Microsecond,
			Verify: 500 * time.Microsecond, AllReduce: 50 * time.Microsecond, Tokens: 3, Drafted: 4, Depth: 4, Accepted: 2}
		r.Steps = append(r.Steps, s)
		r.Spans = append(r.Spans, StepSpans(s, 2)...)
	}
	r.Ended = r.Started.Add(2 * time.Millisecond)
	return r
}

func TestStepSpans(t *testing.T) {
	s := stepstats.Step{At: 10 * time.Millisecond, Draft: time.Millisecond, Verify: 4 * time.Millisecond, AllReduce: time.Millisecond}
	got := StepSpans(s, 2)
	want := []Span{
		{Rank: 0, Name: "draft", Start: 5 * time.Millisecond, Dur: time.Millisecond},
		{Rank: 0, Name: "verify", Start: 6 * time.Millisecond, Dur: 4 * time.Millisecond},
		{Rank: 0, Name: "allreduce", Start: 9 * time.Millisecond, Dur: time.Millisecond},
		{Rank: 1, Name: "verify", Start: 6 * time.Millisecond, Dur: 4 * time.Millisecond},
		{Rank: 1, Name: "allreduce", Start: 9 * time.Millisecond, Dur: time.Millisecond},
	}
	if !slices.Equal(got, want) {
		t.Errorf("StepSpans(%+v, 2) = %+v, want %+v", s, got, want)
	}
	if got := StepSpans(stepstats.Step{At: time.Millisecond, Verify: time.Millisecond}, 0); len(got) != 1 || got[0].Name != "verify" {
		t.Errorf("StepSpans(plain step, 0 ranks) = %+v, want one verify span on rank 0", got)
	}
}

func TestExportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := []RunRecord{memRecord()}
	paths, err := Export(context.Background(), dir, in)
	if err != nil || len(paths) != 4 {
		t.Fatalf("Export(%s, 1 run) = %v, %v; want 4 paths", dir, paths, err)
	}

	// JSONL reads back as the same run.
	evs, err := ReadRunLog(filepath.Join(dir, ExportJSONLName))
	if err != nil {
		t.Fatal(err)
	}
	back, err := Runs(evs)
	if err != nil || len(back) != 1 {
		t.Fatalf("Runs(exported jsonl) = %+v, %v", back, err)
	}
	b, r := back[0], in[0]
	if b.RunID != r.RunID || b.Model != r.Model || !b.Started.Equal(r.Started) || !b.Ended.Equal(r.Ended) || !b.Complete ||
		!slices.Equal(b.Steps, r.Steps) || !slices.Equal(b.Spans, r.Spans) || !slices.Equal(b.BytesSent, []int64(nil)) {
		t.Errorf("exported jsonl reads back as %+v, want %+v (bytes from stats: none)", b, r)
	}
	if n := strings.Count(string(readFile(t, filepath.Join(dir, ExportJSONLName))), `"spans"`); n != 2 {
		t.Errorf("exported jsonl has spans on %d step lines, want 2 (each step carries its own)", n)
	}

	// Summary CSV: base columns, then the summary (a name taken is skipped).
	rows := readCSV(t, filepath.Join(dir, ExportRunsCSVName))
	wantHead := []string{"run_id", "model", "started", "ended", "complete", "error", "tok_s", "bytes_moved", "config.allreduce", "config.tp", "stats.generated_tokens"}
	if !slices.Equal(rows[0], wantHead) || rows[1][0] != "7" || rows[1][6] != "101.50" || rows[1][1] != "tiny" {
		t.Errorf("runs.csv = %q, want header %q and run 7's values", rows, wantHead)
	}

	// Steps CSV: units in the names.
	rows = readCSV(t, filepath.Join(dir, ExportStepsCSVName))
	if !slices.Equal(rows[0], StepsCSVHeader) || len(rows) != 3 || !slices.Equal(rows[2], []string{"7", "2", "2.000", "0.100", "0.500", "0.050", "0.000", "4", "2", "3", "4", "false"}) {
		t.Errorf("steps.csv = %q", rows)
	}

	// Trace: spans on both ranks, token and throughput counters.
	var tr struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, ExportTraceName)), &tr); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range tr.TraceEvents {
		count[e.Ph+" "+e.Name]++
		if e.Name == "process_name" && e.Args["name"] != "run 7 (ring tp2)" {
			t.Errorf("process name %v, want run 7 (ring tp2)", e.Args["name"])
		}
		if e.Name == TraceThroughputCounter && e.Ts == 500 { // step 1's verify starts at 0.5 ms
			if mbps := e.Args["rank 1"]; mbps != 4.0 { // 2000 B per step over 500 µs
				t.Errorf("throughput of rank 1 in step 1 = %v MB/s, want 4", mbps)
			}
		}
	}
	for k, n := range map[string]int{"X draft": 2, "X verify": 4, "X allreduce": 4, "C tokens": 2, "C " + TraceThroughputCounter: 4, "M thread_name": 2} {
		if count[k] != n {
			t.Errorf("trace has %d %q events, want %d (all: %v)", count[k], k, n, count)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("export dir holds %d entries, want the 4 exports and no temp files", len(ents))
	}
}

func TestWriteFileAtomicKeepsOldOnError(t *testing.T) {
	dir := t.TempDir()
	// Renaming a file over a non-empty folder fails: the folder stays as it
	// was and no temp file is left beside it.
	target := filepath.Join(dir, "out")
	os.Mkdir(target, 0o755)
	os.WriteFile(filepath.Join(target, "keep"), []byte("old"), 0o644)
	if err := WriteFileAtomic(target, []byte("new")); err == nil {
		t.Errorf("WriteFileAtomic(%s, ...) over a folder succeeded", target)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("a failed atomic write left %d entries, want 1", len(ents))
	}
	if b, _ := os.ReadFile(filepath.Join(target, "keep")); string(b) != "old" {
		t.Errorf("a failed atomic write changed the old content to %q", b)
	}
	p := filepath.Join(dir, "file")
	for _, data := range []string{"first", "second"} {
		if err := WriteFileAtomic(p, []byte(data)); err != nil {
			t.Fatalf("WriteFileAtomic(%s, %q): %v", p, data, err)
		}
		if b, _ := os.ReadFile(p); string(b) != data {
			t.Errorf("after WriteFileAtomic(%s, %q) the file holds %q", p, data, b)
		}
	}
}

func TestRunLogFinishReportsFirstError(t *testing.T) {
	var nilLog *RunLog
	if err := errors.Join(nilLog.StartModel("m", 1), nilLog.Step(stepstats.Step{}, nil), nilLog.Finish(1, nil)); err != nil {
		t.Errorf("a nil RunLog reported %v, want nothing", err)
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	l, err := CreateRunLog(path, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StartModel("tiny", map[string]int{"tp": 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.Step(stepstats.Step{Step: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Finish(func() {}, nil); err == nil || !strings.Contains(err.Error(), "stats") {
		t.Errorf("Finish with unmarshallable stats = %v, want the stats error", err)
	}
	evs, err := ReadRunLog(path)
	if err != nil || len(evs) != 2 || evs[0].Model != "tiny" {
		t.Errorf("ReadRunLog after Finish = %+v, %v; want run_start (model tiny) and one step", evs, err)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
