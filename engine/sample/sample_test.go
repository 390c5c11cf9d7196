package sample

import (
	"math"
	"testing"
)

func TestArgmax(t *testing.T) {
	tests := []struct {
		in   []float32
		want int32
	}{
		{[]float32{1, 3, 2}, 1},
		{[]float32{5, 5, 1}, 0},
		{[]float32{-3, -1, -2}, 1},
	}
	for _, tt := range tests {
		if got := Argmax(tt.in); got != tt.want {
			t.Errorf("Argmax(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestProbs(t *testing.T) {
	logits := []float32{0, float32(math.Log(2)), float32(math.Log(3)), float32(math.Log(4))} // softmax: .1 .2 .3 .4
	tests := []struct {
		p    Params
		want []float32
	}{
		{Params{Temperature: 1}, []float32{.1, .2, .3, .4}},
		{Params{Temperature: 1, TopK: 2}, []float32{0, 0, 3.0 / 7, 4.0 / 7}},
		{Params{Temperature: 1, TopP: 0.65}, []float32{0, 0, 3.0 / 7, 4.0 / 7}},
		{Params{Temperature: 1, TopP: 0.75}, []float32{0, 2.0 / 9, 3.0 / 9, 4.0 / 9}},
		{Params{}, []float32{0, 0, 0, 1}},
	}
	for _, tt := range tests {
		s := New(tt.p, 1)
		got := make([]float32, 4)
		s.Probs(got, logits)
		for i := range got {
			if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
				t.Errorf("Probs(%+v) = %v, want %v", tt.p, got, tt.want)
				break
			}
		}
	}
}

func TestDrawFrequencies(t *testing.T) {
	s := New(Params{Temperature: 1}, 42)
	probs := []float32{.1, .2, .3, .4}
	const n = 100000
	var count [4]int
	for i := 0; i < n; i++ {
		count[s.Draw(probs)]++
	}
	for i, c := range count {
		// 5 sigma of a binomial(n, p).
		p := float64(probs[i])
		if d := math.Abs(float64(c) - n*p); d > 5*math.Sqrt(n*p*(1-p)) {
			t.Errorf("Draw: token %d drawn %d times of %d, want about %.0f", i, c, n, n*p)
		}
	}
}

func TestSeedReproducible(t *testing.T) {
	logits := []float32{1, 2, 3, 4, 5}
	scratch := make([]float32, 5)
	a, b := New(Params{Temperature: 1}, 7), New(Params{Temperature: 1}, 7)
	for i := 0; i < 100; i++ {
		if x, y := a.Sample(logits, scratch), b.Sample(logits, scratch); x != y {
			t.Fatalf("step %d: same seed gave %d and %d", i, x, y)
		}
	}
}

// A device sampler is handed Uniform's number and must pick what Sample
// picks: drawing the uniform first and calling SampleU consumes the
// generator exactly as Sample does, token for token.
func TestSampleUMatchesSample(t *testing.T) {
	logits := []float32{0.5, 2, -1, 3, 3, 0, 1.25, -4}
	for _, p := range []Params{
		{Temperature: 1},
		{Temperature: 0.8, TopP: 0.9},
		{Temperature: 0.7, TopK: 3},
		{Temperature: 1.3, TopK: 5, TopP: 0.6},
		{},
	} {
		a, b := New(p, 11), New(p, 11)
		sa, sb := make([]float32, len(logits)), make([]float32, len(logits))
		for i := 0; i < 500; i++ {
			want := a.Sample(logits, sa)
			u := 0.0
			if !p.Greedy() {
				u = b.Uniform()
			}
			if got := b.SampleU(logits, sb, u); got != want {
				t.Fatalf("%+v step %d: SampleU(Uniform()) = %d, Sample = %d", p, i, got, want)
			}
		}
	}
}

func TestDrawU(t *testing.T) {
	probs := []float32{0, .25, 0, .5, .25, 0}
	tests := []struct {
		u    float64
		want int32
	}{
		{0, 1},
		{0.2499, 1},
		{0.25, 3}, // u < acc is strict: the boundary belongs to the next index
		{0.7499, 3},
		{0.75, 4},
		{0.99999, 4},
		{1.5, 4}, // past the mass: the last index with mass, never a zero one
	}
	for _, tt := range tests {
		if got := DrawU(probs, tt.u); got != tt.want {
			t.Errorf("DrawU(%v, %v) = %d, want %d", probs, tt.u, got, tt.want)
		}
	}
}
