package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"rigscope/engine/sample"
)

// emulateSampleRow is kernels/sample.cu's sample_row step for step on the
// CPU, with threads "threads" (each thread's strided partial sums, then a
// block sum in thread order): the check that the kernel's algorithm (the
// radix descent to the kept set's boundary, the ties cut in index order,
// the inverse CDF over per-thread slices) is the host's specification,
// runnable without a GPU. It returns the id and the number of entries left
// with mass (info[0]).
func emulateSampleRow(logits []float32, p sample.Params, u float64, threads int) (int32, int) {
	vocab := len(logits)
	prob := make([]float32, vocab)
	m := float32(math.Inf(-1))
	for _, v := range logits {
		m = float32(math.Max(float64(m), float64(v)))
	}
	inv := 1 / p.Temperature
	part := make([]float64, threads)
	for i, v := range logits {
		e := math.Exp(float64((v - m) * inv))
		prob[i] = float32(e)
		part[i%threads] += e
	}
	var sum float64
	for _, x := range part {
		sum += x
	}
	for i := range prob {
		prob[i] = float32(float64(prob[i]) / sum)
	}
	useK, useP := p.TopK > 0 && p.TopK < vocab, p.TopP > 0 && p.TopP < 1
	if useK || useP {
		keepK := vocab
		if useK {
			keepK = p.TopK
		}
		var prefix uint32
		cntAbove, massAbove, group := 0, 0.0, vocab
		for shift := 28; shift >= 0; shift -= 4 {
			hi := uint32(0)
			if shift+4 < 32 {
				hi = ^uint32(0) << (shift + 4)
			}
			var csum [16]int
			var dsum [16]float64
			tmass := make([][16]float32, threads)
			for i, q := range prob {
				key := math.Float32bits(q)
				if key&hi != prefix {
					continue
				}
				d := int(key>>shift) & 15
				for j := 0; j <= d; j++ {
					csum[j]++
					tmass[i%threads][j] += q
				}
			}
			for _, tm := range tmass {
				for j := range dsum {
					dsum[j] += float64(tm[j])
				}
			}
			pick, lowest := -1, 0
			for j := 15; j >= 0; j-- {
				if csum[j] == csum[0] && lowest == 0 {
					lowest = j
				}
				if pick < 0 && (cntAbove+csum[j] >= keepK || useP && massAbove+dsum[j] >= float64(p.TopP)) {
					pick = j
				}
			}
			if pick < 0 {
				pick = lowest
			}
			above, aboveMass := 0, 0.0
			if pick+1 < 16 {
				above, aboveMass = csum[pick+1], dsum[pick+1]
			}
			cntAbove += above
			massAbove += aboveMass
			group = csum[pick] - above
			prefix |= uint32(pick) << shift
		}
		vstar := math.Float32frombits(prefix)
		n := max(1, min(group, keepK-cntAbove))
		if useP && vstar > 0 {
			mass, j := float32(massAbove), 0
			for j < n {
				j++
				mass += vstar
				if mass >= p.TopP {
					break
				}
			}
			n = j
		}
		cut := vocab
		if n < group {
			seen := 0
			for i, q := range prob {
				if math.Float32bits(q) == prefix {
					if seen == n-1 {
						cut = i
						break
					}
					seen++
				}
			}
		}
		in := func(i int) bool {
			key := math.Float32bits(prob[i])
			return key > prefix || key == prefix && i <= cut
		}
		var kept float64
		for i := range prob {
			if in(i) {
				kept += float64(prob[i])
			}
		}
		for i := range prob {
			if in(i) {
				prob[i] = float32(float64(prob[i]) / kept)
			} else {
				prob[i] = 0
			}
		}
	}
	per := (vocab + threads - 1) / threads
	first, last := int32(-1), int32(-1)
	var acc float64
	for t := 0; t < threads && first < 0; t++ {
		lo, hi := min(vocab, t*per), min(vocab, (t+1)*per)
		for i := lo; i < hi; i++ {
			if prob[i] <= 0 {
				continue
			}
			acc += float64(prob[i])
			last = int32(i)
			if u < acc {
				first = int32(i)
				break
			}
		}
	}
	if first < 0 {
		first = max(last, 0)
	}
	nz := 0
	for _, q := range prob {
		if q > 0 {
			nz++
		}
	}
	return first, nz
}

// The kernel's algorithm picks the host's token and keeps the host's
// number of entries, on Gaussian and heavily tied logits, odd vocabulary
// sizes and every setting of the GPU check plus the edges (top-k 1,
// top-k V-1, a nucleus that needs all but the tail).
func TestSampleRowAlgorithm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	settings := append([]sample.Params{
		{Temperature: 1, TopK: 1},
		{Temperature: 0.5, TopP: 0.999},
		{Temperature: 2, TopP: 0.01},
		{Temperature: 1, TopK: 2, TopP: 0.3},
	}, sampleSettings...)
	cases := []struct {
		name    string
		vocab   int
		threads int
		logit   func() float32
	}{
		{"gauss V=4096", 4096, 1024, func() float32 { return float32(rng.NormFloat64()) }},
		{"peaked V=3000", 3000, 1024, func() float32 { return float32(6 * rng.NormFloat64()) }},
		{"ties V=5000", 5000, 1024, func() float32 { return float32(rng.IntN(7) - 3) }},
		{"two values V=77", 77, 32, func() float32 { return float32(rng.IntN(2)) }},
		{"all equal V=100", 100, 1024, func() float32 { return 1.5 }},
		{"huge range V=513", 513, 64, func() float32 { return float32(80 * rng.NormFloat64()) }},
	}
	for _, c := range cases {
		for _, p := range settings {
			if p.TopK >= c.vocab {
				continue
			}
			same, total, keepSame, rows := 0, 0, 0, 0
			for r := 0; r < 3; r++ {
				row := make([]float32, c.vocab)
				for i := range row {
					row[i] = c.logit()
				}
				probs := make([]float32, c.vocab)
				(&sample.Sampler{P: p}).Probs(probs, row)
				want := keptSize(probs)
				minP := float32(1) // the host's smallest kept probability: about the cut's value
				for _, q := range probs {
					if q > 0 {
						minP = min(minP, q)
					}
				}
				rows++
				keptOK := true
				for j := 0; j < 40; j++ {
					u := rng.Float64()
					if j == 0 {
						u = 0
					}
					id, keep := emulateSampleRow(row, p, u, c.threads)
					total++
					if id == sample.DrawU(probs, u) {
						same++
					}
					keptOK = keptOK && keep == want
					if d := math.Abs(float64(keep-want)) * float64(minP); d > 1e-4 {
						t.Errorf("%s %+v: kept sets differ by %d entries of about %.3g each (%.3g of the mass)", c.name, p, keep-want, minP, d)
					}
				}
				if keptOK {
					keepSame++
				}
			}
			// Counts are exact: without top-p the kept set is the host's.
			// With top-p the host's float32 running mass (in sorted order)
			// may reach the cut some entries earlier or later than the
			// kernel's sums: the same value added many times drifts by the
			// same rounding each time, so with large tied groups it does
			// (ties V=5000 at top-p 0.999: a few entries of 3e-6 each).
			// The mass that moves is what bounds the difference checked
			// above; an id changes only when the draw lands on it.
			useP := p.TopP > 0 && p.TopP < 1
			if same < total-1 || !useP && keepSame != rows {
				t.Errorf("%s %+v: ids equal %d/%d, kept sets equal in %d/%d rows", c.name, p, same, total, keepSame, rows)
			}
		}
	}
}

// sampleSettings are the (temperature, top-k, top-p) settings the sample
// checks run: each filter alone, both, a tight nucleus, top-k 1.
var sampleSettings = []sample.Params{
	{Temperature: 1},
	{Temperature: 0.8, TopP: 0.9},
	{Temperature: 0.7, TopK: 40},
	{Temperature: 1, TopK: 50, TopP: 0.95},
	{Temperature: 0.6, TopP: 0.5},
	{Temperature: 1.3, TopK: 1000, TopP: 0.8},
	{Temperature: 0.8, TopK: 1},
}

// keptSize is the host's number of entries left with mass (probs is
// Probs' output): what sample_row's info[0] reports.
func keptSize(probs []float32) int {
	n := 0
	for _, q := range probs {
		if q > 0 {
			n++
		}
	}
	return n
}
