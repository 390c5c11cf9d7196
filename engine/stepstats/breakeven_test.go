package stepstats

import (
	"math"
	"testing"
)

// TestBreakEvenSeeds: the rig owner's arithmetic that started the
// project: a 30 ms verify step against 82 tok/s plain decoding needs a
// mean acceptance length of 2.46 to break even.
func TestBreakEvenSeeds(t *testing.T) {
	for _, tc := range []struct {
		step, plain, tokens float64
		breakEven, speedup  float64
	}{
		{0.030, 1.0 / 82, 2.46, 2.46, 1},
		{0.030, 1.0 / 82, 2.0, 2.46, 2.0 / 2.46},
		{0.002, 0.001, 3, 2, 1.5},
		{0.002, 0, 3, 0, 0}, // no plain time: nothing to compare with
		{0, 0.001, 3, 0, 0},
	} {
		if got := BreakEven(tc.step, tc.plain); math.Abs(got-tc.breakEven) > 1e-9 {
			t.Errorf("BreakEven(%v, %v) = %v, want %v", tc.step, tc.plain, got, tc.breakEven)
		}
		if got := Speedup(tc.tokens, tc.step, tc.plain); math.Abs(got-tc.speedup) > 1e-9 {
			t.Errorf("Speedup(%v, %v, %v) = %v, want %v", tc.tokens, tc.step, tc.plain, got, tc.speedup)
		}
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		v    Verdict
		done bool
		want string
	}{
		{Verdict{MaxPerStep: 5, Speedup: 1.3, SpeedupLo: 1.1, SpeedupHi: 1.5, BreakEven: 2, BreakEvenLo: 1.8}, false, Pays},
		{Verdict{MaxPerStep: 5, Speedup: 0.8, SpeedupLo: 0.7, SpeedupHi: 0.9, BreakEven: 3, BreakEvenLo: 2.8}, false, DoesNotPay},
		{Verdict{MaxPerStep: 3, Speedup: 0.8, SpeedupLo: 0.7, SpeedupHi: 0.9, BreakEven: 4, BreakEvenLo: 3.5}, false, CannotPay},
		{Verdict{MaxPerStep: 5, Speedup: 1.0, SpeedupLo: 0.9, SpeedupHi: 1.1, BreakEven: 2, BreakEvenLo: 1.8}, false, Measuring},
		{Verdict{MaxPerStep: 5, Speedup: 1.0, SpeedupLo: 0.9, SpeedupHi: 1.1, BreakEven: 2, BreakEvenLo: 1.8}, true, TooClose},
	} {
		if got := Decide(tc.v, tc.done); got != tc.want {
			t.Errorf("Decide(%+v, %v) = %s, want %s", tc.v, tc.done, got, tc.want)
		}
	}
}
