// Package engine is the facade the panel and the command line drive: load a
// target once, run generations with an immutable RunConfig, and swap the
// drafter or allreduce backend between runs without reloading weights.
package engine

import (
	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
	"rigscope/engine/tp"
)

// Sampling parameters; Temperature 0 means greedy.
type Sampling struct {
	Temperature float32 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float32 `json:"top_p"`
	Seed        uint64  `json:"seed"`
}

// DrafterConfig chooses the speculative drafter for a run.
type DrafterConfig struct {
	Kind     string `json:"kind"` // none | ngram | model | eagle3
	Path     string `json:"path,omitempty"`
	K        int    `json:"k"`              // draft length (1..16)
	Tree     int    `json:"tree,omitempty"` // branching factor; 0 = chain
	NgramMin int    `json:"ngram_min,omitempty"`
	NgramMax int    `json:"ngram_max,omitempty"`
}

// RunConfig is fixed when a run starts; changes apply to the next run.
type RunConfig struct {
	Prompt    string  `json:"prompt,omitempty"`
	PromptIDs []int32 `json:"prompt_ids,omitempty"`
	Template  string  `json:"template,omitempty"` // "" = raw completion
	MaxTokens int     `json:"max_tokens"`
	IgnoreEOS bool    `json:"ignore_eos,omitempty"` // generate MaxTokens even past EOS (benchmarks; vLLM's ignore_eos)
	// Stop strings end the run (StopReason "stop") in the step whose text
	// completes one; the streamed text ends just before it.
	Stop      []string      `json:"stop,omitempty"`
	Sampling  Sampling      `json:"sampling"`
	Drafter   DrafterConfig `json:"drafter"`
	TP        int           `json:"tp"`
	AllReduce string        `json:"allreduce"`
	// NCCL are the nccl backend's settings (protocol, algorithm, channels,
	// buffer size; zero: NCCL's choices), only with AllReduce "nccl". The
	// device makes new communicators for a run only when they or the
	// ranks changed since the last nccl run.
	NCCL tp.NCCLSettings `json:"nccl,omitzero"`
}

// Token is one generated token as streamed to the UI.
type Token struct {
	ID        int32  `json:"id"`
	Text      string `json:"text"`       // the text this token adds (may be "" mid UTF-8 sequence)
	FromDraft bool   `json:"from_draft"` // drafted and accepted (vs produced by the target)
}

// StepStats is one decode or speculative step: the one step record the
// run log, the exports, the recorder and the panel share.
type StepStats = stepstats.Step

// Stats summarizes a run; field names follow vLLM/SGLang where they exist.
type Stats struct {
	PromptTokens       int       `json:"prompt_tokens"`
	GeneratedTokens    int       `json:"generated_tokens"`
	PrefillMs          float64   `json:"prefill_ms"`
	TimeToFirstTokenMs float64   `json:"ttft_ms"`
	DecodeTokensPerS   float64   `json:"decode_tokens_per_s"`
	StopReason         string    `json:"stop_reason"` // eos | max_tokens | stop | cancelled | context | error
	Drafts             int       `json:"drafts"`
	DraftTokens        int       `json:"draft_tokens"`
	AcceptedTokens     int       `json:"accepted_tokens"`
	DraftAcceptRate    float64   `json:"draft_accept_rate"` // accepted / draft tokens
	AcceptHist         []int     `json:"accept_hist"`       // [0..k] steps that accepted n drafts
	AcceptPerPos       []float64 `json:"accept_per_pos"`    // acceptance rate at draft position i
	MeanAcceptLen      float64   `json:"mean_accept_len"`
	DraftMs            float64   `json:"draft_ms"`
	VerifyMs           float64   `json:"verify_ms"`
	BaselineTokensPerS float64   `json:"baseline_tokens_per_s"`
	BreakEvenAcceptLen float64   `json:"break_even_accept_len"`
	// Verdict is the break-even verdict with its intervals and where the
	// baseline came from (stepstats.Judge); BaselineTokensPerS and
	// BreakEvenAcceptLen are its figures.
	Verdict     stepstats.Verdict `json:"verdict"`
	AllReduceMs float64           `json:"allreduce_ms"`
	// AllReduceP50Us and AllReduceP99Us are the latency percentiles of the
	// run's most frequent message size; BytesMoved the bytes all ranks sent.
	AllReduceP50Us float64 `json:"allreduce_p50_us"`
	AllReduceP99Us float64 `json:"allreduce_p99_us"`
	BytesMoved     int64   `json:"bytes_moved"`
	AllReduceShare float64 `json:"allreduce_share"`
	// AllReduceBySize is the backend that carried each message-size bucket
	// (for auto, the one its table picked); nil without allreduce.
	AllReduceBySize []BackendUse `json:"allreduce_by_size,omitempty"`
	// AllReduceLatency is every (backend, message-size bucket) of the
	// run's allreduces with its per-call p50, p99 and mean, as measured
	// (CPU ranks: wall time in the call; GPU ranks: the kernels' device
	// time).
	AllReduceLatency []metrics.LatencySummary `json:"allreduce_latency,omitempty"`
	// PrefillPath is how the device ran the prompt's chunks (the CUDA
	// target's prefill mode: its kernels, or cuBLAS with its version, or
	// why cuBLAS was not used); empty on the CPU.
	PrefillPath string `json:"prefill_path,omitempty"`
	// NCCL is what the run's nccl communicators were: the settings, NCCL's
	// version, the buffer size in effect and whether they were made for
	// this run or reused (nil: the ranks did not join through nccl).
	NCCL *tp.NCCLUse `json:"nccl,omitempty"`
	// RankGPU is the GPU each rank ran on (nil: CPU ranks).
	RankGPU   []int   `json:"rank_gpu,omitempty"`
	BytesSent []int64 `json:"bytes_sent_per_rank,omitempty"`
	BytesRecv []int64 `json:"bytes_recv_per_rank,omitempty"`
	// WeightBytesPerRank is the weight memory each rank reads (its shards
	// plus the replicated embedding); KVBytesPerRank its KV cache.
	WeightBytesPerRank []int64 `json:"weight_bytes_per_rank,omitempty"`
	KVBytesPerRank     []int64 `json:"kv_bytes_per_rank,omitempty"`
	// RunID names the run in its log; LogPath is that log ("" = none).
	RunID   string `json:"run_id"`
	LogPath string `json:"log_path,omitempty"`
}

// BackendUse says which backend carried a run's allreduces of one
// message-size bucket (sizes up to Bytes, a power of two).
type BackendUse struct {
	Bytes   int64  `json:"bytes"`
	Backend string `json:"backend"`
	Calls   int64  `json:"calls"`
}
