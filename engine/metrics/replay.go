package metrics

import (
	"encoding/json"
	"fmt"

	"rigscope/engine/stepstats"
)

// Replay rebuilds the snapshot a run's dashboard showed when it ended, from
// its run log (a run made elsewhere, on a GPU machine say, can be looked at
// here): the steps go through a Recorder as they did live, so every figure
// (acceptance, verdict, tokens/s, step times) is computed by the same code;
// the allreduce latency summaries, byte counts and allreduce share are the
// run's own, from its run_end stats.
func Replay(rec RunRecord) (Snapshot, error) {
	var cfg struct {
		TP        int    `json:"tp"`
		AllReduce string `json:"allreduce"`
		Drafter   struct {
			Kind string `json:"kind"`
			K    int    `json:"k"`
		} `json:"drafter"`
	}
	if len(rec.Config) > 0 {
		if err := json.Unmarshal(rec.Config, &cfg); err != nil {
			return Snapshot{}, fmt.Errorf("run %s: its run_start config is not a run configuration: %w", rec.RunID, err)
		}
	}
	var st struct {
		Share   float64          `json:"allreduce_share"`
		Latency []LatencySummary `json:"allreduce_latency"`
		Sent    []int64          `json:"bytes_sent_per_rank"`
		Recv    []int64          `json:"bytes_recv_per_rank"`
		RankGPU []int            `json:"rank_gpu"`
		Verdict struct {
			Source string `json:"baseline_source"`
		} `json:"verdict"`
	}
	if len(rec.Stats) > 0 {
		if err := json.Unmarshal(rec.Stats, &st); err != nil {
			return Snapshot{}, fmt.Errorf("run %s: its run_end stats do not parse: %w", rec.RunID, err)
		}
	}
	if len(rec.Steps) == 0 {
		return Snapshot{}, fmt.Errorf("run %s has no steps to replay", rec.RunID)
	}
	// A baseline of the run's own plain steps (interleaved, or the run
	// itself) is in its log and is measured again from the steps; one from
	// an earlier run of the session is not, and is left out.
	var seed stepstats.Counts
	if src := st.Verdict.Source; src == stepstats.BaselineInRun || src == stepstats.BaselineThisRun {
		seed.Source = src
	}
	r := NewRecorder(len(rec.Steps))
	r.StartRun(RunInfo{RunID: rec.RunID, Backend: cfg.AllReduce, TP: max(cfg.TP, 1), Drafter: cfg.Drafter.Kind, K: cfg.Drafter.K, RankGPU: st.RankGPU, Counts: seed},
		NewLatencySet(), NewRankBytes(max(cfg.TP, 1)))
	for _, s := range rec.Steps {
		r.RecordStep(s)
	}
	r.EndRun()
	snap := r.Snapshot()
	snap.Taken = rec.Ended
	if snap.Taken.IsZero() {
		snap.Taken = rec.Started.Add(rec.Steps[len(rec.Steps)-1].At)
	}
	snap.AllReduce, snap.AllReduceShare = st.Latency, st.Share
	snap.RankBytesSent, snap.RankBytesRecv = st.Sent, st.Recv
	snap.Replayed, snap.ReplayedModel = "run log of "+rec.RunID, rec.Model
	return snap, nil
}

// ReplayFile is Replay of the last run in the run log at path.
func ReplayFile(path string) (Snapshot, error) {
	evs, err := ReadRunLog(path)
	if err != nil {
		return Snapshot{}, err
	}
	runs, err := Runs(evs)
	if err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(runs) == 0 {
		return Snapshot{}, fmt.Errorf("%s holds no run", path)
	}
	snap, err := Replay(runs[len(runs)-1])
	if err != nil {
		return Snapshot{}, err
	}
	snap.Replayed = path
	return snap, nil
}
