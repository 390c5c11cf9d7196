//go:build cuda

package cuda

import (
	"fmt"
	"time"

	"gorgonia.org/cu"

	"rigscope/engine/metrics"
	"rigscope/engine/tp"
)

// stepComm is the allreduce of a Target's tensor-parallel ranks inside its
// decode and verify steps: after each row-parallel product (attention's wo,
// the MLP's down) every rank r adds the sum of all ranks' partial sums to
// its replicated activations R.x, in rank order, so every backend gives
// the bits TP 1 gives. The kernels (kernels/allreduce.cu, ars_*) run on
// the ranks' streams and are captured into the step's graph; each call is
// timed on the device (globaltimer stamps written by the kernels
// themselves, no extra launches) and read back after the step, so the
// latency histograms, byte counters and allreduce time are the engine's
// own, as for CPU ranks.
type stepComm struct {
	backend string        // as asked: oneshot, twoshot, host or auto
	auto    *tp.AutoTable // auto's table (message bytes -> backend)
	lat     *metrics.LatencySet
	bytes   *metrics.RankBytes
	total   time.Duration // rank 0's allreduce time so far

	calls   int            // allreduces per step: 2 per layer
	partTab cu.DevicePtr   // (ranks) pointers to the ranks' partial sums R.part
	hostTab cu.DevicePtr   // (ranks) device pointers of the pinned staging buffers
	host    []pinned       // host: (MaxTokens, dim) float32 per rank, mapped
	hostDev []cu.DevicePtr // host[r] in the device's address space
	stamps  cu.DevicePtr   // (calls, ranks, 2) uint64: start and end of each call, ns
	cnts    cu.DevicePtr   // (calls, ranks) uint32 finished blocks, 0 between calls
	hstamps pinned         // stamps copied back after each step
}

// newStepComm allocates the comm's buffers for t's ranks (TP > 1); the
// caller frees them with the target (t.bufs) and free.
func (t *Target) newStepComm(alloc func(int64) cu.DevicePtr) (*stepComm, error) {
	R, dim := len(t.ranks), t.cfg.Dim
	c := &stepComm{backend: "oneshot", calls: 2 * t.cfg.Layers}
	parts := make([]uint64, R)
	hosts := make([]uint64, R)
	for r, rk := range t.ranks {
		parts[r] = uint64(rk.part)
		p, err := allocMapped(4 * MaxTokens * dim)
		if err != nil {
			c.free()
			return nil, err
		}
		c.host = append(c.host, p)
		d, err := p.devicePtr()
		if err != nil {
			c.free()
			return nil, err
		}
		c.hostDev, hosts[r] = append(c.hostDev, d), uint64(d)
	}
	c.partTab, c.hostTab = alloc(int64(8*R)), alloc(int64(8*R))
	c.stamps = alloc(int64(16 * c.calls * R))
	c.cnts = alloc(int64(4 * c.calls * R))
	var err error
	if c.hstamps, err = allocPinned(16 * c.calls * R); err != nil {
		c.free()
		return nil, err
	}
	for _, up := range []struct {
		dst cu.DevicePtr
		src []uint64
	}{{c.partTab, parts}, {c.hostTab, hosts}} {
		if up.dst == 0 {
			c.free()
			return nil, fmt.Errorf("cuda: allreduce tables for %d ranks: out of device memory", R)
		}
		if err := cu.MemcpyHtoD(up.dst, hostPtr(up.src), int64(8*R)); err != nil {
			c.free()
			return nil, fmt.Errorf("cuda: allreduce tables: %w", err)
		}
	}
	if c.stamps == 0 || c.cnts == 0 {
		c.free()
		return nil, fmt.Errorf("cuda: allreduce stamps for %d calls: out of device memory", c.calls)
	}
	if err := cu.MemsetD32(c.stamps, 0, int64(4*c.calls*R)); err != nil {
		c.free()
		return nil, fmt.Errorf("cuda: allreduce stamps: %w", err)
	}
	if err := cu.MemsetD32(c.cnts, 0, int64(c.calls*R)); err != nil {
		c.free()
		return nil, fmt.Errorf("cuda: allreduce counters: %w", err)
	}
	return c, nil
}

// free releases the comm's host memory (its device buffers are the
// target's).
func (c *stepComm) free() {
	for _, p := range c.host {
		p.free()
	}
	c.host, c.hostDev = nil, nil
	c.hstamps.free()
	c.hstamps = pinned{}
}

// pick is the backend that carries a message of n floats.
func (c *stepComm) pick(n int) string {
	if c.backend == "auto" && c.auto != nil && len(c.auto.Rules) > 0 {
		return c.auto.Pick(int64(4 * n))
	}
	if c.backend == "auto" {
		return "oneshot"
	}
	return c.backend
}

// stamp returns the pointers of call i's start and end stamps and its
// block counter for rank r.
func (c *stepComm) stamp(call, r, R int) (t0, t1, cnt cu.DevicePtr) {
	k := call*R + r
	return c.stamps + cu.DevicePtr(16*k), c.stamps + cu.DevicePtr(16*k+8), c.cnts + cu.DevicePtr(4*k)
}

// allReduceAdd enqueues allreduce number call of the step: every rank adds
// the sum of all ranks' partials (T, dim) to its x.
func (t *Target) allReduceAdd(T, call int) error {
	c, R := t.comm, len(t.ranks)
	n := T * t.cfg.Dim
	b := c.pick(n)
	grid := func(m int) [3]int { return arGrid(t.dev.SMs, m) }
	block := [3]int{256, 1, 1}
	bytes := int64(4 * n * R)
	switch b {
	case "oneshot":
		return t.onRanks(func(rk *rankState) error {
			t0, t1, cnt := c.stamp(call, rk.r, R)
			return t.kernel("allreduce", bytes, "ars_add", grid(n), block,
				ptr(rk.x), ptr(c.partTab), i32(R), i64(n), ptr(t0), ptr(t1), ptr(cnt))
		})
	case "twoshot":
		err := t.onRanks(func(rk *rankState) error {
			t0, _, _ := c.stamp(call, rk.r, R)
			lo, hi := n*rk.r/R, n*(rk.r+1)/R
			return t.kernel("allreduce", int64(4*(hi-lo)*R), "ars_reduce", grid(hi-lo), block,
				ptr(c.partTab), i32(R), i32(rk.r), i64(lo), i64(hi), ptr(t0))
		})
		if err != nil {
			return err
		}
		return t.onRanks(func(rk *rankState) error {
			_, t1, cnt := c.stamp(call, rk.r, R)
			return t.kernel("allreduce", int64(4*n), "ars_gather_add", grid(n), block,
				ptr(rk.x), ptr(c.partTab), i32(R), i64(n), ptr(t1), ptr(cnt))
		})
	case "host":
		err := t.onRanks(func(rk *rankState) error {
			t0, _, _ := c.stamp(call, rk.r, R)
			return t.kernel("allreduce", int64(4*n), "ars_put", grid(n), block,
				ptr(c.hostDev[rk.r]), ptr(rk.part), i64(n), ptr(t0))
		})
		if err != nil {
			return err
		}
		return t.onRanks(func(rk *rankState) error {
			_, t1, cnt := c.stamp(call, rk.r, R)
			return t.kernel("allreduce", bytes, "ars_add", grid(n), block,
				ptr(rk.x), ptr(c.hostTab), i32(R), i64(n), 0, ptr(t1), ptr(cnt))
		})
	}
	return fmt.Errorf("cuda: allreduce backend %q inside a step (have %v)", b, StepBackends)
}

// collect reads the stamps of the last step, of T tokens (copied back into
// hstamps), into the latency histograms, byte counters and the allreduce
// time. Every call of a step carries T*dim floats per rank.
func (c *stepComm) collect(R, T, dim int) {
	st := c.hstamps.uint64s()
	n := T * dim
	b := c.pick(n)
	for call := range c.calls {
		for r := range R {
			k := 2 * (call*R + r)
			t0, t1 := st[k], st[k+1]
			if t0 == 0 || t1 < t0 {
				continue // not run (a measurement knob skipped it)
			}
			dt := time.Duration(t1 - t0)
			if c.lat != nil {
				c.lat.Record(c.backend, int64(4*n), dt)
			}
			if c.bytes != nil && r < c.bytes.Ranks() {
				s, rv := callBytes(b, r, R, n)
				c.bytes.Add(r, s, rv)
			}
			if r == 0 {
				c.total += dt
			}
		}
	}
}
