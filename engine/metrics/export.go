package metrics

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// File names Export writes into its folder.
const (
	ExportJSONLName    = "runs.jsonl"
	ExportRunsCSVName  = "runs.csv"
	ExportStepsCSVName = "steps.csv"
	ExportTraceName    = "trace.json"
)

// Export writes runs into dir in every format (the JSONL event log, the run
// summary CSV, the per-step CSV and the Chrome trace), each file atomically,
// and returns the paths written. Cancelling ctx (a signal, through
// signal.NotifyContext) stops it and leaves no temp file behind.
func Export(ctx context.Context, dir string, runs []RunRecord) ([]string, error) {
	files := []struct {
		name  string
		write func(context.Context, string, []RunRecord) error
	}{
		{ExportJSONLName, WriteJSONL},
		{ExportRunsCSVName, WriteCSV},
		{ExportStepsCSVName, WriteStepsCSV},
		{ExportTraceName, WriteChromeTrace},
	}
	var paths []string
	for _, f := range files {
		removeStaleTemps(dir, f.name)
		p := filepath.Join(dir, f.name)
		if err := f.write(ctx, p, runs); err != nil {
			return paths, fmt.Errorf("export: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// staleTemp is how old a temp file of ours must be to be taken for the
// leftover of a process killed outright (SIGKILL, power loss) rather than
// an export in progress.
const staleTemp = 10 * time.Minute

// removeStaleTemps removes the temp files WriteFileAtomicCtx left for name
// in dir when its process could not clean up (killed with SIGKILL).
func removeStaleTemps(dir, name string) {
	old, _ := filepath.Glob(filepath.Join(dir, tempPattern(name)))
	for _, p := range old {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleTemp {
			os.Remove(p) // best effort: a file we cannot remove is someone else's
		}
	}
}

// tempPattern is the os.CreateTemp pattern of name's temp files.
func tempPattern(name string) string { return "." + name + ".*.tmp" }

// WriteFileAtomic is WriteFileAtomicCtx that cannot be cancelled.
func WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomicCtx(context.Background(), path, data)
}

// afterTempCreated, when set (tests), is called with each temp file's name
// once it exists.
var afterTempCreated func(name string)

// writeChunk is how much WriteFileAtomicCtx writes between checks of ctx.
const writeChunk = 1 << 20

// WriteFileAtomicCtx writes data to path through a temp file in the same
// directory and a rename, so readers see the old file or the new one. The
// temp file is removed on every error, and as soon as ctx is cancelled,
// even while a write is in progress; a cancelled write returns ctx's cause
// and leaves path as it was.
func WriteFileAtomicCtx(ctx context.Context, path string, data []byte) (err error) {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPattern(filepath.Base(path)))
	if err != nil {
		return err
	}
	name := tmp.Name()
	stop := context.AfterFunc(ctx, func() { os.Remove(name) })
	defer func() {
		if err != nil {
			stop()
			tmp.Close()
			os.Remove(name)
		}
	}()
	if afterTempCreated != nil {
		afterTempCreated(name)
	}
	for len(data) > 0 {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		n := min(len(data), writeChunk)
		if _, err := tmp.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if !stop() { // the cleanup ran: the temp file is gone
		return context.Cause(ctx)
	}
	return os.Rename(name, path)
}

// flatten turns a JSON object into dotted-key columns: nested objects
// recurse, arrays and scalars are written as their JSON text (strings bare).
func flatten(prefix string, raw json.RawMessage, out map[string]string) error {
	if len(raw) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[prefix] = s
		} else {
			out[prefix] = string(bytes.TrimSpace(raw))
		}
		return nil
	}
	for k, v := range obj {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if err := flatten(key, v, out); err != nil {
			return err
		}
	}
	return nil
}

// writeCSVFile writes header and rows as CSV to path atomically; what
// names the file in errors.
func writeCSVFile(ctx context.Context, path, what string, header []string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	w.WriteAll(rows) // flushes
	if err := w.Error(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := WriteFileAtomicCtx(ctx, path, buf.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// WriteCSV writes one row per run: run_id, model, started, ended, complete,
// error, then the run's Summary fields (in order of first appearance; a
// name already taken is skipped), then every config.* and stats.* field
// (nested objects as dotted names, arrays as JSON), sorted by name.
func WriteCSV(ctx context.Context, path string, runs []RunRecord) error {
	header := []string{"run_id", "model", "started", "ended", "complete", "error"}
	taken := map[string]bool{}
	for _, h := range header {
		taken[h] = true
	}
	rows := make([]map[string]string, len(runs))
	cols := map[string]bool{}
	for i, r := range runs {
		m := map[string]string{}
		if err := flatten("config", r.Config, m); err != nil {
			return fmt.Errorf("csv: run %s: %w", r.RunID, err)
		}
		if err := flatten("stats", r.Stats, m); err != nil {
			return fmt.Errorf("csv: run %s: %w", r.RunID, err)
		}
		for k := range m {
			cols[k] = true
		}
		for _, f := range r.Summary {
			if !taken[f.Name] {
				taken[f.Name] = true
				header = append(header, f.Name)
			}
			if _, ok := m[f.Name]; !ok {
				m[f.Name] = f.Value
			}
		}
		m["run_id"], m["model"] = r.RunID, r.Model
		m["started"] = r.Started.Format(timeFormat)
		if !r.Ended.IsZero() {
			m["ended"] = r.Ended.Format(timeFormat)
		}
		m["complete"] = strconv.FormatBool(r.Complete)
		m["error"] = r.Err
		rows[i] = m
	}
	rest := make([]string, 0, len(cols))
	for c := range cols {
		if !taken[c] {
			rest = append(rest, c)
		}
	}
	sort.Strings(rest)
	header = append(header, rest...)
	recs := make([][]string, len(rows))
	for i, m := range rows {
		recs[i] = make([]string, len(header))
		for j, h := range header {
			recs[i][j] = m[h]
		}
	}
	return writeCSVFile(ctx, path, "csv", header, recs)
}

// StepsCSVHeader names the per-step CSV columns, units in the names.
var StepsCSVHeader = []string{"run_id", "step", "t_ms", "draft_ms", "verify_ms", "allreduce_ms", "other_ms", "drafted_tokens", "accepted_tokens", "new_tokens", "draft_depth", "baseline"}

// WriteStepsCSV writes one row per step of every run (StepsCSVHeader);
// t_ms is the step's end since its run started, verify_ms includes
// allreduce_ms; baseline marks plain steps taken to measure the baseline. A step without a number gets its 1-based index.
func WriteStepsCSV(ctx context.Context, path string, runs []RunRecord) error {
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	var rows [][]string
	for _, r := range runs {
		for i, s := range r.Steps {
			step := s.Step
			if step == 0 {
				step = i + 1
			}
			rows = append(rows, []string{
				r.RunID, strconv.Itoa(step), ms(s.At), ms(s.Draft), ms(s.Verify), ms(s.AllReduce), ms(s.Other),
				strconv.Itoa(s.Drafted), strconv.Itoa(s.Accepted), strconv.Itoa(s.Tokens),
				strconv.Itoa(s.Depth), strconv.FormatBool(s.Baseline),
			})
		}
	}
	return writeCSVFile(ctx, path, "steps csv", StepsCSVHeader, rows)
}

// WriteJSONL writes runs as the event log RunLog writes as a run goes:
// run_start with the full config, one step line per step (with the spans
// that start before the step's end), run_end with the stats (omitted for a
// run that is not Complete). ReadRunLog and Runs read it back.
func WriteJSONL(ctx context.Context, path string, runs []RunRecord) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range runs {
		evs := []LogEvent{{Type: "run_start", RunID: r.RunID, Time: r.Started, Model: r.Model, Config: r.Config}}
		spans := r.Spans
		for i := range r.Steps {
			s := r.Steps[i]
			n := len(spans)
			if i < len(r.Steps)-1 {
				n = 0
				for n < len(spans) && spans[n].Start < s.At {
					n++
				}
			}
			evs = append(evs, LogEvent{Type: "step", RunID: r.RunID, Time: r.Started.Add(s.At), Step: &s, Spans: spans[:n]})
			spans = spans[n:]
		}
		if r.Complete {
			evs = append(evs, LogEvent{Type: "run_end", RunID: r.RunID, Time: r.Ended, Stats: r.Stats, Err: r.Err})
		}
		for _, ev := range evs {
			if err := enc.Encode(ev); err != nil {
				return fmt.Errorf("jsonl: run %s: %s event: %w", r.RunID, ev.Type, err)
			}
		}
	}
	if err := WriteFileAtomicCtx(ctx, path, buf.Bytes()); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	return nil
}

// traceEvent is one Chrome trace event (the Trace Event Format); ts and
// dur are microseconds.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"` // X = complete span, C = counter, M = metadata
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// TraceThroughputCounter names the trace's per-rank PCIe throughput counter.
const TraceThroughputCounter = "PCIe throughput (MB/s)"

// WriteChromeTrace writes runs as a Chrome trace (chrome://tracing,
// Perfetto): one process per run (pid = run index + 1, named by run id and
// label), one thread per rank (tid = rank), an "X" event per span (draft
// and verify in category spec, allreduce in comm), and per step a "tokens"
// counter (new and accepted tokens). When the run's BytesSent is known, a
// TraceThroughputCounter counter per step gives each rank's mean allreduce
// bytes per step over the step's verify time, dropping to 0 at the step's
// end. Runs are laid out on their own clocks (each starts at 0).
func WriteChromeTrace(ctx context.Context, path string, runs []RunRecord) error {
	evs := []traceEvent{}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	for i, r := range runs {
		pid := i + 1
		name := "run " + r.RunID
		if r.Label != "" {
			name += " (" + r.Label + ")"
		}
		evs = append(evs, traceEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": name}})
		ranks := map[int]bool{}
		for _, s := range r.Spans {
			if !ranks[s.Rank] {
				ranks[s.Rank] = true
				evs = append(evs, traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: s.Rank, Args: map[string]any{"name": "rank " + strconv.Itoa(s.Rank)}})
			}
			cat := "spec"
			if s.Name == "allreduce" {
				cat = "comm"
			}
			evs = append(evs, traceEvent{Name: s.Name, Cat: cat, Ph: "X", Ts: us(s.Start), Dur: us(s.Dur), Pid: pid, Tid: s.Rank})
		}
		for _, st := range r.Steps {
			evs = append(evs, traceEvent{Name: "tokens", Ph: "C", Ts: us(st.At), Pid: pid,
				Args: map[string]any{"new": st.Tokens, "accepted": st.Accepted}})
			if len(r.BytesSent) == 0 || st.Verify <= 0 {
				continue
			}
			busy, idle := map[string]any{}, map[string]any{}
			for rank, b := range r.BytesSent {
				key := "rank " + strconv.Itoa(rank)
				busy[key] = float64(b) / float64(len(r.Steps)) / us(st.Verify) // bytes/µs = MB/s
				idle[key] = 0
			}
			evs = append(evs,
				traceEvent{Name: TraceThroughputCounter, Ph: "C", Ts: us(st.At - st.Verify), Pid: pid, Args: busy},
				traceEvent{Name: TraceThroughputCounter, Ph: "C", Ts: us(st.At), Pid: pid, Args: idle})
		}
	}
	data, err := json.Marshal(struct {
		TraceEvents     []traceEvent `json:"traceEvents"`
		DisplayTimeUnit string       `json:"displayTimeUnit"`
	}{evs, "ms"})
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if err := WriteFileAtomicCtx(ctx, path, data); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}
