// Package sample turns logits into tokens: greedy, temperature, top-k and
// top-p, with a seeded generator so runs are reproducible, and the
// probability vectors that speculative rejection sampling compares.
package sample

import (
	"math"
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
	var sum float64
	for i, v := range logits {
		e := math.Exp(float64((v - m) * inv))
		out[i] = float32(e)
		sum += e
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / sum)
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
	if topP > 0 && topP < 1 {
		var mass float32
		for i := 0; i < keep; i++ {
			mass += out[idx[i]]
			if mass >= topP {
				keep = i + 1
				break
			}
		}
	}
	var kept float64
	for i := 0; i < keep; i++ {
		kept += float64(out[idx[i]])
	}
	for i := keep; i < len(idx); i++ {
		out[idx[i]] = 0
	}
	for i := 0; i < keep; i++ {
		out[idx[i]] = float32(float64(out[idx[i]]) / kept)
	}
}

// Uniform draws the uniform number in [0, 1) that Draw would draw next.
// A device that samples itself (spec.SampleTarget) is handed it, so a
// sampled run consumes the generator exactly as the host sampler does.
func (s *Sampler) Uniform() float64 { return s.rng.Float64() }

// Draw samples an index from the distribution probs (which sums to ~1).
func (s *Sampler) Draw(probs []float32) int32 { return DrawU(probs, s.Uniform()) }

// DrawU is Draw with its uniform number u given: the inverse CDF over probs
// in index order (float64 running sum), the first index whose running sum
// exceeds u, or the last index with mass when rounding left the sum under u.
func DrawU(probs []float32, u float64) int32 {
	var acc float64
	last := int32(0)
	for i, p := range probs {
		if p <= 0 {
			continue
		}
		acc += float64(p)
		last = int32(i)
		if u < acc {
			return int32(i)
		}
	}
	return last // rounding: the mass summed to slightly under 1
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
