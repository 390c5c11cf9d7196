package cpu

import (
	"math"
	"sync"
	"sync/atomic"
)

// RMSNorm: out[t] = x[t] / sqrt(mean(x[t]²) + eps) * w, for T rows of len(w).
func RMSNorm(out, x, w []float32, eps float32) {
	d := len(w)
	for t := 0; t+d <= len(x); t += d {
		xs, os := x[t:t+d], out[t:t+d]
		var ss float32
		for _, v := range xs {
			ss += v * v
		}
		inv := float32(1 / math.Sqrt(float64(ss/float32(d)+eps)))
		for i, v := range xs {
			os[i] = v * inv * w[i]
		}
	}
}

// RopeTable holds cos/sin per (position, pair) computed as PyTorch does in
// float32: inv_freq_j = 1 / theta^(2j/d), angle = float32(pos) * inv_freq_j.
// Positions are computed when first used, in chunks of ropeChunk, so a
// table sized for a long context costs memory only for the positions a run
// reaches (the untouched part of the allocation is never made resident).
type RopeTable struct {
	HeadDim int
	cos     []float32 // (maxPos, HeadDim/2)
	sin     []float32 // (maxPos, HeadDim/2)
	inv     []float32 // (HeadDim/2) inverse frequencies

	mu     sync.Mutex
	filled atomic.Int64 // positions [0, filled) are computed
}

// ropeChunk is how many positions a table computes at a time.
const ropeChunk = 64

// NewRopeTable makes a table for positions [0, maxPos).
func NewRopeTable(headDim, maxPos int, theta float32) *RopeTable {
	return NewScaledRopeTable(headDim, maxPos, theta, nil)
}

// NewScaledRopeTable is NewRopeTable with pair j's inverse frequency
// divided by divisors[j] (headDim/2; nil: none), as llama.cpp applies
// freq_factors: inv_freq_j = 1 / theta^(2j/d) / divisors[j].
func NewScaledRopeTable(headDim, maxPos int, theta float32, divisors []float32) *RopeTable {
	half := headDim / 2
	rt := &RopeTable{HeadDim: headDim, cos: make([]float32, maxPos*half), sin: make([]float32, maxPos*half), inv: make([]float32, half)}
	for j := range rt.inv {
		rt.inv[j] = float32(1 / math.Pow(float64(theta), float64(float32(2*j)/float32(headDim))))
		if divisors != nil {
			rt.inv[j] /= divisors[j]
		}
	}
	return rt
}

// Ensure computes the rotations of positions [0, n) that are not yet
// computed (n is clamped to MaxPos). Safe for concurrent use with Apply.
func (rt *RopeTable) Ensure(n int) {
	if int64(n) <= rt.filled.Load() {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	half := rt.HeadDim / 2
	from := int(rt.filled.Load())
	to := min(rt.MaxPos(), (n+ropeChunk-1)/ropeChunk*ropeChunk)
	for p := from; p < to; p++ {
		for j := 0; j < half; j++ {
			a := float32(p) * rt.inv[j]
			rt.cos[p*half+j] = float32(math.Cos(float64(a)))
			rt.sin[p*half+j] = float32(math.Sin(float64(a)))
		}
	}
	if to > from {
		rt.filled.Store(int64(to))
	}
}

// Apply rotates every head of one token's vector v (nHeads*HeadDim) at
// position pos. interleaved pairs (2j, 2j+1); otherwise (j, j+d/2).
func (rt *RopeTable) Apply(v []float32, pos int, interleaved bool) {
	if int64(pos) >= rt.filled.Load() {
		rt.Ensure(pos + 1)
	}
	d, half := rt.HeadDim, rt.HeadDim/2
	c := rt.cos[pos*half : pos*half+half]
	s := rt.sin[pos*half : pos*half+half]
	for h := 0; h+d <= len(v); h += d {
		x := v[h : h+d]
		if interleaved {
			for j := 0; j < half; j++ {
				a, b := x[2*j], x[2*j+1]
				x[2*j] = a*c[j] - b*s[j]
				x[2*j+1] = a*s[j] + b*c[j]
			}
		} else {
			for j := 0; j < half; j++ {
				a, b := x[j], x[j+half]
				x[j] = a*c[j] - b*s[j]
				x[j+half] = b*c[j] + a*s[j]
			}
		}
	}
}

// Tables returns cos and sin of positions [0, n) ((n, HeadDim/2) each,
// views of the table; n is clamped to MaxPos), computing them first: for
// a device that uploads the CPU's own rotations (gpu/cuda).
func (rt *RopeTable) Tables(n int) (cos, sin []float32) {
	n = min(n, rt.MaxPos())
	rt.Ensure(n)
	half := rt.HeadDim / 2
	return rt.cos[:n*half], rt.sin[:n*half]
}

// MaxPos is the number of positions the table covers.
func (rt *RopeTable) MaxPos() int { return len(rt.cos) / (rt.HeadDim / 2) }

// SwiGLU: out = silu(gate) * up, elementwise, with exp32 (exp.go); out may
// alias gate.
func SwiGLU(out, gate, up []float32) { swiglu(out, gate, up) }

// Add: out += a, elementwise.
func Add(out, a []float32) {
	a = a[:len(out)]
	for i := range out {
		out[i] += a[i]
	}
}

// Softmax in place, in float32 with the max subtracted (exp32, exp.go).
func Softmax(x []float32) {
	m := maxOf(x)
	// exp32 of the whole groups of eight, summed lane by lane, the lanes
	// reduced in HSUM8's order, then the tail in order: the sum depends on
	// len(x) and the values alone.
	n8 := len(x) &^ 7
	var lanes [8]float32
	softmaxExp(x[:n8], m, &lanes)
	s := ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
	for i := n8; i < len(x); i++ {
		e := exp32(x[i] - m)
		x[i] = e
		s += e
	}
	scale(x, 1/s)
}

// Dot exposes the float32 inner product for attention.
func Dot(a, b []float32) float32 { return dot(a, b) }

// AXPY: y += a*x.
func AXPY(y []float32, a float32, x []float32) { axpy(y, a, x) }
