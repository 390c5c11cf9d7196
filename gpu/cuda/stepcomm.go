//go:build cuda

package cuda

import (
	"fmt"
	"time"
	"unsafe"

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
	tabs    []commTabs     // per rank: the tables its kernels read (on its GPU; ranks of one GPU share them)
	host    []pinned       // host: (MaxTokens, dim) float32 per rank, mapped (portable: every GPU's context maps it)
	stamps  []cu.DevicePtr // per rank, on its GPU: (calls, 2) uint64 start and end of each call, ns
	cnts    []cu.DevicePtr // per rank, on its GPU: (calls) uint32 finished blocks, 0 between calls
	hstamps pinned         // (ranks, calls, 2): stamps copied back after each step
	nccl    ncclComms      // nccl across GPUs: one communicator per rank, made again only when the settings or GPUs change (stepnccl.go)
	ncclUse *tp.NCCLUse    // the last SetAllReduce's nccl communicators (nil: another backend)
}

// commTabs are the pointer tables the allreduce kernels of the ranks of
// one GPU read: every rank's partial sums R.part (peer pointers for ranks
// on other GPUs, valid after the P2P self-test enabled peer access) and
// every rank's mapped staging buffer host[r] in this GPU's address space.
type commTabs struct {
	partTab, hostTab cu.DevicePtr // (ranks) pointers
	hostDev          cu.DevicePtr // this rank's staging buffer, as its GPU maps it
	selfTab          cu.DevicePtr // (1) this rank's own partials (nccl sums them in place: stepnccl.go)
}

// newStepComm allocates the comm's buffers for t's ranks (TP > 1), each
// rank's on its GPU; the caller frees them with the target and free.
func (t *Target) newStepComm() (*stepComm, error) {
	R, dim := len(t.ranks), t.cfg.Dim
	c := &stepComm{backend: "oneshot", calls: 2 * t.cfg.Layers}
	parts := make([]uint64, R)
	for r, rk := range t.ranks {
		parts[r] = uint64(rk.part)
		p, err := allocMapped(4 * MaxTokens * dim)
		if err != nil {
			c.free()
			return nil, err
		}
		c.host = append(c.host, p)
	}
	byDev := map[*rankDev]*commTabs{}
	for r, rk := range t.ranks {
		var err error
		alloc := t.allocOn(rk.rd, &err)
		c.stamps = append(c.stamps, alloc(int64(16*c.calls)))
		c.cnts = append(c.cnts, alloc(int64(4*c.calls)))
		tabs := byDev[rk.rd]
		if tabs == nil {
			tabs = &commTabs{partTab: alloc(int64(8 * R)), hostTab: alloc(int64(8 * R))}
			byDev[rk.rd] = tabs
		}
		if err != nil {
			c.free()
			return nil, fmt.Errorf("cuda: allreduce buffers of rank %d: %w", r, err)
		}
		mine := *tabs
		mine.selfTab = alloc(8)
		if err != nil {
			c.free()
			return nil, fmt.Errorf("cuda: allreduce buffers of rank %d: %w", r, err)
		}
		err = t.in(rk.rd, func() error {
			if err := cu.MemcpyHtoD(mine.selfTab, hostPtr([]uint64{uint64(rk.part)}), 8); err != nil {
				return fmt.Errorf("cuda: allreduce self table: %w", err)
			}
			hosts := make([]uint64, R)
			for q, p := range c.host { // the staging buffers in this GPU's address space
				d, err := p.devicePtr()
				if err != nil {
					return err
				}
				hosts[q] = uint64(d)
			}
			mine.hostDev = cu.DevicePtr(hosts[r])
			for _, up := range []struct {
				dst cu.DevicePtr
				src []uint64
			}{{tabs.partTab, parts}, {tabs.hostTab, hosts}} {
				if err := cu.MemcpyHtoD(up.dst, hostPtr(up.src), int64(8*R)); err != nil {
					return fmt.Errorf("cuda: allreduce tables: %w", err)
				}
			}
			if err := cu.MemsetD32(c.stamps[r], 0, int64(4*c.calls)); err != nil {
				return fmt.Errorf("cuda: allreduce stamps: %w", err)
			}
			if err := cu.MemsetD32(c.cnts[r], 0, int64(c.calls)); err != nil {
				return fmt.Errorf("cuda: allreduce counters: %w", err)
			}
			return nil
		})
		if err != nil {
			c.free()
			return nil, fmt.Errorf("cuda: allreduce of rank %d on GPU %d: %w", r, rk.rd.dev.Ordinal, err)
		}
		c.tabs = append(c.tabs, mine)
	}
	var err error
	if c.hstamps, err = allocPinned(16 * c.calls * R); err != nil {
		c.free()
		return nil, err
	}
	return c, nil
}

// copyStampsBack enqueues the copies of every rank's stamps to hstamps
// (after the step, before its synchronize): a home rank's on the target's
// stream, a remote rank's on its own (onRemote).
func (t *Target) copyStampsBack() error {
	c := t.comm
	n := int64(16 * c.calls)
	dst := func(R *rankState) unsafe.Pointer { return unsafe.Add(c.hstamps.p, int64(R.r)*n) }
	for _, R := range t.ranks {
		if R.rd.remote {
			continue
		}
		if err := cu.MemcpyDtoHAsync(dst(R), c.stamps[R.r], n, t.stream); err != nil {
			return fmt.Errorf("cuda: copy rank %d's allreduce times back: %w", R.r, err)
		}
	}
	return t.onRemote(func(R *rankState) error {
		return cu.MemcpyDtoHAsync(dst(R), c.stamps[R.r], n, R.stream)
	})
}

// free releases the comm's host memory (its device buffers are the
// target's).
func (c *stepComm) free() {
	c.nccl.close(driverNCCL{})
	for _, p := range c.host {
		p.free()
	}
	c.host = nil
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
// block counter for rank r (on its GPU).
func (c *stepComm) stamp(call, r, R int) (t0, t1, cnt cu.DevicePtr) {
	return c.stamps[r] + cu.DevicePtr(16*call), c.stamps[r] + cu.DevicePtr(16*call+8), c.cnts[r] + cu.DevicePtr(4*call)
}

// arRank is one rank as the allreduce kernels see it: x, to which the
// sum of all ranks' partials is added; its partials; the tables on its
// GPU; its call's stamps (0: not timed).
type arRank struct {
	r           int
	x, part     cu.DevicePtr
	tabs        commTabs
	t0, t1, cnt cu.DevicePtr
}

// arCall is one rank's kernel in one phase of an allreduce.
type arCall struct {
	name  string
	n     int   // elements its grid covers (arGrid)
	bytes int64 // what it reads (profiling)
	args  []arg
}

// arPhases is how many phases backend b has: the ranks' kernels of a phase
// are joined (every rank's done) before the next phase starts.
func arPhases(b string) (int, error) {
	switch b {
	case "oneshot":
		return 1, nil
	case "twoshot", "host":
		return 2, nil
	}
	return 0, fmt.Errorf("cuda: allreduce backend %q on GPU ranks (have %v)", b, StepBackends)
}

// arKernel is rank rk's kernel in phase ph of backend b over R ranks of n
// floats each: the one implementation of the GPU allreduce backends, run
// inside a step (Target.allReduceAdd: phases joined by the step graph's
// fork and join) and by allreduce-bench (Group: phases joined by event
// barriers), with the ranks sharing one GPU or one per GPU (peers'
// buffers through peer pointers; host through mapped pinned memory).
// Every rank adds the sum in rank order, so all backends give the same
// bits.
func arKernel(b string, ph int, rk arRank, R, n int) arCall {
	switch {
	case b == "oneshot":
		return arCall{"ars_add", n, int64(4 * n * R), []arg{ptr(rk.x), ptr(rk.tabs.partTab), i32(R), i64(n), ptr(rk.t0), ptr(rk.t1), ptr(rk.cnt)}}
	case b == "twoshot" && ph == 0:
		lo, hi := n*rk.r/R, n*(rk.r+1)/R
		return arCall{"ars_reduce", hi - lo, int64(4 * (hi - lo) * R), []arg{ptr(rk.tabs.partTab), i32(R), i32(rk.r), i64(lo), i64(hi), ptr(rk.t0)}}
	case b == "twoshot":
		return arCall{"ars_gather_add", n, int64(4 * n), []arg{ptr(rk.x), ptr(rk.tabs.partTab), i32(R), i64(n), ptr(rk.t1), ptr(rk.cnt)}}
	case b == "host" && ph == 0:
		return arCall{"ars_put", n, int64(4 * n), []arg{ptr(rk.tabs.hostDev), ptr(rk.part), i64(n), ptr(rk.t0)}}
	default: // host, phase 1
		return arCall{"ars_add", n, int64(4 * n * R), []arg{ptr(rk.x), ptr(rk.tabs.hostTab), i32(R), i64(n), 0, ptr(rk.t1), ptr(rk.cnt)}}
	}
}

// allReduceAdd enqueues allreduce number call of the step: every rank adds
// the sum of all ranks' partials (T, dim) to its x.
func (t *Target) allReduceAdd(T, call int) error {
	c, R := t.comm, len(t.ranks)
	n := T * t.cfg.Dim
	b := c.pick(n)
	if b == "nccl" {
		return t.ncclAllReduceAdd(T, call) // stepnccl.go
	}
	phases, err := arPhases(b)
	if err != nil {
		return err
	}
	for ph := range phases {
		err := t.onRanks(func(rk *rankState) error {
			t0, t1, cnt := c.stamp(call, rk.r, R)
			k := arKernel(b, ph, arRank{r: rk.r, x: rk.x, part: rk.part, tabs: c.tabs[rk.r], t0: t0, t1: t1, cnt: cnt}, R, n)
			return t.kernel("allreduce", k.bytes, k.name, arGrid(rk.rd.dev.SMs, k.n), [3]int{256, 1, 1}, k.args...)
		})
		if err != nil {
			return err
		}
	}
	return nil
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
			k := 2 * (r*c.calls + call)
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
