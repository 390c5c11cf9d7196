package stepstats

import (
	"fmt"
	"math"
)

// Verdict states.
const (
	NoSpec     = "no_drafter"        // a plain run: nothing to judge
	Measuring  = "measuring"         // running, and the interval still holds 1
	Pays       = "pays"              // the whole interval is above 1
	DoesNotPay = "does_not_pay"      // the whole interval is below 1
	CannotPay  = "cannot_pay_at_k"   // break-even above k+1, the most a step can yield
	TooClose   = "too_close_to_call" // the run ended with 1 inside the interval
	TooFew     = "too_few_steps"     // the run ended before MinSteps of each kind
)

// MinSteps is how many speculative and baseline steps a verdict needs (a
// variance needs two; three keep the t quantile finite and sane).
const MinSteps = 3

// Confidence is the coverage of every interval a Verdict states.
const Confidence = 0.95

// Verdict says whether speculation pays, with the figures it rests on.
// Speedup is the run's decode rate over the plain rate; BreakEven the
// tokens per step at which speculation would only match plain decoding.
// Lo and Hi bound each at Confidence.
type Verdict struct {
	State          string  `json:"state"`
	BaselineSource string  `json:"baseline_source,omitempty"`
	BaselineSteps  int     `json:"baseline_steps"`
	BaselineTokS   float64 `json:"baseline_tokens_per_s"`
	Steps          int     `json:"steps"` // non-baseline steps judged
	TokensPerStep  float64 `json:"tokens_per_step"`
	MaxPerStep     int     `json:"max_tokens_per_step"` // k+1
	BreakEven      float64 `json:"break_even"`
	BreakEvenLo    float64 `json:"break_even_lo"`
	BreakEvenHi    float64 `json:"break_even_hi"`
	Speedup        float64 `json:"speedup"`
	SpeedupLo      float64 `json:"speedup_lo"`
	SpeedupHi      float64 `json:"speedup_hi"`
}

// Decided says the verdict is pays, does not pay or cannot pay.
func (v Verdict) Decided() bool {
	return v.State == Pays || v.State == DoesNotPay || v.State == CannotPay
}

// Judge is the break-even verdict on c. With n run steps of tokens x_i
// and wall time y_i, and m baseline steps of wall time p_j (one token
// each), the speedup is r = (x̄/ȳ)/(1/p̄) and the break-even b = ȳ/p̄: a
// step must yield b tokens to match plain decoding. Their intervals come
// from the delta method on the logs of the means (x and y paired, p
// independent):
//
//	var(log r) ≈ s²x/(n x̄²) + s²y/(n ȳ²) − 2 sxy/(n x̄ ȳ) + s²p/(m p̄²)
//	var(log b) ≈ s²y/(n ȳ²) + s²p/(m p̄²)
//
// with Student's t at min(n, m)−1 degrees of freedom. The verdict is pays
// or does not pay only once r's interval excludes 1, and cannot pay when
// the break-even exceeds k+1, the most tokens one step can yield; done
// says the run is over (measuring becomes too close to call).
func Judge(c Counts, done bool) Verdict {
	v := Verdict{State: Measuring, BaselineSource: c.Source, BaselineSteps: c.Base.N, BaselineTokS: c.BaselineTokS(),
		Steps: c.Run.X.N, TokensPerStep: c.TokensPerStep(), MaxPerStep: c.K + 1}
	if c.K == 0 {
		v.State = NoSpec
		return v
	}
	n, m := c.Run.X.N, c.Base.N
	x, y, p := c.Run.X.Mean(), c.Run.Y.Mean(), c.Base.Mean()
	if n < MinSteps || m < MinSteps || c.Drafts == 0 || x <= 0 || y <= 0 || p <= 0 {
		if done {
			v.State = TooFew
		}
		return v
	}
	fn, fm := float64(n), float64(m)
	varY := c.Run.Y.Var() / (fn * y * y)
	varP := c.Base.Var() / (fm * p * p)
	varR := c.Run.X.Var()/(fn*x*x) + varY - 2*c.Run.Cov()/(fn*x*y) + varP
	t := tQuantile(min(n, m) - 1)
	v.Speedup, v.BreakEven = Speedup(x, y, p), BreakEven(y, p)
	v.SpeedupLo, v.SpeedupHi = interval(v.Speedup, t*math.Sqrt(max(varR, 0)))
	v.BreakEvenLo, v.BreakEvenHi = interval(v.BreakEven, t*math.Sqrt(varY+varP))
	v.State = Decide(v, done)
	return v
}

// BreakEven is the tokens a speculative step of stepWall seconds (draft
// plus verify) must yield to match plain decoding at plainWall seconds per
// token: stepWall / plainWall (DESIGN: the mean acceptance length must
// exceed baseline_tok_s * (t_draft + t_verify)); 0 without a plain time.
func BreakEven(stepWall, plainWall float64) float64 {
	if plainWall <= 0 {
		return 0
	}
	return finite(stepWall / plainWall)
}

// Speedup is the decode rate of steps yielding tokensPerStep tokens in
// stepWall seconds over plain decoding at plainWall seconds per token; 0
// without a step time.
func Speedup(tokensPerStep, stepWall, plainWall float64) float64 {
	if stepWall <= 0 {
		return 0
	}
	return finite(tokensPerStep * plainWall / stepWall)
}

// Decide is the verdict's state from its speedup and break-even with
// their intervals (v.Speedup*, v.BreakEven*, v.MaxPerStep = k+1): cannot
// pay when the break-even is above k+1, the most a step can yield; pays or
// does not pay once the speedup's interval excludes 1; else measuring, or
// too close to call when done. Judge uses it on measured steps, the
// planner on predicted ones.
func Decide(v Verdict, done bool) string {
	k1 := float64(v.MaxPerStep)
	switch {
	case v.BreakEvenLo > k1:
		return CannotPay
	case v.SpeedupLo > 1:
		return Pays
	case v.SpeedupHi < 1 && v.BreakEven > k1:
		return CannotPay
	case v.SpeedupHi < 1:
		return DoesNotPay
	case done:
		return TooClose
	}
	return Measuring
}

// interval is v·exp(±half), the interval of a log-normal estimate.
func interval(v, half float64) (lo, hi float64) {
	return finite(v * math.Exp(-half)), finite(v * math.Exp(half))
}

// finite maps NaN and ±Inf to 0.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// t975 is Student's t 0.975 quantile for 1..30 degrees of freedom.
var t975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile is the two-sided 95% t quantile for df degrees of freedom,
// rounded towards fewer degrees (wider) between the tabulated ones.
func tQuantile(df int) float64 {
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(t975):
		return t975[df-1]
	case df < 40:
		return t975[len(t975)-1]
	case df < 60:
		return 2.021
	case df < 120:
		return 2.000
	}
	return 1.980
}

// SourceWords says where the baseline came from, for people.
func (v Verdict) SourceWords() string {
	switch v.BaselineSource {
	case BaselineSession:
		return fmt.Sprintf("the last plain run in this session with the same model, TP size, backend, device and context (%d steps)", v.BaselineSteps)
	case BaselineInRun:
		return fmt.Sprintf("%d plain steps interleaved in this run", v.BaselineSteps)
	case BaselineThisRun:
		return "this plain run"
	}
	return "no baseline"
}

// String is the verdict in words, as the panel and the commands print it.
func (v Verdict) String() string {
	ci := fmt.Sprintf("%.0f%% CI", 100*Confidence)
	speed := fmt.Sprintf("%.2fx plain decoding (%s %.2f–%.2f)", v.Speedup, ci, v.SpeedupLo, v.SpeedupHi)
	even := fmt.Sprintf("%.2f tokens/step against a break-even of %.2f (%s %.2f–%.2f)", v.TokensPerStep, v.BreakEven, ci, v.BreakEvenLo, v.BreakEvenHi)
	base := fmt.Sprintf("baseline %.1f tok/s from %s", v.BaselineTokS, v.SourceWords())
	switch v.State {
	case NoSpec:
		return "No speculation in this run (no drafter): every token comes from the target."
	case Pays:
		return fmt.Sprintf("Speculation pays: %s; %s; %s.", speed, even, base)
	case DoesNotPay:
		return fmt.Sprintf("Speculation does not pay: %s, so plain decoding would be faster; %s; %s.", speed, even, base)
	case CannotPay:
		return fmt.Sprintf("Speculation cannot pay at this k: the break-even %.2f tokens/step (%s %.2f–%.2f) is above k+1 = %d, the most a step can yield; %s; %s.",
			v.BreakEven, ci, v.BreakEvenLo, v.BreakEvenHi, v.MaxPerStep, speed, base)
	case TooClose:
		return fmt.Sprintf("Too close to call: %s includes 1; %s; %s.", speed, even, base)
	case TooFew:
		return fmt.Sprintf("Too few steps to judge: %d speculative and %d baseline steps (a verdict needs %d of each).", v.Steps, v.BaselineSteps, MinSteps)
	}
	if v.Speedup == 0 {
		return fmt.Sprintf("Measuring: %d speculative and %d baseline steps so far (the verdict needs %d of each); baseline from %s.",
			v.Steps, v.BaselineSteps, MinSteps, v.SourceWords())
	}
	return fmt.Sprintf("Measuring: %s; the verdict shows once the interval excludes 1; %s; %s.", speed, even, base)
}

// Agreement checks a verdict against a speedup measured end to end
// (speculative tok/s over plain tok/s, runs alternated): "too close to
// call" where |measured−1| ≤ margin; else "yes" when the verdict called
// the side measured (pays for > 1; does not pay or cannot pay for < 1),
// and "no" when it called the other side or did not call at all.
func Agreement(v Verdict, measured, margin float64) string {
	switch {
	case math.Abs(measured-1) <= margin:
		return "too close to call"
	case measured > 1 && v.State == Pays, measured < 1 && (v.State == DoesNotPay || v.State == CannotPay):
		return "yes"
	}
	return "no"
}

// RatioInterval is the geometric mean of ratios given as a sample of their
// logs, with its 95% interval (Student's t at n−1 degrees of freedom):
// for speedups measured run against run; zeros with fewer than 2.
func RatioInterval(logs Sample) (mean, lo, hi float64) {
	if logs.N < 2 {
		return 0, 0, 0
	}
	m, half := logs.Mean(), tQuantile(logs.N-1)*math.Sqrt(logs.Var()/float64(logs.N))
	return math.Exp(m), math.Exp(m - half), math.Exp(m + half)
}
