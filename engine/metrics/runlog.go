package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"rigscope/engine/stepstats"
)

// Span is one timed piece of a step on one rank, for traces.
type Span struct {
	Rank  int           `json:"rank"`
	Name  string        `json:"name"`     // draft | verify | allreduce | ...
	Start time.Duration `json:"start_ns"` // since run start
	Dur   time.Duration `json:"dur_ns"`
}

// StepSpans lays one step out as trace spans on ranks 0..ranks-1, ending at
// s.At: the drafter runs once beside rank 0, then every rank verifies, and
// the allreduce (the group's wait, inside verify) closes the step on each
// rank.
func StepSpans(s stepstats.Step, ranks int) []Span {
	var spans []Span
	t0 := s.At - s.Draft - s.Verify
	for rank := range max(ranks, 1) {
		if s.Draft > 0 && rank == 0 {
			spans = append(spans, Span{Name: "draft", Rank: rank, Start: t0, Dur: s.Draft})
		}
		spans = append(spans, Span{Name: "verify", Rank: rank, Start: t0 + s.Draft, Dur: s.Verify})
		if s.AllReduce > 0 {
			spans = append(spans, Span{Name: "allreduce", Rank: rank, Start: s.At - s.AllReduce, Dur: s.AllReduce})
		}
	}
	return spans
}

// LogEvent is one line of a run log. Type says which fields are set:
// run_start (Config, Model), step (Step, Spans), run_end (Stats, Err).
type LogEvent struct {
	Type   string          `json:"type"`
	RunID  string          `json:"run_id"`
	Time   time.Time       `json:"time"`
	Model  string          `json:"model,omitempty"`
	Config json.RawMessage `json:"config,omitempty"`
	Step   *stepstats.Step `json:"step,omitempty"`
	Spans  []Span          `json:"spans,omitempty"`
	Stats  json.RawMessage `json:"stats,omitempty"`
	Err    string          `json:"error,omitempty"`
}

// RunLog appends one run's events to a JSONL file: each event is written
// with one write on the *os.File (no user-space buffer holds lines), and End
// fsyncs, so a crash loses at most the line being written. The first error
// any call meets is kept and returned again by Finish, so a writer may
// ignore Step's error mid-run and report the log's health at the end. A nil
// *RunLog writes nothing and reports no error.
type RunLog struct {
	f     *os.File
	runID string
	err   error // the first error any write, sync or close met
}

// CreateRunLog creates path for the run runID: exclusively (an existing
// file, or a symlink planted at the name, is an error, never followed or
// appended to) and readable by its owner only (logs hold prompts).
func CreateRunLog(path, runID string) (*RunLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	return &RunLog{f: f, runID: runID}, nil
}

// CreateRunLogIn creates dir (owner-only, when it does not exist) and in it
// the log of run runID, named runID.jsonl, or runID-RANDOM.jsonl when that
// name is taken (CreateRunLog's rules: exclusive, 0600).
func CreateRunLogIn(dir, runID string) (*RunLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	l, err := CreateRunLog(filepath.Join(dir, runID+".jsonl"), runID)
	if !errors.Is(err, os.ErrExist) {
		return l, err
	}
	f, err := os.CreateTemp(dir, runID+"-*.jsonl") // O_EXCL, 0600
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	return &RunLog{f: f, runID: runID}, nil
}

// Path is the log's file name; "" for a nil log.
func (l *RunLog) Path() string {
	if l == nil {
		return ""
	}
	return l.f.Name()
}

// keep records err as the log's first error and returns it.
func (l *RunLog) keep(err error) error {
	if err != nil && l.err == nil {
		l.err = err
	}
	return err
}

func (l *RunLog) write(ev LogEvent) error {
	ev.RunID = l.runID
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return l.keep(fmt.Errorf("run log %s: %s event: %w", l.f.Name(), ev.Type, err))
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return l.keep(fmt.Errorf("run log: %w", err))
	}
	return nil
}

// Start writes the run_start event; config is marshalled as JSON.
func (l *RunLog) Start(config any) error { return l.StartModel("", config) }

// StartModel writes the run_start event naming the model the run uses.
func (l *RunLog) StartModel(model string, config any) error {
	if l == nil {
		return nil
	}
	raw, err := json.Marshal(config)
	if err != nil {
		return l.keep(fmt.Errorf("run log %s: config: %w", l.f.Name(), err))
	}
	return l.write(LogEvent{Type: "run_start", Model: model, Config: raw})
}

// Step writes one step event.
func (l *RunLog) Step(s stepstats.Step, spans []Span) error {
	if l == nil {
		return nil
	}
	return l.write(LogEvent{Type: "step", Step: &s, Spans: spans})
}

// End writes the run_end event (stats marshalled as JSON; runErr, if any,
// as its message) and fsyncs the file.
func (l *RunLog) End(stats any, runErr error) error {
	if l == nil {
		return nil
	}
	raw, err := json.Marshal(stats)
	if err != nil {
		return l.keep(fmt.Errorf("run log %s: stats: %w", l.f.Name(), err))
	}
	ev := LogEvent{Type: "run_end", Stats: raw}
	if runErr != nil {
		ev.Err = runErr.Error()
	}
	if err := l.write(ev); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return l.keep(fmt.Errorf("run log: %w", err))
	}
	return nil
}

// Close closes the file.
func (l *RunLog) Close() error {
	if l == nil {
		return nil
	}
	if err := l.f.Close(); err != nil {
		return l.keep(fmt.Errorf("run log: %w", err))
	}
	return nil
}

// Finish ends the run (End), closes the file, and returns the first error
// the log met since it was opened, mid-run steps included.
func (l *RunLog) Finish(stats any, runErr error) error {
	if l == nil {
		return nil
	}
	l.End(stats, runErr)
	l.Close()
	return l.err
}

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

// RunRecord is one run: assembled from its log events (Runs), or built by a
// caller that kept the run in memory (the panel's runs table) for export.
type RunRecord struct {
	RunID    string           `json:"run_id"`
	Model    string           `json:"model,omitempty"`
	Started  time.Time        `json:"started"`
	Ended    time.Time        `json:"ended"` // zero when the log stops mid-run
	Config   json.RawMessage  `json:"config,omitempty"`
	Stats    json.RawMessage  `json:"stats,omitempty"`
	Err      string           `json:"error,omitempty"`
	Steps    []stepstats.Step `json:"steps,omitempty"`
	Spans    []Span           `json:"spans,omitempty"` // in step order
	Complete bool             `json:"complete"`        // has its run_end

	// Label describes the run in a few words (the trace's process name
	// shows it); "" shows the run id alone.
	Label string `json:"label,omitempty"`
	// BytesSent is the allreduce traffic each rank sent over the run
	// (from the stats' bytes_sent_per_rank), for the trace's throughput
	// counter; nil when unknown.
	BytesSent []int64 `json:"bytes_sent_per_rank,omitempty"`
	// Summary holds extra leading CSV columns, already formatted as the
	// producer shows them (the panel's runs table), in column order.
	Summary []Field `json:"summary,omitempty"`
}

// Field is one named, formatted summary value of a run.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// bytesSent reads bytes_sent_per_rank from a run's stats, if present.
func bytesSent(stats json.RawMessage) []int64 {
	var s struct {
		BytesSent []int64 `json:"bytes_sent_per_rank"`
	}
	if len(stats) == 0 || json.Unmarshal(stats, &s) != nil {
		return nil
	}
	return s.BytesSent
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
			r.Started, r.Config, r.Model = ev.Time, ev.Config, ev.Model
		case "step":
			if ev.Step != nil {
				r.Steps = append(r.Steps, *ev.Step)
			}
			r.Spans = append(r.Spans, ev.Spans...)
		case "run_end":
			r.Ended, r.Stats, r.Err, r.Complete = ev.Time, ev.Stats, ev.Err, true
			r.BytesSent = bytesSent(ev.Stats)
		default:
			return nil, errors.New("run log: unknown event type " + ev.Type)
		}
	}
	return out, nil
}
