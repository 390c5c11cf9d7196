package tp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// u32 is float32's unit roundoff.
const u32 = 1.0 / (1 << 24)

// testAuto is a fixed auto table that exercises every exact algorithm.
func testAuto(ranks int) *AutoTable {
	return &AutoTable{Ranks: ranks, Rules: []AutoRule{
		{16, "oneshot"}, {4 << 10, "tree"}, {64 << 10, "ring"}, {1 << 40, "twoshot"},
	}}
}

func newTestGroup(t *testing.T, backend string, ranks int) *Group {
	t.Helper()
	opts := GroupOptions{CacheDir: t.TempDir()}
	if backend == "auto" {
		opts.Auto = testAuto(ranks)
	}
	g, err := NewGroup(backend, ranks, opts)
	if err != nil {
		t.Fatalf("NewGroup(%q, %d): %v", backend, ranks, err)
	}
	return g
}

// runAll calls f on every rank at once and fails the test if any rank has
// not returned after timeout (a hang).
func runAll(t *testing.T, ranks int, timeout time.Duration, f func(r int) error) []error {
	t.Helper()
	errs := make([]error, ranks)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("ranks still running after %v: a collective hangs", timeout)
	}
	return errs
}

// bounds returns the allowed |got - ref| per element. Exact backends add n
// values in float32 in some order: |err| <= gamma(n-1) * sum_j |x_j|, with
// gamma(k) = k*u/(1-k*u), u = 2^-24 (Higham, Accuracy and Stability, 4.2).
// Compressed ones add quantization: int8 rounds each value to within
// blockmax/254 (the other ranks' input chunks, then the reduced chunk);
// bf16 to within 2^-8 relative (likewise twice).
func bounds(backend string, in [][]float32, ref []float64) []float64 {
	n, L := len(in), len(ref)
	gamma := func(k int) float64 { return float64(k) * u32 / (1 - float64(k)*u32) }
	out := make([]float64, L)
	sumAbs := make([]float64, L)
	for _, x := range in {
		for i, v := range x {
			sumAbs[i] += math.Abs(float64(v))
		}
	}
	for i := range out {
		out[i] = gamma(n-1)*sumAbs[i] + 1e-300
	}
	switch backend {
	case "compressed":
		for lo := 0; lo < L; lo += qBlock {
			hi := min(lo+qBlock, L)
			var bsum, bref float64
			for _, x := range in {
				var m float64
				for _, v := range x[lo:hi] {
					m = max(m, math.Abs(float64(v)))
				}
				bsum += m
			}
			for _, v := range ref[lo:hi] {
				bref = max(bref, math.Abs(v))
			}
			ein := bsum / 254
			b := (ein+(bref+ein)/254)*(1+1e-5) + 2*gamma(n+2)*(bsum+bref)
			for i := lo; i < hi; i++ {
				out[i] = b
			}
		}
	case "compressed-bf16":
		for i := range out {
			ein := sumAbs[i] / 256
			out[i] = (ein+(math.Abs(ref[i])+ein)/256)*(1+1e-5) + 2*gamma(n+2)*sumAbs[i]
		}
	}
	return out
}

// checkAllReduce runs one allreduce on fresh random inputs and compares
// every rank's result with the float64 sum; all ranks must agree bitwise.
func checkAllReduce(t *testing.T, g *Group, backend string, elems int, seed uint64) {
	t.Helper()
	ranks := g.Size()
	in := make([][]float32, ranks)
	bufs := make([][]float32, ranks)
	ref := make([]float64, elems)
	s := seed*0x9E3779B97F4A7C15 + 1
	for r := range ranks {
		in[r] = make([]float32, elems)
		for i := range in[r] {
			s ^= s << 13 // xorshift64: uniform in [-1, 1), cheaper than math/rand under -race
			s ^= s >> 7
			s ^= s << 17
			v := float32(int32(s>>32)) / (1 << 31)
			in[r][i] = v
			ref[i] += float64(v)
		}
		bufs[r] = append([]float32(nil), in[r]...)
	}
	errs := runAll(t, ranks, time.Minute, func(r int) error {
		return g.Comm(r).AllReduceSum(context.Background(), bufs[r])
	})
	call := fmt.Sprintf("NewGroup(%q, %d).AllReduceSum(%d random floats, seed %d)", backend, ranks, elems, seed)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	bd := bounds(backend, in, ref)
	for i := range elems {
		got := float64(bufs[0][i])
		if d := math.Abs(got - ref[i]); !(d <= bd[i]) {
			t.Fatalf("%s: element %d = %g, float64 sum %g, |diff| %g > bound %g", call, i, got, ref[i], d, bd[i])
		}
		for r := 1; r < ranks; r++ {
			if math.Float32bits(bufs[r][i]) != math.Float32bits(bufs[0][i]) {
				t.Fatalf("%s: rank %d element %d = %g, rank 0 has %g: ranks disagree", call, r, i, bufs[r][i], bufs[0][i])
			}
		}
	}
}

var testBackends = []string{"ring", "tree", "oneshot", "twoshot", "compressed", "compressed-bf16", "auto"}

func TestAllReduceMatchesFloat64Sum(t *testing.T) {
	sizes := []int{1, 2, 3, 7, 31, 1000, 4097, 65537, 1<<20 + 3}
	for _, backend := range testBackends {
		for _, ranks := range []int{2, 3, 4, 8} {
			t.Run(fmt.Sprintf("%s/%d", backend, ranks), func(t *testing.T) {
				g := newTestGroup(t, backend, ranks)
				// One group serves every size, twice: the second round
				// reuses the double-buffered scratch.
				for round := range 2 {
					for _, n := range sizes {
						if n > 70000 && (round == 1 || raceEnabled && ranks != 3) {
							continue // see raceEnabled
						}
						checkAllReduce(t, g, backend, n, uint64(round*1000+n))
					}
				}
			})
		}
	}
}

// The 16M-element case: ring and oneshot with 2 ranks (the others take the
// same code paths at 1M+3 above); under -race ring only.
func TestAllReduce16M(t *testing.T) {
	if testing.Short() {
		t.Skip("16M elements: skipped with -short")
	}
	backends := []string{"ring", "oneshot"}
	if raceEnabled {
		backends = backends[:1]
	}
	for _, backend := range backends {
		checkAllReduce(t, newTestGroup(t, backend, 2), backend, 16<<20, 16)
	}
}

func TestAllGather(t *testing.T) {
	for _, ranks := range []int{1, 2, 3, 8} {
		g := newTestGroup(t, "ring", ranks)
		const L = 37
		out := make([][]float32, ranks)
		errs := runAll(t, ranks, time.Minute, func(r int) error {
			in := make([]float32, L)
			for i := range in {
				in[i] = float32(r*1000 + i)
			}
			out[r] = make([]float32, ranks*L)
			return g.Comm(r).AllGather(context.Background(), in, out[r])
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("AllGather on %d ranks: %v", ranks, err)
		}
		for r := range ranks {
			for j := range ranks {
				for i := range L {
					if got, want := out[r][j*L+i], float32(j*1000+i); got != want {
						t.Fatalf("AllGather on %d ranks: rank %d out[%d] = %g, want %g", ranks, r, j*L+i, got, want)
					}
				}
			}
		}
	}
}

func TestBytesCounted(t *testing.T) {
	const ranks, L = 4, 1024 // L divisible by ranks*16: equal chunks
	S := int64(L * 4)
	tests := []struct {
		backend string
		perRank int64 // bytes each rank sends (and receives)
	}{
		{"ring", 2 * (ranks - 1) * S / ranks},
		{"twoshot", 2 * (ranks - 1) * S / ranks},
		{"oneshot", (ranks - 1) * S},
		{"compressed", 2 * (ranks - 1) * int64(int8WireBytes(L/ranks))},
		{"compressed-bf16", 2 * (ranks - 1) * S / ranks / 2},
		{"tree", -1}, // uneven: only conservation is checked
	}
	for _, tc := range tests {
		g := newTestGroup(t, tc.backend, ranks)
		bufs := RandomInputs(ranks, L, 1)
		if _, err := Measure(context.Background(), g, bufs, 1); err != nil {
			t.Fatalf("%s: %v", tc.backend, err)
		}
		st := g.Stats()
		var ts, tr int64
		for r := range ranks {
			ts += st.BytesSent[r]
			tr += st.BytesRecv[r]
			if tc.perRank >= 0 && (st.BytesSent[r] != tc.perRank || st.BytesRecv[r] != tc.perRank) {
				t.Errorf("%s, %d ranks, %d floats: rank %d sent %d recv %d bytes, want %d each", tc.backend, ranks, L, r, st.BytesSent[r], st.BytesRecv[r], tc.perRank)
			}
		}
		if ts != tr || ts == 0 {
			t.Errorf("%s: total sent %d != total received %d", tc.backend, ts, tr)
		}
		if len(st.Latency) != 1 || st.Latency[0].Count != ranks || st.Latency[0].Bytes != S {
			t.Errorf("%s: latency summaries %+v, want one of %d calls at %d bytes", tc.backend, st.Latency, ranks, S)
		}
	}
}

func TestUnknownBackend(t *testing.T) {
	_, err := NewGroup("carrier-pigeon", 2, GroupOptions{})
	var ub *UnknownBackendError
	if !errors.As(err, &ub) {
		t.Fatalf("NewGroup(carrier-pigeon) = %v, want *UnknownBackendError", err)
	}
	for _, want := range []string{"ring", "twoshot", "auto", "nccl is unavailable: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := NewGroup("nccl", 2, GroupOptions{}); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("NewGroup(nccl) = %v, want an unavailable error with a reason", err)
	}
	if err := CheckBackend("carrier-pigeon"); !errors.As(err, &ub) {
		t.Errorf("CheckBackend(carrier-pigeon) = %v, want *UnknownBackendError", err)
	}
	if err := CheckBackend("nccl"); err == nil || CheckBackend("auto") != nil {
		t.Errorf("CheckBackend(nccl) = %v, CheckBackend(auto) = %v", err, CheckBackend("auto"))
	}
	if g, err := NewGroup("auto", 1, GroupOptions{CacheDir: t.TempDir()}); err != nil || g.AutoTable().Source != "trivial" {
		t.Errorf("NewGroup(auto, 1) = %v: one rank needs no calibration", err)
	}
	if _, err := NewGroup("ring", 0, GroupOptions{}); err == nil {
		t.Errorf("NewGroup(ring, 0) succeeded")
	}
}
