package metrics

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rigscope/engine/stepstats"
)

// writeTestLog writes two runs' logs (one file each, as the engine does)
// and joins them into path.
func writeTestLog(t *testing.T, path string) {
	t.Helper()
	var all []byte
	for _, id := range []string{"r1", "r2"} {
		l, err := CreateRunLogIn(t.TempDir(), id)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Start(map[string]any{"tp": 2, "allreduce": "ring", "drafter": map[string]any{"kind": "ngram", "k": 4}}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			s := stepstats.Step{At: time.Duration(i) * time.Millisecond, Verify: time.Millisecond, Tokens: 2, Accepted: 1}
			spans := []Span{{Rank: 0, Name: "verify", Start: s.At, Dur: time.Millisecond}, {Rank: 1, Name: "allreduce", Start: s.At, Dur: 100 * time.Microsecond}}
			if err := l.Step(s, spans); err != nil {
				t.Fatal(err)
			}
		}
		var runErr error
		if id == "r2" {
			runErr = errors.New("rank 1: boom, \"quoted\"")
		}
		if err := l.End(map[string]any{"generated_tokens": 6, "accept_hist": []int{1, 2}}, runErr); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		all = append(all, readFile(t, l.Path())...)
	}
	if err := os.WriteFile(path, all, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunLogRoundTripAndExports(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.jsonl")
	writeTestLog(t, path)
	evs, err := ReadRunLog(path)
	if err != nil || len(evs) != 10 {
		t.Fatalf("ReadRunLog: %d events, %v; want 10", len(evs), err)
	}
	runs, err := Runs(evs)
	if err != nil || len(runs) != 2 || len(runs[1].Steps) != 3 || len(runs[0].Spans) != 6 || !runs[1].Complete || runs[1].Err == "" {
		t.Fatalf("Runs: %+v, %v", runs, err)
	}

	csvPath := filepath.Join(dir, "runs.csv")
	if err := WriteCSV(context.Background(), csvPath, runs); err != nil {
		t.Fatal(err)
	}
	f, _ := os.ReadFile(csvPath)
	recs, err := csv.NewReader(bytes.NewReader(f)).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("CSV: %d records, %v", len(recs), err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, want := range []string{"run_id", "config.tp", "config.drafter.kind", "stats.generated_tokens", "stats.accept_hist"} {
		if _, ok := col[want]; !ok {
			t.Errorf("CSV header %v lacks %q", recs[0], want)
		}
	}
	if got := recs[1][col["config.drafter.kind"]]; got != "ngram" {
		t.Errorf("CSV config.drafter.kind = %q, want ngram", got)
	}

	tracePath := filepath.Join(dir, "trace.json")
	if err := WriteChromeTrace(context.Background(), tracePath, runs); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(tracePath)
	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("trace does not parse: %v", err)
	}
	phases := map[string]int{}
	for _, e := range tr.TraceEvents {
		phases[e["ph"].(string)]++
	}
	if phases["X"] != 12 || phases["C"] != 6 || phases["M"] == 0 {
		t.Errorf("trace phases %v, want 12 X, 6 C and metadata", phases)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("export left temp files: %v", entries)
	}
}

func TestReadRunLogTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	writeTestLog(t, path)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-20], 0o644) // cut the last line short
	evs, err := ReadRunLog(path)
	if err != nil || len(evs) != 9 {
		t.Fatalf("ReadRunLog of a truncated log: %d events, %v; want 9", len(evs), err)
	}
	runs, _ := Runs(evs)
	if runs[1].Complete {
		t.Errorf("run without run_end marked complete")
	}
	os.WriteFile(path, append([]byte("{broken\n"), data...), 0o644)
	if _, err := ReadRunLog(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("broken first line: %v, want an error naming line 1", err)
	}
}

// A child process writes steps until it is killed with SIGKILL; every line
// it finished must read back.
func TestRunLogSurvivesKill(t *testing.T) {
	if path := os.Getenv("RIGSCOPE_RUNLOG_CHILD"); path != "" {
		l, err := CreateRunLog(path, "child")
		if err != nil {
			os.Exit(3)
		}
		l.Start(map[string]int{"tp": 1})
		for i := 0; ; i++ {
			l.Step(stepstats.Step{Tokens: i}, nil)
			if i == 50 {
				fmt.Println("ready")
			}
		}
	}
	path := filepath.Join(t.TempDir(), "child.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunLogSurvivesKill$")
	cmd.Env = append(os.Environ(), "RIGSCOPE_RUNLOG_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil {
		t.Fatalf("child: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	evs, err := ReadRunLog(path)
	if err != nil || len(evs) < 52 {
		t.Fatalf("after kill -9: %d events, %v; want at least 52", len(evs), err)
	}
	for i, ev := range evs[1:] {
		if ev.Step == nil || ev.Step.Tokens != i {
			t.Fatalf("event %d = %+v, want step %d", i+1, ev, i)
		}
	}
}
