package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rigscope/engine/stepstats"
)

// A replayed run shows what its dashboard showed: the recorder's figures
// from the logged steps, the allreduce figures from the logged stats.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	l, err := CreateRunLogIn(dir, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StartModel("models/gocoder-14m-hf", map[string]any{"tp": 2, "allreduce": "twoshot", "drafter": map[string]any{"kind": "ngram", "k": 4}}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		s := stepstats.Step{Step: i + 1, At: time.Duration(i+1) * time.Millisecond, Verify: 800 * time.Microsecond, AllReduce: 100 * time.Microsecond, Tokens: 3, Drafted: 4, Accepted: 2}
		if i%4 == 0 { // a plain step interleaved to measure the baseline
			s.Tokens, s.Drafted, s.Accepted, s.Baseline, s.Verify = 1, 0, 0, true, 500*time.Microsecond
		}
		if err := l.Step(s, nil); err != nil {
			t.Fatal(err)
		}
	}
	stats := map[string]any{
		"allreduce_share":     0.1,
		"allreduce_latency":   []LatencySummary{{Backend: "twoshot", Bytes: 2048, Count: 40, P50: 3 * time.Microsecond, P99: 5 * time.Microsecond}},
		"bytes_sent_per_rank": []int64{100, 200}, "bytes_recv_per_rank": []int64{100, 200}, "rank_gpu": []int{0, 0},
		"verdict": map[string]any{"baseline_source": stepstats.BaselineInRun},
	}
	if err := l.End(stats, nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	s, err := ReplayFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if s.TP != 2 || s.Backend != "twoshot" || s.Drafter != "ngram" || s.K != 4 || s.Running || len(s.Steps) != 20 || s.TokensPerS <= 0 {
		t.Errorf("replayed run: tp %d %s %s k %d running %v, %d steps, %.0f tok/s", s.TP, s.Backend, s.Drafter, s.K, s.Running, len(s.Steps), s.TokensPerS)
	}
	if b, ok := DominantBucket(s.AllReduce, "twoshot"); !ok || b.P99 != 5*time.Microsecond || s.AllReduceShare != 0.1 || len(s.RankBytesSent) != 2 || len(s.RankGPU) != 2 {
		t.Errorf("replayed allreduce figures: %+v share %v bytes %v gpus %v", s.AllReduce, s.AllReduceShare, s.RankBytesSent, s.RankGPU)
	}
	if s.Verdict.BaselineSource != stepstats.BaselineInRun || s.Verdict.BaselineSteps != 5 || s.Verdict.BaselineTokS <= 0 {
		t.Errorf("replayed verdict: baseline from %q, %d steps, %.0f tok/s; want the run's 5 interleaved plain steps", s.Verdict.BaselineSource, s.Verdict.BaselineSteps, s.Verdict.BaselineTokS)
	}
	if s.Replayed != l.Path() || s.ReplayedModel != "models/gocoder-14m-hf" {
		t.Errorf("replayed from %q (model %q), want the log %q and its model (the dashboard says where a replayed run comes from)", s.Replayed, s.ReplayedModel, l.Path())
	}
	if s.MeanAcceptLen != 3 {
		t.Errorf("mean acceptance length %v, want 3 (the recorder's, from the steps)", s.MeanAcceptLen)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	if _, err := ReplayFile(empty); err == nil || !strings.Contains(err.Error(), "no run") {
		t.Errorf("an empty log: %v", err)
	}
}
