package planner

import (
	"encoding/json"
	"fmt"
	"time"

	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
)

// The loop's own time per step: what a run's step takes beyond its draft
// and its target forward (the token's emission, its text, the step's
// record in the recorder and the run log, the panel's event). The spec
// loop logs it per step (stepstats.Step.Other). Beside a forward of
// milliseconds on CPU ranks it is a rounding error; beside a GPU step of
// a hundred microseconds it is several percent of the step, so a
// prediction adds it, as earlier runs on this machine measured it.

// loopKey files the loop's time by where the run's target ran (its host
// work differs: a CPU run's ranks are the host's threads), by drafter and
// k ("none" and 0 for plain steps, from any run).
type loopKey struct {
	gpu     bool
	drafter string
	k       int
}

type loopTally struct {
	sum   time.Duration
	steps int
}

// AddLoop records the loop's time per step of an earlier run: plain steps
// (no proposal) under "none", and, for a speculative run, every step under
// its drafter (Config.DrafterKey) and k. gpu says the run's target was on
// a GPU.
func (b *Book) AddLoop(gpu bool, drafter string, k int, steps []stepstats.Step) {
	if b.loop == nil {
		b.loop = map[loopKey]*loopTally{}
	}
	add := func(k loopKey, s stepstats.Step) {
		t := b.loop[k]
		if t == nil {
			t = &loopTally{}
			b.loop[k] = t
		}
		t.sum += s.Other
		t.steps++
	}
	for _, s := range steps {
		if s.Other < 0 {
			continue
		}
		if s.Drafted == 0 {
			add(loopKey{gpu, "none", 0}, s)
		}
		if drafter != "" && drafter != "none" {
			add(loopKey{gpu, drafter, k}, s)
		}
	}
}

// Loop is the mean loop time per step, in microseconds, of earlier runs
// on a GPU (gpu) or on CPU ranks, for drafter's runs at k ("none", 0:
// plain steps), and the steps it is the mean of (0: none logged, the time
// 0).
func (b *Book) Loop(gpu bool, drafter string, k int) (us float64, steps int) {
	if b == nil || b.loop == nil {
		return 0, 0
	}
	t := b.loop[loopKey{gpu, drafter, k}]
	if t == nil || t.steps == 0 {
		return 0, 0
	}
	return float64(t.sum.Nanoseconds()) / 1e3 / float64(t.steps), t.steps
}

// ranOnGPU says a logged run's target was on GPUs (its stats name the GPU
// of each rank).
func ranOnGPU(r metrics.RunRecord) bool {
	var st struct {
		RankGPU []int `json:"rank_gpu"`
	}
	return json.Unmarshal(r.Stats, &st) == nil && len(st.RankGPU) > 0
}

// loopWords says what a prediction's loop time rests on.
func loopWords(us float64, steps int) string {
	if steps == 0 {
		return "the loop's own time per step not counted (no logged run on this kind of device)"
	}
	return fmt.Sprintf("the loop's own %.1f us a step from %d logged step(s)", us, steps)
}
