package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Span is one timed piece of a step on one rank, for traces.
type Span struct {
	Rank  int           `json:"rank"`
	Name  string        `json:"name"`     // draft | verify | allreduce | ...
	Start time.Duration `json:"start_ns"` // since run start
	Dur   time.Duration `json:"dur_ns"`
}

// LogEvent is one line of a run log. Type says which fields are set:
// run_start (Config), step (Step, Spans), run_end (Stats, Err).
type LogEvent struct {
	Type   string          `json:"type"`
	RunID  string          `json:"run_id"`
	Time   time.Time       `json:"time"`
	Config json.RawMessage `json:"config,omitempty"`
	Step   *StepSample     `json:"step,omitempty"`
	Spans  []Span          `json:"spans,omitempty"`
	Stats  json.RawMessage `json:"stats,omitempty"`
	Err    string          `json:"error,omitempty"`
}

// RunLog appends one run's events to a JSONL file: each event is written
// with one write on the *os.File (no user-space buffer holds lines), and End
// fsyncs, so a crash loses at most the line being written.
type RunLog struct {
	f     *os.File
	runID string
}

// OpenRunLog opens (creating) path for appending the run runID.
func OpenRunLog(path, runID string) (*RunLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	return &RunLog{f: f, runID: runID}, nil
}

func (l *RunLog) write(ev LogEvent) error {
	ev.RunID = l.runID
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("run log %s: %s event: %w", l.f.Name(), ev.Type, err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("run log: %w", err)
	}
	return nil
}

// Start writes the run_start event; config is marshalled as JSON.
func (l *RunLog) Start(config any) error {
	raw, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("run log %s: config: %w", l.f.Name(), err)
	}
	return l.write(LogEvent{Type: "run_start", Config: raw})
}

// Step writes one step event.
func (l *RunLog) Step(s StepSample, spans []Span) error {
	return l.write(LogEvent{Type: "step", Step: &s, Spans: spans})
}

// End writes the run_end event (stats marshalled as JSON; runErr, if any,
// as its message) and fsyncs the file.
func (l *RunLog) End(stats any, runErr error) error {
	raw, err := json.Marshal(stats)
	if err != nil {
		return fmt.Errorf("run log %s: stats: %w", l.f.Name(), err)
	}
	ev := LogEvent{Type: "run_end", Stats: raw}
	if runErr != nil {
		ev.Err = runErr.Error()
	}
	if err := l.write(ev); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("run log: %w", err)
	}
	return nil
}

// Close closes the file.
func (l *RunLog) Close() error { return l.f.Close() }

// ReadRunLog reads every complete event of a JSONL run log. A last line
// without its newline (a write cut short by a crash) is dropped; a broken
// line elsewhere is an error naming its line number.
func ReadRunLog(path string) ([]LogEvent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	var out []LogEvent
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // truncated last line
		}
		line := bytes.TrimSpace(data[:i])
		data = data[i+1:]
		if len(line) == 0 {
			continue
		}
		var ev LogEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return out, fmt.Errorf("run log %s: line %d: %w", path, n, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// RunRecord is one run assembled from its log events.
type RunRecord struct {
	RunID    string          `json:"run_id"`
	Started  time.Time       `json:"started"`
	Ended    time.Time       `json:"ended"` // zero when the log stops mid-run
	Config   json.RawMessage `json:"config,omitempty"`
	Stats    json.RawMessage `json:"stats,omitempty"`
	Err      string          `json:"error,omitempty"`
	Steps    []StepSample    `json:"steps,omitempty"`
	Spans    []Span          `json:"spans,omitempty"`
	Complete bool            `json:"complete"` // has its run_end
}

// Runs groups events into runs in order of first appearance.
func Runs(events []LogEvent) ([]RunRecord, error) {
	var out []RunRecord
	idx := map[string]int{}
	for _, ev := range events {
		i, ok := idx[ev.RunID]
		if !ok {
			if ev.Type != "run_start" {
				return nil, fmt.Errorf("run log: %s event of run %q before its run_start", ev.Type, ev.RunID)
			}
			i = len(out)
			idx[ev.RunID] = i
			out = append(out, RunRecord{RunID: ev.RunID})
		}
		r := &out[i]
		switch ev.Type {
		case "run_start":
			r.Started, r.Config = ev.Time, ev.Config
		case "step":
			if ev.Step != nil {
				r.Steps = append(r.Steps, *ev.Step)
			}
			r.Spans = append(r.Spans, ev.Spans...)
		case "run_end":
			r.Ended, r.Stats, r.Err, r.Complete = ev.Time, ev.Stats, ev.Err, true
		default:
			return nil, errors.New("run log: unknown event type " + ev.Type)
		}
	}
	return out, nil
}
