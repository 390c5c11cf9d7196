//go:build ci

package ui

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"fyne.io/fyne/v2/test"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
)

func TestExportWritesWhatTheTableShows(t *testing.T) {
	test.NewTempApp(t)
	v := NewRunsView()
	v.Add(fixedRecord(1, "ring", 101.5))
	v.Add(fixedRecord(2, "tree", 87.25))
	dir := t.TempDir()
	paths, err := ExportRuns(context.Background(), dir, v.Runs())
	if err != nil {
		t.Fatalf("ExportRuns: %v", err)
	}
	if len(paths) != 4 {
		t.Errorf("ExportRuns wrote %v, want 4 files", paths)
	}

	f, err := os.Open(filepath.Join(dir, metrics.ExportRunsCSVName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("runs.csv: %v", err)
	}
	if len(rows) != 3 {
		t.Fatalf("runs.csv has %d rows, want header + 2", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	// Every figure the table shows is a CSV column holding the same figure
	// raw (one field list feeds both); the table adds units.
	for r, run := range v.Runs() {
		for c, rc := range runsColumns {
			f := runFields[rc.field]
			if got, want := rows[r+1][col[f.csv]], f.raw(run); got != want {
				t.Errorf("run %d: runs.csv %s = %q, want %q", r+1, f.csv, got, want)
			}
			if got, want := v.Cell(r, c), f.text(run); got != want {
				t.Errorf("run %d: table %q = %q, want %q", r+1, rc.title, got, want)
			}
		}
		if got := rows[r+1][col["bytes_moved"]]; got != strconv.FormatInt(run.Stats.BytesMoved, 10) {
			t.Errorf("run %d: runs.csv bytes_moved = %q, want %d", r+1, got, run.Stats.BytesMoved)
		}
		if got := rows[r+1][col["verdict"]]; got != stepstats.Pays {
			t.Errorf("run %d: runs.csv verdict = %q, want %s", r+1, got, stepstats.Pays)
		}
	}

	// JSONL: run_start (with config), steps, run_end per run.
	jf, err := os.Open(filepath.Join(dir, metrics.ExportJSONLName))
	if err != nil {
		t.Fatal(err)
	}
	defer jf.Close()
	var types []string
	sc := bufio.NewScanner(jf)
	for sc.Scan() {
		var ev metrics.LogEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("runs.jsonl line %q: %v", sc.Text(), err)
		}
		var cfg engine.RunConfig
		if ev.Type == "run_start" && (json.Unmarshal(ev.Config, &cfg) != nil || cfg.AllReduce == "" || ev.Model == "") {
			t.Errorf("run_start without the model and the full config: %s", sc.Text())
		}
		types = append(types, ev.Type)
	}
	want := []string{"run_start", "step", "step", "run_end", "run_start", "step", "step", "run_end"}
	if !slices.Equal(types, want) {
		t.Errorf("runs.jsonl event types = %v, want %v", types, want)
	}
	evs, err := metrics.ReadRunLog(filepath.Join(dir, metrics.ExportJSONLName))
	if err != nil {
		t.Fatalf("metrics.ReadRunLog(runs.jsonl): %v", err)
	}
	back, err := metrics.Runs(evs)
	if err != nil || len(back) != 2 {
		t.Fatalf("metrics.Runs(runs.jsonl events) = %d runs, %v; want 2", len(back), err)
	}
	for i, r := range back {
		orig := v.Runs()[i]
		if r.RunID != strconv.Itoa(orig.ID) || r.Model != orig.Model || len(r.Steps) != len(orig.Steps) || !r.Complete || len(r.BytesSent) != 1 {
			t.Errorf("run %d read back from runs.jsonl = %+v; want id %d, model %q, %d steps, complete, bytes per rank", i+1, r, orig.ID, orig.Model, len(orig.Steps))
		}
		if got := r.Steps[1]; got != orig.Steps[1] {
			t.Errorf("run %d step 2 read back = %+v; want the record's %+v", i+1, got, orig.Steps[1])
		}
	}

	// Steps CSV: units in the column names, one row per step.
	sf, _ := os.Open(filepath.Join(dir, metrics.ExportStepsCSVName))
	defer sf.Close()
	srows, err := csv.NewReader(sf).ReadAll()
	if err != nil || len(srows) != 5 || srows[0][2] != "t_ms" {
		t.Errorf("steps.csv = %v (%v), want header with t_ms and 4 step rows", srows, err)
	}

	// Chrome trace: parses, has spans per rank and counters.
	tb, err := os.ReadFile(filepath.Join(dir, metrics.ExportTraceName))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct{ Name, Ph string } `json:"traceEvents"`
	}
	if err := json.Unmarshal(tb, &tr); err != nil {
		t.Fatalf("trace.json: %v", err)
	}
	count := map[string]int{}
	for _, e := range tr.TraceEvents {
		count[e.Ph+" "+e.Name]++
	}
	for _, k := range []string{"X draft", "X verify", "X allreduce", "C " + metrics.TraceThroughputCounter, "C tokens", "M thread_name"} {
		if count[k] == 0 {
			t.Errorf("trace.json has no %q events (have %v)", k, count)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		t.Errorf("export dir holds %d entries, want exactly the 4 exports (no temp files left)", len(ents))
	}
}
