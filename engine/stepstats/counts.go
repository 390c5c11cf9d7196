package stepstats

import "time"

// Sample holds the sums of n observations of one quantity, enough for its
// mean and the standard error of the mean.
type Sample struct {
	N     int     `json:"n"`
	Sum   float64 `json:"sum"`
	SumSq float64 `json:"sum_sq"`
}

// Add records one observation.
func (s *Sample) Add(x float64) { s.N++; s.Sum += x; s.SumSq += x * x }

// Mean is the sample mean; 0 without observations.
func (s Sample) Mean() float64 {
	if s.N == 0 {
		return 0
	}
	return s.Sum / float64(s.N)
}

// Var is the unbiased sample variance; 0 with fewer than two observations.
func (s Sample) Var() float64 {
	if s.N < 2 {
		return 0
	}
	return max(0, (s.SumSq-s.Sum*s.Sum/float64(s.N))/float64(s.N-1))
}

// Pairs holds the sums of n paired observations (x, y), enough for both
// means, variances and their covariance.
type Pairs struct {
	X, Y  Sample
	SumXY float64 `json:"sum_xy"`
}

// Add records one pair.
func (p *Pairs) Add(x, y float64) { p.X.Add(x); p.Y.Add(y); p.SumXY += x * y }

// Cov is the unbiased sample covariance of x and y.
func (p Pairs) Cov() float64 {
	n := p.X.N
	if n < 2 {
		return 0
	}
	return (p.SumXY - p.X.Sum*p.Y.Sum/float64(n)) / float64(n-1)
}

// Baseline sources: where a run's plain decode rate comes from.
const (
	// BaselineSession: the last plain run in this session (this engine)
	// with the same model, TP size, allreduce backend, device and context.
	BaselineSession = "session_plain_run"
	// BaselineInRun: plain steps interleaved in this speculative run.
	BaselineInRun = "in_run_plain_steps"
	// BaselineThisRun: the run is plain; its own rate is the baseline.
	BaselineThisRun = "this_plain_run"
)

// Counts tallies a run's steps the way vLLM and SGLang report speculative
// decoding, and keeps the per-step sums the verdict's intervals need.
// NewCounts sizes it for draft length K; the zero value counts no
// positions.
type Counts struct {
	K           int   `json:"k"`            // configured draft length (tree depth)
	Drafts      int   `json:"drafts"`       // steps that verified a non-empty proposal
	DraftTokens int   `json:"draft_tokens"` // proposal nodes verified
	Accepted    int   `json:"accepted"`     // drafted tokens kept
	Hist        []int `json:"hist"`         // (K+1) speculative steps that accepted n drafted tokens
	PosDrafted  []int `json:"pos_drafted"`  // (K) speculative steps that drafted position i (depth i+1)
	PosAccepted []int `json:"pos_accepted"` // (K) speculative steps that accepted position i
	// Draft and Verify sum the speculative steps' times; PlainSteps and
	// PlainTime count the plain ones (baseline steps included).
	Draft      time.Duration `json:"draft_ns"`
	Verify     time.Duration `json:"verify_ns"`
	PlainSteps int           `json:"plain_steps"`
	PlainTime  time.Duration `json:"plain_ns"`
	// Run is (tokens, wall seconds) of every step that was not a baseline
	// step: the run as the user gets it. Base is the wall seconds of the
	// plain steps the baseline rate comes from (this run's baseline steps,
	// or a session plain run's steps, per Source).
	Run    Pairs  `json:"run"`
	Base   Sample `json:"base"`
	Source string `json:"baseline_source,omitempty"`
}

// NewCounts returns empty counts for draft length k.
func NewCounts(k int) Counts {
	k = max(k, 0)
	return Counts{K: k, Hist: make([]int, k+1), PosDrafted: make([]int, k), PosAccepted: make([]int, k)}
}

// Add records one step.
func (c *Counts) Add(s Step) {
	wall := s.Wall().Seconds()
	if s.Baseline {
		c.Base.Add(wall)
	} else {
		c.Run.Add(float64(s.Tokens), wall)
	}
	if !s.Speculative() {
		c.PlainSteps++
		c.PlainTime += s.Wall()
		return
	}
	c.Drafts++
	c.DraftTokens += s.Drafted
	c.Accepted += s.Accepted
	c.Draft += s.Draft
	c.Verify += s.Verify
	if s.Accepted >= 0 && s.Accepted < len(c.Hist) {
		c.Hist[s.Accepted]++
	}
	for i := 0; i < s.Depth && i < len(c.PosDrafted); i++ {
		c.PosDrafted[i]++
		if i < s.Accepted {
			c.PosAccepted[i]++
		}
	}
}

// Clone returns a deep copy.
func (c Counts) Clone() Counts {
	c.Hist = append([]int(nil), c.Hist...)
	c.PosDrafted = append([]int(nil), c.PosDrafted...)
	c.PosAccepted = append([]int(nil), c.PosAccepted...)
	return c
}

// MeanAcceptLen is 1 + accepted/drafts, the bonus token counted (vLLM,
// SGLang); 0 without drafts.
func (c Counts) MeanAcceptLen() float64 {
	if c.Drafts == 0 {
		return 0
	}
	return 1 + float64(c.Accepted)/float64(c.Drafts)
}

// AcceptPerPos is vLLM's per-position acceptance rate: drafts that
// accepted position i over drafts that proposed position i; nil without
// drafts, 0 where no draft reached position i.
func (c Counts) AcceptPerPos() []float64 {
	if c.Drafts == 0 {
		return nil
	}
	r := make([]float64, len(c.PosDrafted))
	for i, n := range c.PosDrafted {
		if n > 0 {
			r[i] = float64(c.PosAccepted[i]) / float64(n)
		}
	}
	return r
}

// AcceptRate is the share of drafted tokens the target kept; 0 without
// drafts.
func (c Counts) AcceptRate() float64 {
	if c.DraftTokens == 0 {
		return 0
	}
	return float64(c.Accepted) / float64(c.DraftTokens)
}

// TokensPerStep is the mean number of tokens a (non-baseline) step
// emitted; for a chain drafter that always proposes, the mean acceptance
// length up to the last step's cut.
func (c Counts) TokensPerStep() float64 { return c.Run.X.Mean() }

// BaselineTokS is the plain decode rate the baseline steps measured; 0
// without any.
func (c Counts) BaselineTokS() float64 {
	if c.Base.Sum <= 0 {
		return 0
	}
	return float64(c.Base.N) / c.Base.Sum
}
