package metrics

import (
	"sync"
	"time"
)

// RunInfo names a run for snapshots.
type RunInfo struct {
	RunID   string
	Backend string
	TP      int
	Drafter string
	K       int
}

// Recorder holds the live counters of the current run. The engine calls
// StartRun, RecordStep per step and EndRun; the panel calls Snapshot on a
// ticker. All methods are safe for concurrent use; the per-allreduce
// histograms and byte counters are updated lock-free by the tp group that
// shares them (see StartRun).
type Recorder struct {
	mu       sync.Mutex
	maxSteps int

	info    RunInfo
	running bool
	start   time.Time

	steps []StepSample // ring buffer of the most recent steps
	next  int          // where the next step goes once steps is full

	acceptHist, prevAcceptHist []int
	acceptPerPos               []int64 // drafts whose position i was accepted
	drafts, accepted           int64
	draftTokens                int64
	generated                  int
	stepTime, allReduceTime    time.Duration
	draftTime, verifyTime      time.Duration
	baselineTokS               float64

	lat   *LatencySet
	bytes *RankBytes
}

// NewRecorder keeps the last maxSteps steps (at least 1).
func NewRecorder(maxSteps int) *Recorder {
	return &Recorder{maxSteps: max(1, maxSteps), lat: NewLatencySet()}
}

// StartRun resets the per-run counters. lat and bytes are the tp group's
// live sinks (pass the same ones in tp.GroupOptions); either may be nil.
// The previous run's acceptance histogram is kept for comparison.
func (r *Recorder) StartRun(info RunInfo, lat *LatencySet, bytes *RankBytes) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.acceptHist != nil {
		r.prevAcceptHist = r.acceptHist
	}
	k := max(info.K, 0)
	r.info, r.running, r.start = info, true, time.Now()
	r.steps, r.next = nil, 0
	r.acceptHist, r.acceptPerPos = make([]int, k+1), make([]int64, k)
	r.drafts, r.accepted, r.generated = 0, 0, 0
	r.stepTime, r.allReduceTime, r.draftTime, r.verifyTime = 0, 0, 0, 0
	r.lat, r.bytes = lat, bytes
	if r.lat == nil {
		r.lat = NewLatencySet()
	}
}

// SetBaseline sets the non-speculative tokens/s the break-even acceptance
// length is computed against (0 = unknown).
func (r *Recorder) SetBaseline(tokensPerS float64) {
	r.mu.Lock()
	r.baselineTokS = tokensPerS
	r.mu.Unlock()
}

// RecordStep adds one step: s.Accepted of drafted proposals kept (chain
// drafting: positions 0..Accepted-1 accepted). drafted 0 is a plain step.
func (r *Recorder) RecordStep(s StepSample, drafted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.At == 0 {
		s.At = time.Since(r.start)
	}
	if len(r.steps) < r.maxSteps {
		r.steps = append(r.steps, s)
	} else {
		r.steps[r.next] = s
		r.next = (r.next + 1) % r.maxSteps
	}
	r.generated += s.Tokens
	r.stepTime += s.Draft + s.Verify + s.Other
	r.draftTime += s.Draft
	r.verifyTime += s.Verify
	r.allReduceTime += s.AllReduce
	if drafted > 0 {
		r.drafts++
		r.draftTokens += int64(drafted)
		r.accepted += int64(s.Accepted)
		a := min(max(s.Accepted, 0), len(r.acceptHist)-1)
		if a >= 0 {
			r.acceptHist[a]++
		}
		for i := 0; i < s.Accepted && i < len(r.acceptPerPos); i++ {
			r.acceptPerPos[i]++
		}
	}
}

// EndRun marks the run finished; its counters stay readable.
func (r *Recorder) EndRun() {
	r.mu.Lock()
	r.running = false
	r.mu.Unlock()
}

// AllReduceShare is the share of step time spent in allreduce so far.
func (r *Recorder) AllReduceShare() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stepTime <= 0 {
		return 0
	}
	return float64(r.allReduceTime) / float64(r.stepTime)
}

// Snapshot copies the live counters.
func (r *Recorder) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{
		Taken: time.Now(), RunID: r.info.RunID, Running: r.running,
		Backend: r.info.Backend, TP: r.info.TP, Drafter: r.info.Drafter, K: r.info.K,
		Generated:      r.generated,
		AcceptHist:     append([]int(nil), r.acceptHist...),
		PrevAcceptHist: append([]int(nil), r.prevAcceptHist...),
		AllReduce:      r.lat.Summaries(),
	}
	s.Steps = make([]StepSample, 0, len(r.steps))
	s.Steps = append(s.Steps, r.steps[r.next:]...)
	s.Steps = append(s.Steps, r.steps[:r.next]...)
	if el := time.Since(r.start); r.generated > 0 && el > 0 {
		s.TokensPerS = float64(r.generated) / el.Seconds()
	}
	if r.drafts > 0 {
		s.MeanAcceptLen = 1 + float64(r.accepted)/float64(r.drafts)
		s.DraftTokens = r.draftTokens
		s.AcceptPerPos = make([]float64, len(r.acceptPerPos))
		for i, n := range r.acceptPerPos {
			s.AcceptPerPos[i] = float64(n) / float64(r.drafts)
		}
	}
	if n := len(r.steps); r.baselineTokS > 0 && r.drafts > 0 && n > 0 {
		// Speculation pays when tokens per step exceed baseline_tok_s *
		// (t_draft + t_verify) per step.
		perStep := (r.draftTime + r.verifyTime) / time.Duration(r.drafts)
		s.BreakEven = r.baselineTokS * perStep.Seconds()
	}
	if r.stepTime > 0 {
		s.AllReduceShare = float64(r.allReduceTime) / float64(r.stepTime)
	}
	if r.bytes != nil {
		s.RankBytesSent, s.RankBytesRecv = r.bytes.Sent(), r.bytes.Recv()
	}
	return s
}
