// Package metrics aggregates what the engine measures (allreduce latency
// histograms per backend and message size, bytes per rank, the steps of the
// current run) into snapshots the panel reads, and writes run logs and
// exports. Figures derived from steps come from engine/stepstats.
package metrics

import (
	"time"

	"rigscope/engine/stepstats"
)

// LatencySummary is one (backend, message-size bucket) histogram, summarized.
type LatencySummary struct {
	Backend string        `json:"backend"`
	Bytes   int64         `json:"bytes"` // bucket upper bound (a power of two)
	Count   int64         `json:"count"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Mean    time.Duration `json:"mean_ns"`
}

// Snapshot is a consistent copy of the live counters; views read only this.
// The acceptance figures and the verdict are stepstats' (computed once, in
// Recorder.Snapshot, from the run's stepstats.Counts).
type Snapshot struct {
	Taken      time.Time `json:"taken"`
	RunID      string    `json:"run_id"`
	Running    bool      `json:"running"`
	Backend    string    `json:"backend"`
	TP         int       `json:"tp"`
	Drafter    string    `json:"drafter"`
	K          int       `json:"k"`
	TokensPerS float64   `json:"tokens_per_s"` // decode rate over the steps so far
	Generated  int       `json:"generated"`

	Steps []stepstats.Step `json:"steps"` // the most recent steps (bounded)

	AcceptHist     []int     `json:"accept_hist"`      // steps that accepted n drafts, n = 0..k
	PrevAcceptHist []int     `json:"prev_accept_hist"` // the previous run's, for comparison
	AcceptPerPos   []float64 `json:"accept_per_pos"`   // vLLM's: accepted at i / drafts that proposed i
	MeanAcceptLen  float64   `json:"mean_accept_len"`
	DraftTokens    int64     `json:"draft_tokens"` // tokens proposed (up to k per step)
	BreakEven      float64   `json:"break_even_accept_len"`
	// Verdict is the break-even verdict so far (stepstats.Judge).
	Verdict stepstats.Verdict `json:"verdict"`

	AllReduce      []LatencySummary `json:"allreduce"`
	AllReduceShare float64          `json:"allreduce_share"` // of step time
	RankBytesSent  []int64          `json:"rank_bytes_sent"`
	RankBytesRecv  []int64          `json:"rank_bytes_recv"`
	// RankGPU is the GPU ordinal each rank runs on (nil: CPU ranks), so
	// the engine's bytes can be shown beside each GPU's PCIe counters.
	RankGPU []int `json:"rank_gpu,omitempty"`
	// Replayed is the run log a replayed run was rebuilt from (Replay,
	// ReplayFile: a run made elsewhere, on a GPU machine say); "" for a
	// run of this process.
	Replayed string `json:"replayed,omitempty"`
	// ReplayedModel is the model a replayed run ran (its run_start), which
	// need not be the model this panel has loaded.
	ReplayedModel string `json:"replayed_model,omitempty"`
}

// DominantBucket is backend's size bucket with the most allreduces (in TP
// decoding nearly every allreduce has the same size); false when the
// backend has none.
func DominantBucket(lat []LatencySummary, backend string) (LatencySummary, bool) {
	var best LatencySummary
	for _, l := range lat {
		if l.Backend == backend && l.Count > best.Count {
			best = l
		}
	}
	return best, best.Count > 0
}
