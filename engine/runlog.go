package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"rigscope/engine/metrics"
)

var runSeq atomic.Int64

// nextRunID names a run: the time it started and a sequence number.
func (e *Engine) nextRunID() string {
	return fmt.Sprintf("%s-%03d", time.Now().Format("20060102-150405"), runSeq.Add(1))
}

// Snapshot is a copy of the live counters of the current (or last) run, for
// the panel's dashboards.
func (e *Engine) Snapshot() metrics.Snapshot { return e.rec.Snapshot() }

// DefaultLogDir is where the panel keeps run logs when no --log-dir is
// given: rigscope/runs in the user cache folder, created and kept
// owner-only (the logs hold prompts).
func DefaultLogDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("run logs: %w", err)
	}
	dir := filepath.Join(cache, "rigscope", "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("run logs: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // made 0755 by earlier versions
		return "", fmt.Errorf("run logs: %w", err)
	}
	return dir, nil
}

// runLog writes a run's JSONL event log as the run goes (Options.LogDir):
// the one writer of run logs. The zero value (no directory) writes nothing.
type runLog struct{ l *metrics.RunLog }

func (e *Engine) openRunLog(runID string, cfg RunConfig) (*runLog, error) {
	if e.opts.LogDir == "" {
		return &runLog{}, nil
	}
	l, err := metrics.CreateRunLogIn(e.opts.LogDir, runID)
	if err != nil {
		return nil, err
	}
	if err := l.StartModel(e.info.Path, cfg); err != nil {
		l.Close()
		return nil, err
	}
	return &runLog{l}, nil
}

// path is the log's file ("" when none is written).
func (r *runLog) path() string { return r.l.Path() }

// step appends one step with its spans per rank. A failed write is kept by
// the log and reported when the run ends.
func (r *runLog) step(s StepStats, ranks int) {
	if r.l != nil {
		r.l.Step(s, metrics.StepSpans(s, ranks))
	}
}

// end writes the run's summary, syncs and closes the log, and returns the
// first error any write met.
func (r *runLog) end(st Stats, runErr error) error {
	if r.l == nil {
		return nil
	}
	if err := r.l.Finish(st, runErr); err != nil {
		return fmt.Errorf("run log: %w", err)
	}
	return nil
}
