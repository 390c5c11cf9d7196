package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"rigscope/engine"
)

// LogEvent is one line of a run's JSONL event log: a run start with the full
// config, one line per step, and a run end with the summary.
type LogEvent struct {
	Type   string            `json:"type"` // run_start | step | run_end
	RunID  int               `json:"run_id"`
	Time   time.Time         `json:"time"`
	Model  string            `json:"model,omitempty"`
	Config *engine.RunConfig `json:"config,omitempty"`
	Step   *engine.StepStats `json:"step,omitempty"`
	Stats  *engine.Stats     `json:"stats,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// RunLog appends a run's events to a JSONL file as the run goes: each line
// is written with one write call, so a crash loses at most the step in
// flight; the file is synced when the run ends. A nil *RunLog writes nothing.
type RunLog struct {
	f     *os.File
	runID int
	err   error // the first write error, reported by End
}

// CreateRunLog creates path and writes the run_start line.
func CreateRunLog(path string, rec *RunRecord) (*RunLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	l := &RunLog{f: f, runID: rec.ID}
	cfg := rec.Config
	l.write(LogEvent{Type: "run_start", RunID: rec.ID, Time: rec.Started, Model: rec.Model, Config: &cfg})
	if l.err != nil {
		f.Close()
		return nil, l.err
	}
	return l, nil
}

func (l *RunLog) write(ev LogEvent) {
	if l == nil || l.err != nil {
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		l.err = fmt.Errorf("run log %s: encode %s: %w", l.f.Name(), ev.Type, err)
		return
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		l.err = fmt.Errorf("run log: %w", err)
	}
}

// Step appends one step line.
func (l *RunLog) Step(st engine.StepStats) {
	l.write(LogEvent{Type: "step", RunID: l.runIDOrZero(), Time: time.Now(), Step: &st})
}

func (l *RunLog) runIDOrZero() int {
	if l == nil {
		return 0
	}
	return l.runID
}

// End writes the run_end line, syncs and closes the file, and returns the
// first error met while logging.
func (l *RunLog) End(st engine.Stats, runErr error) error {
	if l == nil {
		return nil
	}
	ev := LogEvent{Type: "run_end", RunID: l.runID, Time: time.Now(), Stats: &st}
	if runErr != nil {
		ev.Error = runErr.Error()
	}
	l.write(ev)
	if err := l.f.Sync(); err != nil && l.err == nil {
		l.err = fmt.Errorf("run log: %w", err)
	}
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = fmt.Errorf("run log: %w", err)
	}
	return l.err
}

// ReadRunLog parses a JSONL run log, tolerating a torn last line (a crash
// mid-write), and returns its events.
func ReadRunLog(path string) ([]LogEvent, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	var evs []LogEvent
	for line := range splitLines(b) {
		var ev LogEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			if len(evs) > 0 && line[len(line)-1] != '\n' {
				break // torn final line
			}
			return evs, fmt.Errorf("run log %s: line %d: %w", path, len(evs)+1, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		return nil, errors.New("run log " + path + ": empty")
	}
	return evs, nil
}

// splitLines yields each line including its newline (the last may lack one).
func splitLines(b []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			i := 0
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				i++
			}
			if !yield(b[:i]) {
				return
			}
			b = b[i:]
		}
	}
}
