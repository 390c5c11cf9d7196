package cuda

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"rigscope/engine/sample"
)

// emulateSampleRow is kernels/sample.cu's sample_row (and sample_bins.cu's
// sample_row_bins, the same descent with other partial sums) step for step on the
// CPU, with "threads" threads (each thread's strided partial sums, then a
// block sum; contiguous slices for the inverse CDF): the check that the
// kernel's algorithm (exact fixed-point sums, the radix descent to the
// kept set's boundary, the ties cut in index order, the inverse CDF over
// per-thread slices) is the host's specification to the bit, runnable
// without a GPU. It returns the id, the probabilities the kernel leaves in
// prob and the number of entries left with mass (info[0]).
func emulateSampleRow(logits []float32, p sample.Params, u float64, threads int) (int32, []float32, int) {
	vocab := len(logits)
	prob := make([]float32, vocab)
	m := float32(math.Inf(-1))
	for _, v := range logits {
		m = float32(math.Max(float64(m), float64(v)))
	}
	inv := 1 / p.Temperature
	part := make([]sample.Sum128, threads)
	for i, v := range logits {
		q := float32(sample.Exp(float64((v - m) * inv)))
		prob[i] = q
		part[i%threads].Add(fixed63(q))
	}
	var sum sample.Sum128
	for _, x := range part {
		add128(&sum, x)
	}
	norm := sum.Float() * 0x1p-63
	for i := range prob {
		prob[i] = float32(float64(prob[i]) / norm)
	}
	useK, useP := p.TopK > 0 && p.TopK < vocab, p.TopP > 0 && p.TopP < 1
	if useK || useP {
		keepK, target := vocab, ^uint64(0)
		if useK {
			keepK = p.TopK
		}
		if useP {
			target = sample.FixedTarget(p.TopP)
		}
		var prefix uint32
		cntAbove, wAbove, group := 0, uint64(0), vocab
		for shift := 28; shift >= 0; shift -= 4 {
			hi := uint32(0)
			if shift+4 < 32 {
				hi = ^uint32(0) << (shift + 4)
			}
			cnt := make([][16]int, threads)
			wt := make([][16]uint64, threads)
			for i, q := range prob {
				key := math.Float32bits(q)
				if key&hi != prefix {
					continue
				}
				d := int(key>>shift) & 15
				for j := 0; j <= d; j++ {
					cnt[i%threads][j]++
					wt[i%threads][j] += sample.Fixed(q)
				}
			}
			var csum [16]int
			var wsum [16]uint64
			for t := range cnt {
				for j := range csum {
					csum[j] += cnt[t][j]
					wsum[j] += wt[t][j]
				}
			}
			pick := 0
			for j := 15; j > 0; j-- {
				if cntAbove+csum[j] >= keepK || wAbove+wsum[j] >= target {
					pick = j
					break
				}
			}
			above, aboveW := 0, uint64(0)
			if pick+1 < 16 {
				above, aboveW = csum[pick+1], wsum[pick+1]
			}
			cntAbove += above
			wAbove += aboveW
			group = csum[pick] - above
			prefix |= uint32(pick) << shift
		}
		wstar := sample.Fixed(math.Float32frombits(prefix))
		n := max(1, min(group, keepK-cntAbove))
		if useP && wstar > 0 && wAbove < target {
			n = max(1, int(min(uint64(n), (target-wAbove+wstar-1)/wstar)))
		}
		mass := float64(wAbove+uint64(n)*wstar) * 0x1p-60
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
		for i, q := range prob {
			key := math.Float32bits(q)
			if key > prefix || key == prefix && i <= cut {
				prob[i] = float32(float64(q) / mass)
			} else {
				prob[i] = 0
			}
		}
	}
	var U uint64
	if u > 0 {
		U = uint64(math.Min(u, 1) * 0x1p60)
	}
	per := (vocab + threads - 1) / threads
	first, last := int32(-1), int32(-1)
	var acc uint64
	for t := 0; t < threads && first < 0; t++ {
		lo, hi := min(vocab, t*per), min(vocab, (t+1)*per)
		for i := lo; i < hi; i++ {
			if !(prob[i] > 0) {
				continue
			}
			acc += sample.Fixed(prob[i])
			last = int32(i)
			if U < acc {
				first = int32(i)
				break
			}
		}
	}
	if first < 0 {
		first = max(last, 0)
	}
	return first, prob, keptSize(prob)
}

// fixed63 is engine/sample's normalizer addend (smp_fixed63): q in units
// of 2^-63, truncated.
func fixed63(q float32) uint64 {
	switch {
	case !(q > 0):
		return 0
	case q >= 1:
		return 1 << 63
	}
	return uint64(float64(q) * 0x1p63)
}

// add128 adds b to a (smp_add128).
func add128(a *sample.Sum128, b sample.Sum128) {
	var c uint64
	a.Lo, c = bits.Add64(a.Lo, b.Lo, 0)
	a.Hi += b.Hi + c
}

// The kernel's algorithm gives the host's probabilities to the bit and so
// the host's token for every uniform number, on Gaussian, peaked and
// heavily tied logits, odd vocabulary sizes, temperature extremes and
// every setting of the GPU check plus the edges (top-k 1, top-k V-1, a
// nucleus that needs all but the tail, a tiny nucleus).
func TestSampleRowAlgorithm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	settings := append([]sample.Params{
		{Temperature: 1, TopK: 1},
		{Temperature: 0.5, TopP: 0.999},
		{Temperature: 2, TopP: 0.01},
		{Temperature: 1, TopK: 2, TopP: 0.3},
		{Temperature: 0.02, TopP: 0.95},
		{Temperature: 40, TopP: 0.9},
		{Temperature: 40, TopK: 7},
		{Temperature: 1e-4, TopK: 3, TopP: 0.7},
		{Temperature: 1, TopP: 0.9999999},
		{Temperature: 1, TopP: 1e-7},
	}, sampleSettings...)
	cases := []struct {
		name    string
		vocab   int
		threads int
		rows    int
		logit   func() float32
	}{
		{"gauss V=4096", 4096, 1024, 4, func() float32 { return float32(rng.NormFloat64()) }},
		{"peaked V=3000", 3000, 1024, 4, func() float32 { return float32(6 * rng.NormFloat64()) }},
		{"ties V=5000", 5000, 1024, 4, func() float32 { return float32(rng.IntN(7) - 3) }},
		{"ties V=4096 dyadic", 4096, 1024, 2, func() float32 { return float32(rng.IntN(2)) * float32(math.Ln2) }},
		{"two values V=77", 77, 32, 4, func() float32 { return float32(rng.IntN(2)) }},
		{"all equal V=100", 100, 1024, 2, func() float32 { return 1.5 }},
		{"all equal V=2048", 2048, 256, 2, func() float32 { return -3 }},
		{"huge range V=513", 513, 64, 4, func() float32 { return float32(80 * rng.NormFloat64()) }},
		{"bf16-like V=6000", 6000, 1024, 4, func() float32 {
			return math.Float32frombits(math.Float32bits(float32(3*rng.NormFloat64())) &^ 0xffff)
		}},
		{"one spike V=1000", 1000, 128, 2, func() float32 {
			if rng.IntN(1000) == 0 {
				return 30
			}
			return float32(rng.NormFloat64())
		}},
	}
	for _, c := range cases {
		for _, p := range settings {
			if p.TopK >= c.vocab {
				continue
			}
			for r := 0; r < c.rows; r++ {
				row := make([]float32, c.vocab)
				for i := range row {
					row[i] = c.logit()
				}
				want := make([]float32, c.vocab)
				(&sample.Sampler{P: p}).Probs(want, row)
				for j := 0; j < 24; j++ {
					u := rng.Float64()
					switch j {
					case 0:
						u = 0
					case 1:
						u = 1 - 0x1p-53
					}
					id, got, kept := emulateSampleRow(row, p, u, c.threads)
					if j == 0 {
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s %+v row %d: p[%d] = %g, host %g (kept %d, host %d)", c.name, p, r, i, got[i], want[i], kept, keptSize(want))
							}
						}
					}
					if w := sample.DrawU(want, u); id != w {
						t.Fatalf("%s %+v row %d u=%v: id %d, host %d", c.name, p, r, u, id, w)
					}
				}
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
