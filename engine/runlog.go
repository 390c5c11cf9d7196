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

// runLog writes a run's JSONL event log as the run goes (Options.LogDir);
// the zero value (no directory) writes nothing.
type runLog struct {
	l   *metrics.RunLog
	err error // the first failed write; the run reports it at its end
}

func (e *Engine) openRunLog(runID string, cfg RunConfig) (*runLog, error) {
	if e.opts.LogDir == "" {
		return &runLog{}, nil
	}
	if err := os.MkdirAll(e.opts.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	l, err := metrics.OpenRunLog(filepath.Join(e.opts.LogDir, runID+".jsonl"), runID)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	if err := l.Start(struct {
		Model  string    `json:"model"`
		Config RunConfig `json:"config"`
	}{e.info.Path, cfg}); err != nil {
		l.Close()
		return nil, fmt.Errorf("run log: %w", err)
	}
	return &runLog{l: l}, nil
}

// step appends one step; spans are per rank (the verify span covers every
// rank; allreduce is reported on each rank as the group's wait).
func (r *runLog) step(s metrics.StepSample, ranks int) {
	if r.l == nil {
		return
	}
	var spans []metrics.Span
	t0 := s.At - s.Draft - s.Verify
	for rank := 0; rank < ranks; rank++ {
		if s.Draft > 0 && rank == 0 {
			spans = append(spans, metrics.Span{Name: "draft", Rank: rank, Start: t0, Dur: s.Draft})
		}
		spans = append(spans, metrics.Span{Name: "verify", Rank: rank, Start: t0 + s.Draft, Dur: s.Verify})
		if s.AllReduce > 0 {
			spans = append(spans, metrics.Span{Name: "allreduce", Rank: rank, Start: t0 + s.Draft + s.Verify - s.AllReduce, Dur: s.AllReduce})
		}
	}
	if err := r.l.Step(s, spans); err != nil && r.err == nil {
		r.err = fmt.Errorf("run log: %w", err)
	}
}

// end writes the run's summary, syncs and closes the log, and returns the
// first error any write met.
func (r *runLog) end(st Stats, runErr error) error {
	if r.l == nil {
		return nil
	}
	if err := r.l.End(st, runErr); err != nil && r.err == nil {
		r.err = fmt.Errorf("run log: %w", err)
	}
	if err := r.l.Close(); err != nil && r.err == nil {
		r.err = fmt.Errorf("run log: %w", err)
	}
	return r.err
}
