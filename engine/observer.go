package engine

import (
	"path/filepath"
	"time"

	"rigscope/engine/metrics"
)

// Observer is told of every run an engine makes, as the run goes, so an
// exporter (engine/metrics/prom, the Prometheus one) can keep totals over
// the process's lifetime. Options.Observer sets it; nil observes nothing.
type Observer interface {
	// RunStarted is called once a run's configuration is resolved, before
	// prefill; the RunObserver it returns receives that run's events.
	RunStarted(RunStart) RunObserver
}

// RunObserver receives one run's events, on the run's goroutine and in
// order: FirstToken (unless the run fails before), Step for every step,
// then RunEnded. Its methods must not block.
type RunObserver interface {
	// FirstToken: prefill is done and the first token sampled, ttft after
	// the run's start (the figure Stats.TimeToFirstTokenMs reports).
	FirstToken(ttft time.Duration)
	Step(StepStats)
	// RunEnded: the run is over, also after an error (StopReason "error").
	RunEnded(Stats)
}

// RunStart describes a run to an Observer.
type RunStart struct {
	Model        string        // ModelInfo.ServedName
	Drafter      DrafterConfig // normalized: Kind is never "", K is 0 for none
	TP           int
	Backend      string // the allreduce backend as the run asked for it ("" = the default)
	PromptTokens int
	// AllReduce and Bytes are the run's own allreduce latency histograms
	// and per-rank byte counters, written live by every rank without a
	// lock; an observer reads them and never resets them.
	AllReduce *metrics.LatencySet
	Bytes     *metrics.RankBytes
}

// ServedName is the model's name as the panel shows it and an observer
// labels its runs (vLLM's served_model_name): the file's or folder's base
// name, or the synthetic spec.
func (i ModelInfo) ServedName() string {
	if i.Format == "synthetic" {
		return i.Path
	}
	return filepath.Base(i.Path)
}

// runObserver forwards one run's events to the engine's Observer; with no
// Observer, or before RunStarted, it forwards nothing.
type runObserver struct {
	o RunObserver
}

func (r *runObserver) start(o Observer, rs RunStart) {
	if o != nil {
		r.o = o.RunStarted(rs)
	}
}

func (r *runObserver) firstToken(ttft time.Duration) {
	if r.o != nil {
		r.o.FirstToken(ttft)
	}
}

// watch passes every event on to sink, telling the observer of steps and
// of the run's end.
func (r *runObserver) watch(sink func(Event)) func(Event) {
	return func(ev Event) {
		if r.o != nil {
			switch ev.Kind {
			case EventStep:
				r.o.Step(ev.Step)
			case EventDone:
				r.o.RunEnded(ev.Stats)
			}
		}
		sink(ev)
	}
}
