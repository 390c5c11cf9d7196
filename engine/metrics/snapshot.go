// Package metrics aggregates what the engine measures (allreduce latency
// histograms per backend and message size, bytes per rank, per-step times,
// acceptance) into snapshots the panel reads, and writes run logs and
// exports.
package metrics

import "time"

// LatencySummary is one (backend, message-size bucket) histogram, summarized.
type LatencySummary struct {
	Backend string        `json:"backend"`
	Bytes   int64         `json:"bytes"` // bucket upper bound (a power of two)
	Count   int64         `json:"count"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Mean    time.Duration `json:"mean_ns"`
}

// StepSample is one step's time split, for the stacked step-time chart,
// the run log and the step exports. Step and Drafted are 0 where the
// producer does not number steps or count drafts.
type StepSample struct {
	Step      int           `json:"step,omitempty"` // 1-based step number
	At        time.Duration `json:"at_ns"`          // since run start, at the step's end
	Draft     time.Duration `json:"draft_ns"`
	Verify    time.Duration `json:"verify_ns"` // includes AllReduce
	AllReduce time.Duration `json:"allreduce_ns"`
	Other     time.Duration `json:"other_ns"`
	Tokens    int           `json:"tokens"`            // new tokens the step produced
	Drafted   int           `json:"drafted,omitempty"` // tokens proposed by the drafter
	Accepted  int           `json:"accepted"`
}

// Snapshot is a consistent copy of the live counters; views read only this.
type Snapshot struct {
	Taken      time.Time `json:"taken"`
	RunID      string    `json:"run_id"`
	Running    bool      `json:"running"`
	Backend    string    `json:"backend"`
	TP         int       `json:"tp"`
	Drafter    string    `json:"drafter"`
	K          int       `json:"k"`
	TokensPerS float64   `json:"tokens_per_s"`
	Generated  int       `json:"generated"`

	Steps []StepSample `json:"steps"` // the most recent steps (bounded)

	AcceptHist     []int     `json:"accept_hist"`      // steps that accepted n drafts, n = 0..k
	PrevAcceptHist []int     `json:"prev_accept_hist"` // the previous run's, for comparison
	AcceptPerPos   []float64 `json:"accept_per_pos"`
	MeanAcceptLen  float64   `json:"mean_accept_len"`
	DraftTokens    int64     `json:"draft_tokens"` // tokens proposed (up to k per step)
	BreakEven      float64   `json:"break_even_accept_len"`

	AllReduce      []LatencySummary `json:"allreduce"`
	AllReduceShare float64          `json:"allreduce_share"` // of step time
	RankBytesSent  []int64          `json:"rank_bytes_sent"`
	RankBytesRecv  []int64          `json:"rank_bytes_recv"`
}
