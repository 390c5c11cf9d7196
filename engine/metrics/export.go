package metrics

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// WriteFileAtomic writes data to path through a temp file in the same
// directory and a rename, so readers see the old file or the new one.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
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

// WriteCSV writes one row per run: run_id, started, ended, complete, error,
// then every config.* and stats.* field (nested objects as dotted names,
// arrays as JSON), columns sorted by name.
func WriteCSV(path string, runs []RunRecord) error {
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
		m["run_id"] = r.RunID
		m["started"] = r.Started.Format("2006-01-02T15:04:05.000Z07:00")
		if !r.Ended.IsZero() {
			m["ended"] = r.Ended.Format("2006-01-02T15:04:05.000Z07:00")
		}
		m["complete"] = strconv.FormatBool(r.Complete)
		m["error"] = r.Err
		rows[i] = m
	}
	header := []string{"run_id", "started", "ended", "complete", "error"}
	rest := make([]string, 0, len(cols))
	for c := range cols {
		rest = append(rest, c)
	}
	sort.Strings(rest)
	header = append(header, rest...)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	for _, m := range rows {
		rec := make([]string, len(header))
		for i, h := range header {
			rec[i] = m[h]
		}
		w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	if err := WriteFileAtomic(path, buf.Bytes()); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	return nil
}

// traceEvent is one Chrome trace event (the Trace Event Format); ts and
// dur are microseconds.
type traceEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChromeTrace writes runs as a Chrome trace (chrome://tracing,
// Perfetto): one process per run (pid = run index + 1, named by run id), one
// thread per rank (tid = rank), an "X" event per span, and "C" counter
// events per step (tokens and accepted drafts). Runs are laid out on their
// own clocks (each starts at 0).
func WriteChromeTrace(path string, runs []RunRecord) error {
	evs := []traceEvent{}
	us := func(d interface{ Nanoseconds() int64 }) float64 { return float64(d.Nanoseconds()) / 1e3 }
	for i, r := range runs {
		pid := i + 1
		evs = append(evs, traceEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": "run " + r.RunID}})
		ranks := map[int]bool{}
		for _, s := range r.Spans {
			if !ranks[s.Rank] {
				ranks[s.Rank] = true
				evs = append(evs, traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: s.Rank, Args: map[string]any{"name": "rank " + strconv.Itoa(s.Rank)}})
			}
			evs = append(evs, traceEvent{Name: s.Name, Ph: "X", Ts: us(s.Start), Dur: us(s.Dur), Pid: pid, Tid: s.Rank})
		}
		for _, st := range r.Steps {
			evs = append(evs, traceEvent{Name: "step", Ph: "C", Ts: us(st.At), Pid: pid,
				Args: map[string]any{"tokens": st.Tokens, "accepted": st.Accepted}})
		}
	}
	data, err := json.Marshal(struct {
		TraceEvents     []traceEvent `json:"traceEvents"`
		DisplayTimeUnit string       `json:"displayTimeUnit"`
	}{evs, "ms"})
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if err := WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}
