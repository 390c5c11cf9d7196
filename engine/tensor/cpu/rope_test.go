package cpu

import (
	"math"
	"sync"
	"testing"
)

// The table computes positions when first used; whatever the order and the
// goroutines that reach them, each rotation must be the one an eager table
// (the formula below) gives, bit for bit.
func TestRopeTableLazy(t *testing.T) {
	const headDim, maxPos, theta = 16, 300, 10000
	half := headDim / 2
	want := func(p, j int) (float32, float32) {
		inv := float32(1 / math.Pow(theta, float64(float32(2*j)/float32(headDim))))
		a := float32(p) * inv
		return float32(math.Cos(float64(a))), float32(math.Sin(float64(a)))
	}
	for _, tc := range []struct {
		name      string
		positions []int
		workers   int
	}{
		{"ascending", []int{0, 1, 2, 63, 64, 65, 128}, 1},
		{"out of order", []int{299, 5, 170, 64, 0}, 1},
		{"last position first", []int{maxPos - 1}, 1},
		{"concurrent", []int{10, 250, 70, 130, 190, 299, 1, 64}, 4},
	} {
		rt := NewRopeTable(headDim, maxPos, theta)
		if rt.MaxPos() != maxPos {
			t.Fatalf("%s: MaxPos %d, want %d", tc.name, rt.MaxPos(), maxPos)
		}
		got := make([][]float32, len(tc.positions))
		var wg sync.WaitGroup
		for w := 0; w < tc.workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, p := range tc.positions {
					if i%tc.workers != w {
						continue
					}
					v := make([]float32, headDim)
					for j := 0; j < half; j++ {
						v[2*j] = 1 // (1, 0) rotates to (cos, sin)
					}
					rt.Apply(v, p, true)
					got[i] = v
				}
			}()
		}
		wg.Wait()
		for i, p := range tc.positions {
			for j := 0; j < half; j++ {
				c, s := want(p, j)
				if got[i][2*j] != c || got[i][2*j+1] != s {
					t.Errorf("%s: position %d pair %d = (%v, %v), want (%v, %v)", tc.name, p, j, got[i][2*j], got[i][2*j+1], c, s)
				}
			}
		}
	}
}
