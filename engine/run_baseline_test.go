package engine

import (
	"context"
	"os"
	"slices"
	"testing"

	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
)

// runSteps runs cfg and returns the stats and the step events.
func runSteps(t *testing.T, e *Engine, cfg RunConfig) (Stats, []StepStats, []int32) {
	t.Helper()
	var steps []StepStats
	var toks []int32
	st, err := e.Run(context.Background(), cfg, func(ev Event) {
		switch ev.Kind {
		case EventStep:
			steps = append(steps, ev.Step)
		case EventTokens:
			for _, tk := range ev.Tokens {
				toks = append(toks, tk.ID)
			}
		}
	})
	if err != nil {
		t.Fatalf("Run(%+v): %v", cfg.Drafter, err)
	}
	return st, steps, toks
}

// TestBaselineSources: a speculative run measures its own baseline with
// interleaved plain steps until a plain run of exactly its configuration
// has been seen; then it uses that run's steps, and never a plain run of
// another configuration.
func TestBaselineSources(t *testing.T) {
	e := openTiny(t)
	plain := RunConfig{PromptIDs: tinyPrompt, MaxTokens: 60}
	spec := plain
	spec.Drafter = DrafterConfig{Kind: "ngram", K: 3}

	st, steps, got := runSteps(t, e, spec)
	v := st.Verdict
	if v.BaselineSource != stepstats.BaselineInRun || v.BaselineSteps == 0 || st.BaselineTokensPerS <= 0 {
		t.Errorf("first speculative run: verdict %+v, baseline %v tok/s; want its own interleaved baseline", v, st.BaselineTokensPerS)
	}
	var flagged int
	for i, s := range steps {
		if s.Step != i+1 {
			t.Fatalf("step %d numbered %d", i+1, s.Step)
		}
		if s.Baseline {
			flagged++
			if s.Drafted != 0 || s.Tokens != 1 {
				t.Errorf("baseline step %+v is not a plain one-token step", s)
			}
		}
	}
	if flagged != v.BaselineSteps {
		t.Errorf("%d steps flagged baseline, the verdict counts %d", flagged, v.BaselineSteps)
	}
	pst, _, want := runSteps(t, e, plain)
	if !slices.Equal(got, want) {
		t.Errorf("greedy speculative run with baseline steps = %v, plain = %v", got, want)
	}
	if pst.Verdict.State != stepstats.NoSpec || pst.Verdict.BaselineSource != stepstats.BaselineThisRun {
		t.Errorf("plain run verdict %+v", pst.Verdict)
	}

	st, steps, _ = runSteps(t, e, spec)
	if v := st.Verdict; v.BaselineSource != stepstats.BaselineSession || v.BaselineSteps != pst.GeneratedTokens-1 {
		t.Errorf("after a plain run: verdict %+v; want the session baseline of its %d steps", v, pst.GeneratedTokens-1)
	}
	for _, s := range steps {
		if s.Baseline {
			t.Fatalf("a run with a session baseline took baseline step %+v", s)
		}
	}

	other := spec
	other.TP = 2
	if st, _, _ := runSteps(t, e, other); st.Verdict.BaselineSource != stepstats.BaselineInRun {
		t.Errorf("TP 2 after a TP 1 plain run: baseline from %s, want its own (never another configuration's)", st.Verdict.BaselineSource)
	}
}

// TestRunLogIsTheStepRecord: the run log holds exactly the steps the
// events carried, in a fresh owner-only file named in the stats.
func TestRunLogIsTheStepRecord(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(context.Background(), "synthetic:tiny", Options{CtxLen: 128, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := RunConfig{PromptIDs: tinyPrompt, MaxTokens: 20, Drafter: DrafterConfig{Kind: "ngram", K: 2}}
	st, steps, _ := runSteps(t, e, cfg)
	fi, err := os.Stat(st.LogPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("run log %q: %v, mode %v; want a 0600 file", st.LogPath, err, fi.Mode())
	}
	evs, err := metrics.ReadRunLog(st.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := metrics.Runs(evs)
	if err != nil || len(runs) != 1 || runs[0].RunID != st.RunID || !runs[0].Complete {
		t.Fatalf("Runs(log) = %+v, %v", runs, err)
	}
	if !slices.Equal(runs[0].Steps, steps) {
		t.Errorf("logged steps %+v\nevents      %+v", runs[0].Steps, steps)
	}
}
