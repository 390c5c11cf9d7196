// Package stepstats is the one record of a decode step that flows from the
// speculative loop to the engine's events, the live recorder, the run log,
// the exports and the panel, and the one place every figure derived from
// steps is computed: mean acceptance length, per-position acceptance,
// tokens per step, the baseline, break-even and speedup with their
// confidence intervals, and the verdict in words.
package stepstats

import "time"

// Step is one decode step (plain or speculative) as measured. Draft,
// Verify and Other add up to the step's wall time, from the end of the
// previous step (or of the prefill) to the end of this one; Verify
// includes AllReduce.
type Step struct {
	Step      int           `json:"step,omitempty"` // 1-based step number in its run
	At        time.Duration `json:"at_ns"`          // since run start, at the step's end
	Draft     time.Duration `json:"draft_ns"`
	Verify    time.Duration `json:"verify_ns"`
	AllReduce time.Duration `json:"allreduce_ns"`
	Other     time.Duration `json:"other_ns"` // sampling, streaming, bookkeeping
	Tokens    int           `json:"tokens"`   // tokens the step emitted (cut at EOS / max tokens)
	Drafted   int           `json:"drafted"`  // proposal nodes verified; 0 = a plain step
	Depth     int           `json:"depth"`    // deepest drafted position (= Drafted for a chain)
	Accepted  int           `json:"accepted"` // drafted tokens kept
	// Baseline marks a plain step taken on purpose inside a speculative
	// run to measure the plain decode rate (see Counts.Base).
	Baseline bool `json:"baseline,omitempty"`
}

// Wall is the step's wall time: draft + verify + other.
func (s Step) Wall() time.Duration { return s.Draft + s.Verify + s.Other }

// Speculative says the step verified a non-empty proposal.
func (s Step) Speculative() bool { return s.Drafted > 0 }
