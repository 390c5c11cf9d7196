// Package sample turns logits into tokens: greedy, temperature, top-k and
// top-p, with a seeded generator so runs are reproducible, and the
// probability vectors that speculative rejection sampling compares.
package sample

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
)

// Params are the sampling settings; Temperature 0 means greedy.
type Params struct {
	Temperature float32
	TopK        int     // 0 = off
	TopP        float32 // 0 or 1 = off
}

// Greedy reports whether p picks the argmax.
func (p Params) Greedy() bool { return p.Temperature <= 0 }

// Sampler draws tokens. Not safe for concurrent use.
type Sampler struct {
	P   Params
	rng *rand.Rand
	idx []int32
}

// New returns a sampler seeded with seed.
func New(p Params, seed uint64) *Sampler {
	return &Sampler{P: p, rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
}

// Float returns a uniform number in [0, 1).
func (s *Sampler) Float() float32 { return s.rng.Float32() }

// Argmax returns the index of the largest logit (the lowest index on ties).
func Argmax(logits []float32) int32 {
	best, bi := float32(math.Inf(-1)), 0
	for i, v := range logits {
		if v > best {
			best, bi = v, i
		}
	}
	return int32(bi)
}

// Probs writes the distribution p samples from into out: softmax of
// logits/T, restricted to the top-k, then to the smallest set whose mass
// reaches top-p, renormalized. Greedy params give a point mass.
//
// Every sum that decides something is exact, so it has no order and a
// device that adds in parallel (kernels/sample.cu) gets the same bits:
//
//   - q_i = float32(exp(float64((l_i - m) * (1/T)))), m the largest logit;
//     the normalizer is the exact sum of the q_i in units of 2^-63
//     (fixed63, 128-bit), p_i = float32(float64(q_i) / normalizer);
//   - ordered by p descending (index ascending on ties), the first min(k, V)
//     are kept, cut at the first whose running mass reaches top-p, the mass
//     counted exactly in units of 2^-60 (Fixed: each p truncated, at most
//     2^-60 each, so the cut is the real sum's within V*2^-60);
//   - the kept ones renormalized by their exact mass, the others 0.
//
// (The float32 running sum in sorted order that this replaced rounded at
// every step, up to 2^-25 each, and depended on the order of the
// additions: a device could reproduce it only by sorting the kept set,
// up to the whole vocabulary, and adding it on one thread.)
func (s *Sampler) Probs(out, logits []float32) {
	out = out[:len(logits)]
	if s.P.Greedy() {
		clear(out)
		out[Argmax(logits)] = 1
		return
	}
	inv := 1 / s.P.Temperature
	m := float32(math.Inf(-1))
	for _, v := range logits {
		m = max(m, v)
	}
	var sum Sum128
	for i, v := range logits {
		q := float32(Exp(float64((v - m) * inv)))
		out[i] = q
		sum.Add(fixed63(q))
	}
	norm := sum.Float() * 0x1p-63
	for i := range out {
		out[i] = float32(float64(out[i]) / norm)
	}
	k, topP := s.P.TopK, s.P.TopP
	if (k <= 0 || k >= len(out)) && (topP <= 0 || topP >= 1) {
		return
	}
	if cap(s.idx) < len(out) {
		s.idx = make([]int32, len(out))
	}
	idx := s.idx[:len(out)]
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.Slice(idx, func(a, b int) bool {
		if out[idx[a]] != out[idx[b]] {
			return out[idx[a]] > out[idx[b]]
		}
		return idx[a] < idx[b]
	})
	keep := len(idx)
	if k > 0 && k < keep {
		keep = k
	}
	var kept uint64 // the kept mass in units of 2^-60
	if topP > 0 && topP < 1 {
		target := FixedTarget(topP)
		for i := 0; i < keep; i++ {
			kept += Fixed(out[idx[i]])
			if kept >= target {
				keep = i + 1
				break
			}
		}
	}
	kept = 0
	for i := 0; i < keep; i++ {
		kept += Fixed(out[idx[i]])
	}
	mass := float64(kept) * 0x1p-60
	for i := keep; i < len(idx); i++ {
		out[idx[i]] = 0
	}
	for i := 0; i < keep; i++ {
		out[idx[i]] = float32(float64(out[idx[i]]) / mass)
	}
}

// Fixed is probability p as an exact count of units of 2^-60, truncated
// (p in [0, 1]; larger p count as 1, NaN as 0): the mass Probs and DrawU
// add, exactly, in any order. The largest kept probability is at least
// 1/V, so a kept mass is never 0.
func Fixed(p float32) uint64 {
	switch {
	case !(p > 0):
		return 0
	case p >= 1:
		return 1 << 60
	}
	return uint64(float64(p) * 0x1p60)
}

// FixedTarget is the least count of 2^-60 units that reaches top-p:
// a running Fixed mass W reaches topP exactly when W >= FixedTarget(topP).
func FixedTarget(topP float32) uint64 {
	return uint64(math.Ceil(float64(topP) * 0x1p60))
}

// fixed63 is q (an exp value in [0, 1]) as a count of units of 2^-63,
// truncated: the normalizer's addends.
func fixed63(q float32) uint64 {
	switch {
	case !(q > 0):
		return 0
	case q >= 1:
		return 1 << 63
	}
	return uint64(float64(q) * 0x1p63)
}

// Sum128 is an exact unsigned 128-bit sum (the normalizer's units of
// 2^-63 over up to 2^64 entries).
type Sum128 struct{ Hi, Lo uint64 }

// Add adds x.
func (s *Sum128) Add(x uint64) {
	var c uint64
	s.Lo, c = bits.Add64(s.Lo, x, 0)
	s.Hi += c
}

// Float is the sum as a float64: float64(Hi) * 2^64 + float64(Lo), each
// conversion and the addition rounded to nearest (as the kernel does).
func (s Sum128) Float() float64 {
	return float64(float64(s.Hi)*0x1p64) + float64(s.Lo)
}

// Uniform draws the uniform number in [0, 1) that Draw would draw next.
// A device that samples itself (spec.SampleTarget) is handed it, so a
// sampled run consumes the generator exactly as the host sampler does.
func (s *Sampler) Uniform() float64 { return s.rng.Float64() }

// Draw samples an index from the distribution probs (which sums to ~1).
func (s *Sampler) Draw(probs []float32) int32 { return DrawU(probs, s.Uniform()) }

// DrawU is Draw with its uniform number u given: the inverse CDF over probs
// in index order, the first index whose running mass exceeds u, or the
// last index with p > 0 when truncation left the sum at or under u. The
// running mass and u are counted exactly in units of 2^-60 (Fixed; u from
// Uniform is a multiple of 2^-53, so exact), so a device that adds in
// parallel draws the same index.
func DrawU(probs []float32, u float64) int32 {
	var acc uint64
	target := uint64(0)
	if u > 0 {
		target = uint64(min(u, 1) * 0x1p60)
	}
	last := int32(0)
	for i, p := range probs {
		if !(p > 0) {
			continue
		}
		acc += Fixed(p)
		last = int32(i)
		if target < acc {
			return int32(i)
		}
	}
	return last // truncation: the mass summed to slightly under 1
}

// SampleU is Sample with Draw's uniform number u given (Uniform): the
// specification a device sampler matches. Greedy params ignore u.
func (s *Sampler) SampleU(logits, scratch []float32, u float64) int32 {
	if s.P.Greedy() {
		return Argmax(logits)
	}
	s.Probs(scratch, logits)
	return DrawU(scratch, u)
}

// Sample picks the next token from logits; scratch holds len(logits) floats.
func (s *Sampler) Sample(logits, scratch []float32) int32 {
	if s.P.Greedy() {
		return Argmax(logits)
	}
	s.Probs(scratch, logits)
	return s.Draw(scratch)
}
