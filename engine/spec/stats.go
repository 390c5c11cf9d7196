package spec

import "time"

// StepInfo is one decode step as measured. A plain step has Drafted 0.
type StepInfo struct {
	Drafted  int // proposal nodes sent to the target
	Depth    int // deepest drafted position (= Drafted for a chain)
	Accepted int // drafted tokens kept
	New      int // tokens the step emitted (accepted + the target's own, cut at EOS/max)
	Draft    time.Duration
	Verify   time.Duration
	// Path is the accepted path (proposal indices, root first); Tokens and
	// FromDraft the emitted tokens and their provenance.
	Tokens    []int32
	FromDraft []bool
}

// Counts aggregates speculative steps the way vLLM and SGLang report them.
type Counts struct {
	K           int   // configured draft length (histogram size K+1)
	Drafts      int   // steps that verified a non-empty proposal
	DraftTokens int   // proposal nodes verified
	Accepted    int   // drafted tokens kept
	Hist        []int // (K+1) steps that accepted n drafted tokens
	PosDrafted  []int // (K) steps that drafted position i (depth i+1)
	PosAccepted []int // (K) steps that accepted position i
	// Draft and Verify sum the speculative steps' times; PlainSteps and
	// PlainTime the plain steps (no proposal).
	Draft, Verify time.Duration
	PlainSteps    int
	PlainTime     time.Duration
}

// NewCounts returns empty counts for draft length k.
func NewCounts(k int) Counts {
	return Counts{K: k, Hist: make([]int, k+1), PosDrafted: make([]int, k), PosAccepted: make([]int, k)}
}

// Add records one step.
func (c *Counts) Add(s StepInfo) {
	if s.Drafted == 0 {
		c.PlainSteps++
		c.PlainTime += s.Draft + s.Verify
		return
	}
	c.Drafts++
	c.DraftTokens += s.Drafted
	c.Accepted += s.Accepted
	c.Draft += s.Draft
	c.Verify += s.Verify
	if s.Accepted < len(c.Hist) {
		c.Hist[s.Accepted]++
	}
	for i := 0; i < s.Depth && i < len(c.PosDrafted); i++ {
		c.PosDrafted[i]++
		if i < s.Accepted {
			c.PosAccepted[i]++
		}
	}
}

// MeanAcceptLen is 1 + accepted/drafts (the bonus token counts); 0 without
// drafts.
func (c Counts) MeanAcceptLen() float64 {
	if c.Drafts == 0 {
		return 0
	}
	return 1 + float64(c.Accepted)/float64(c.Drafts)
}

// AcceptPerPos is the acceptance rate of each drafted position: steps that
// accepted position i over steps that drafted it.
func (c Counts) AcceptPerPos() []float64 {
	r := make([]float64, len(c.PosDrafted))
	for i, n := range c.PosDrafted {
		if n > 0 {
			r[i] = float64(c.PosAccepted[i]) / float64(n)
		}
	}
	return r
}

// StepTime is the mean time of one speculative step (draft + verify).
func (c Counts) StepTime() time.Duration {
	if c.Drafts == 0 {
		return 0
	}
	return (c.Draft + c.Verify) / time.Duration(c.Drafts)
}

// BreakEven is the mean acceptance length at which speculation matches
// plain decoding at baselineTokS: a step of length stepTime must yield
// baselineTokS * stepTime tokens. Speculation pays when MeanAcceptLen
// exceeds it.
func BreakEven(baselineTokS float64, stepTime time.Duration) float64 {
	return baselineTokS * stepTime.Seconds()
}
