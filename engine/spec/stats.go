package spec

import "rigscope/engine/stepstats"

// StepInfo is one decode step as the loop measured it (every field of the
// step record but its number, At and AllReduce, which the caller adds),
// with the emitted token ids and their provenance.
type StepInfo struct {
	stepstats.Step
	IDs       []int32
	FromDraft []bool
}

// Counts is a generation's step tally (Result.Counts).
type Counts = stepstats.Counts

// baselineDue says whether decode step `step` (0-based) of a speculative
// run that measures its own baseline is taken plain, given `taken` such
// steps so far: every 4th step until 8 are measured, then every 16th, so
// the baseline is sampled across the whole run (same context lengths, same
// machine load as the speculative steps) at a cost of about 1 step in 16.
// The first two steps never are (the drafter's catch-up of the prompt and
// warm-up).
func baselineDue(step, taken int) bool {
	every := 16
	if taken < 8 {
		every = 4
	}
	return step >= 2 && step%every == 2
}
