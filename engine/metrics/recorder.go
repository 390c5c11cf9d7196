package metrics

import (
	"sync"
	"time"

	"rigscope/engine/stepstats"
)

// RunInfo names a run for snapshots. Counts seeds the run's tally: its K
// (0 for a plain run) and, when the baseline comes from an earlier plain
// run, its Base and Source.
type RunInfo struct {
	RunID   string
	Backend string
	TP      int
	Drafter string
	K       int
	Counts  stepstats.Counts
	// RankGPU is the GPU ordinal each rank runs on (nil: CPU ranks).
	RankGPU []int
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

	steps []stepstats.Step // ring buffer of the most recent steps
	next  int              // where the next step goes once steps is full

	counts                  stepstats.Counts
	prevAcceptHist          []int
	generated               int
	stepTime, allReduceTime time.Duration

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
	if r.counts.Hist != nil {
		r.prevAcceptHist = r.counts.Hist
	}
	if info.Counts.Hist == nil {
		c := stepstats.NewCounts(info.K)
		c.Base, c.Source = info.Counts.Base, info.Counts.Source
		info.Counts = c
	}
	r.info, r.running = info, true
	r.counts = info.Counts.Clone()
	r.steps, r.next = nil, 0
	r.generated, r.stepTime, r.allReduceTime = 0, 0, 0
	r.lat, r.bytes = lat, bytes
	if r.lat == nil {
		r.lat = NewLatencySet()
	}
}

// RecordStep adds one step.
func (r *Recorder) RecordStep(s stepstats.Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.steps) < r.maxSteps {
		r.steps = append(r.steps, s)
	} else {
		r.steps[r.next] = s
		r.next = (r.next + 1) % r.maxSteps
	}
	r.counts.Add(s)
	r.generated += s.Tokens
	r.stepTime += s.Wall()
	r.allReduceTime += s.AllReduce
}

// EndRun marks the run finished; its counters stay readable.
func (r *Recorder) EndRun() {
	r.mu.Lock()
	r.running = false
	r.mu.Unlock()
}

// Counts is a copy of the current run's tally.
func (r *Recorder) Counts() stepstats.Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts.Clone()
}

// Snapshot copies the live counters and computes the run's figures.
func (r *Recorder) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.counts
	s := Snapshot{
		Taken: time.Now(), RunID: r.info.RunID, Running: r.running,
		Backend: r.info.Backend, TP: r.info.TP, Drafter: r.info.Drafter, K: r.info.K,
		RankGPU:        append([]int(nil), r.info.RankGPU...),
		Generated:      r.generated,
		AcceptHist:     append([]int(nil), c.Hist...),
		PrevAcceptHist: append([]int(nil), r.prevAcceptHist...),
		AcceptPerPos:   c.AcceptPerPos(),
		MeanAcceptLen:  c.MeanAcceptLen(),
		DraftTokens:    int64(c.DraftTokens),
		Verdict:        stepstats.Judge(c, !r.running),
		AllReduce:      r.lat.Summaries(),
	}
	s.BreakEven = s.Verdict.BreakEven
	s.Steps = make([]stepstats.Step, 0, len(r.steps))
	s.Steps = append(s.Steps, r.steps[r.next:]...)
	s.Steps = append(s.Steps, r.steps[:r.next]...)
	if r.stepTime > 0 {
		s.TokensPerS = float64(r.generated) / r.stepTime.Seconds()
		s.AllReduceShare = float64(r.allReduceTime) / float64(r.stepTime)
	}
	if r.bytes != nil {
		s.RankBytesSent, s.RankBytesRecv = r.bytes.Sent(), r.bytes.Recv()
	}
	return s
}
