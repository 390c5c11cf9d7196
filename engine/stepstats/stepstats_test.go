package stepstats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func TestCounts(t *testing.T) {
	c := NewCounts(3)
	for _, s := range []Step{
		{Drafted: 3, Depth: 3, Accepted: 3, Tokens: 4, Verify: ms(2)},
		{Drafted: 3, Depth: 3, Accepted: 1, Tokens: 2, Verify: ms(2)},
		{Drafted: 2, Depth: 2, Accepted: 0, Tokens: 1, Verify: ms(2)},
		{Tokens: 1, Verify: ms(1)},                 // a plain step (the drafter proposed nothing)
		{Tokens: 1, Verify: ms(1), Baseline: true}, // a baseline step
	} {
		c.Add(s)
	}
	if c.Drafts != 3 || c.DraftTokens != 8 || c.Accepted != 4 || c.PlainSteps != 2 {
		t.Errorf("counts = %+v", c)
	}
	if got, want := c.Hist, []int{1, 1, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("Hist = %v, want %v", got, want)
	}
	// vLLM: accepted at position i over drafts that proposed position i.
	if got, want := c.AcceptPerPos(), []float64{2.0 / 3, 1.0 / 3, 1.0 / 2}; !slices.Equal(got, want) {
		t.Errorf("AcceptPerPos() = %v, want %v", got, want)
	}
	if got, want := c.MeanAcceptLen(), 1+4.0/3; math.Abs(got-want) > 1e-12 {
		t.Errorf("MeanAcceptLen() = %v, want %v", got, want)
	}
	if got, want := c.TokensPerStep(), 8.0/4; got != want {
		t.Errorf("TokensPerStep() = %v, want %v (the baseline step is not the run's)", got, want)
	}
	if c.Base.N != 1 || c.Run.X.N != 4 {
		t.Errorf("Base.N = %d, Run.N = %d; want 1, 4", c.Base.N, c.Run.X.N)
	}
	if got, want := c.AcceptRate(), 4.0/8; got != want {
		t.Errorf("AcceptRate() = %v, want %v", got, want)
	}
	if (Counts{}).AcceptPerPos() != nil || (Counts{}).MeanAcceptLen() != 0 {
		t.Error("empty counts: want no per-position rates and mean 0")
	}
}

// run makes a synthetic run: n speculative steps of tokens in [lo, hi] and
// wall time stepMs (±jitter), and m baseline steps of plainMs (±jitter).
func run(k, n, m int, lo, hi int, stepMs, plainMs, jitter float64, seed uint64) Counts {
	rng := rand.New(rand.NewPCG(seed, 7))
	c := NewCounts(k)
	c.Source = BaselineInRun
	for i := range n {
		acc := lo - 1 + rng.IntN(hi-lo+1)
		c.Add(Step{Step: i + 1, Drafted: k, Depth: k, Accepted: acc, Tokens: acc + 1, Verify: ms(stepMs * (1 + jitter*(rng.Float64()-0.5)))})
	}
	for range m {
		c.Add(Step{Tokens: 1, Verify: ms(plainMs * (1 + jitter*(rng.Float64()-0.5))), Baseline: true})
	}
	return c
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Counts
		done  bool
		want  string
		words string
	}{
		{"plain run", NewCounts(0), true, NoSpec, "No speculation"},
		{"pays", run(4, 60, 20, 2, 4, 2, 1, 0.2, 1), false, Pays, "Speculation pays: 1.47x"},
		{"does not pay", run(4, 60, 20, 1, 2, 2, 1, 0.2, 2), false, DoesNotPay, "plain decoding would be faster"},
		{"break-even above k+1 (interval)", run(2, 60, 20, 1, 3, 4, 1, 0.2, 3), false, CannotPay, "cannot pay at this k"},
		// Break-even 3.3 > k+1 = 3 but its interval reaches below 3: the
		// speedup's interval decides, and it says "cannot pay", never
		// "plain would be faster".
		{"break-even above k+1 (point)", run(2, 60, 5, 1, 3, 3.3, 1, 0.6, 4), false, CannotPay, "above k+1 = 3"},
		{"too close, running", run(4, 40, 10, 1, 3, 2, 1, 0.4, 5), false, Measuring, "Measuring: 1.13x"},
		{"too close, done", run(4, 40, 10, 1, 3, 2, 1, 0.4, 5), true, TooClose, "Too close to call"},
		{"no baseline yet", run(4, 40, 2, 2, 4, 2, 1, 0.2, 6), false, Measuring, "Measuring: 40 speculative and 2 baseline steps"},
		{"too few steps", run(4, 2, 10, 2, 4, 2, 1, 0.2, 7), true, TooFew, "Too few steps"},
	} {
		v := Judge(tc.c, tc.done)
		if v.State != tc.want {
			t.Errorf("%s: Judge(done=%v).State = %s (%s), want %s", tc.name, tc.done, v.State, v, tc.want)
		}
		if !strings.Contains(v.String(), tc.words) {
			t.Errorf("%s: Judge(done=%v).String() = %q, want it to contain %q", tc.name, tc.done, v, tc.words)
		}
		if v.Speedup > 0 && !(v.SpeedupLo <= v.Speedup && v.Speedup <= v.SpeedupHi && v.BreakEvenLo <= v.BreakEven && v.BreakEven <= v.BreakEvenHi) {
			t.Errorf("%s: intervals do not hold their estimates: %+v", tc.name, v)
		}
	}
}

// TestJudgeExact: without noise the intervals close on the exact figures.
func TestJudgeExact(t *testing.T) {
	c := run(4, 10, 10, 3, 3, 2, 1, 0, 1) // 3 tokens per 2 ms step, plain 1 ms
	v := Judge(c, true)
	for _, f := range []struct {
		name        string
		got, lo, hi float64
		want        float64
	}{
		{"speedup", v.Speedup, v.SpeedupLo, v.SpeedupHi, 1.5},
		{"break-even", v.BreakEven, v.BreakEvenLo, v.BreakEvenHi, 2},
	} {
		for _, g := range []float64{f.got, f.lo, f.hi} {
			if math.Abs(g-f.want) > 1e-6 {
				t.Errorf("%s = %v [%v, %v], want exactly %v", f.name, f.got, f.lo, f.hi, f.want)
			}
		}
	}
	if v.State != Pays || v.BaselineTokS < 999 || v.BaselineTokS > 1001 || v.TokensPerStep != 3 {
		t.Errorf("Judge = %+v", v)
	}
}

// TestJudgeCoverage checks the delta-method interval against its claim:
// over many synthetic runs with a known true speedup, about 95% of the
// intervals hold it (seeded, so the count is fixed).
func TestJudgeCoverage(t *testing.T) {
	const trials = 400
	rng := rand.New(rand.NewPCG(11, 12))
	covered := 0
	for range trials {
		c := NewCounts(4)
		// Tokens 1..5 uniform (mean 3); wall 2 ms + 0.3 ms per token +
		// noise; plain 1.2 ms + noise. True speedup = 3·1.2/(2+0.9) .
		for range 50 {
			tok := 1 + rng.IntN(5)
			c.Add(Step{Drafted: 4, Depth: 4, Accepted: tok - 1, Tokens: tok, Verify: ms(2 + 0.3*float64(tok) + 0.5*rng.NormFloat64())})
		}
		for range 12 {
			c.Add(Step{Tokens: 1, Verify: ms(1.2 + 0.3*rng.NormFloat64()), Baseline: true})
		}
		v := Judge(c, true)
		if truth := 3 * 1.2 / 2.9; v.SpeedupLo <= truth && truth <= v.SpeedupHi {
			covered++
		}
	}
	t.Logf("covered %d of %d", covered, trials)
	if share := float64(covered) / trials; share < 0.91 || share > 0.99 {
		t.Errorf("the 95%% interval held the true speedup in %d of %d runs (%.1f%%)", covered, trials, 100*share)
	}
}

func TestTQuantile(t *testing.T) {
	prev := math.Inf(1)
	for df := 1; df < 200; df++ {
		q := tQuantile(df)
		if q > prev || q < 1.96 {
			t.Fatalf("tQuantile(%d) = %v after %v: want non-increasing and at least 1.96", df, q, prev)
		}
		prev = q
	}
}

func TestAgreement(t *testing.T) {
	for _, tc := range []struct {
		state    string
		measured float64
		want     string
	}{
		{Pays, 1.3, "yes"},
		{Pays, 0.7, "no"},
		{DoesNotPay, 0.7, "yes"},
		{CannotPay, 0.5, "yes"},
		{DoesNotPay, 1.3, "no"},
		{TooClose, 1.3, "no"}, // a verdict that does not call a clear case disagrees
		{Measuring, 0.7, "no"},
		{Pays, 1.05, "too close to call"},
		{DoesNotPay, 0.95, "too close to call"},
		{TooClose, 1.09, "too close to call"},
	} {
		if got := Agreement(Verdict{State: tc.state}, tc.measured, 0.10); got != tc.want {
			t.Errorf("Agreement(%s, measured %.2f, 10%%) = %q, want %q", tc.state, tc.measured, got, tc.want)
		}
	}
}

func TestRatioInterval(t *testing.T) {
	var s Sample
	for _, r := range []float64{1.1, 1.3, 1.2, 1.25} {
		s.Add(math.Log(r))
	}
	m, lo, hi := RatioInterval(s)
	// geometric mean of the four; t(3) = 3.182
	want := math.Pow(1.1*1.3*1.2*1.25, 0.25)
	if math.Abs(m-want) > 1e-12 || !(lo < m && m < hi) || lo < 1 || hi > 1.45 {
		t.Errorf("RatioInterval = %v [%v, %v], want %v inside a narrow interval above 1", m, lo, hi, want)
	}
	var one Sample
	one.Add(0.1)
	if m, _, _ := RatioInterval(one); m != 0 {
		t.Errorf("RatioInterval of one ratio = %v, want 0 (no interval from one)", m)
	}
}
