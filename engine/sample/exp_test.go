package sample

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Exp is e**x (within 2 ulp of math.Exp) over the softmax's range (x <= 0, down past
// where float32 flushes to 0) and a little above, with the edges exact.
func TestExp(t *testing.T) {
	edges := []struct{ x, want float64 }{
		{0, 1}, {math.Copysign(0, -1), 1}, {math.Inf(-1), 0}, {-800, 0}, {1e-300, 1},
		{-745, 0x1p-1074}, // k = -1075: through Ldexp, the smallest subnormal
	}
	for _, e := range edges {
		if got := Exp(e.x); got != e.want {
			t.Errorf("Exp(%g) = %g, want %g", e.x, got, e.want)
		}
	}
	// k = 1024 goes through Ldexp: e**709.78 = 1.7928e308 is finite (math.Exp's
	// amd64 assembly says +Inf).
	if got := Exp(709.78); math.IsInf(got, 0) || math.Abs(got-1.7928227943945e308) > 1e296 {
		t.Errorf("Exp(709.78) = %g, want 1.7928227943945e308", got)
	}
	if got := Exp(math.Inf(1)); !math.IsInf(got, 1) {
		t.Errorf("Exp(+Inf) = %g", got)
	}
	if got := Exp(math.NaN()); !math.IsNaN(got) {
		t.Errorf("Exp(NaN) = %g", got)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 200000; i++ {
		x := -110 * rng.Float64()
		switch i % 4 {
		case 0:
			x = 2*rng.Float64() - 1
		case 1:
			x = -745 + 1454.7*rng.Float64() // the whole range, subnormal and huge results too
		}
		got, want := Exp(x), math.Exp(x)
		// Each is within 1 ulp of e**x (math.Exp's asm and this differ in
		// about 1 in 6 arguments), so at most 2 apart.
		if ulp := math.Nextafter(want, math.Inf(1)) - want; math.Abs(got-want) > 2*ulp && want > 0x1p-1022 {
			t.Fatalf("Exp(%v) = %v, math.Exp %v: more than 2 ulp apart", x, got, want)
		}
	}
}
