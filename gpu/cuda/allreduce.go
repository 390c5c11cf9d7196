//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/metrics"
)

// Backends lists the GPU allreduce backends.
var Backends = []string{"oneshot", "twoshot", "host", "nccl"}

// Group is the ranks of one allreduce joined by a backend, driven by one
// goroutine (AllReduce launches every rank's work). Either every rank has
// its own GPU (rank r on devs[r]; oneshot and twoshot then read peers'
// buffers through peer pointers, after PeerTest passed; nccl uses one
// communicator per GPU), or all ranks share one GPU (one context, one
// stream per rank, every rank's buffer visible to all; nccl refused). Each
// rank owns buf[r] (N floats on its GPU). oneshot, twoshot and host are
// the step's own kernels (arKernel, stepcomm.go: what a forward step runs,
// so what allreduce-bench measures is what the engine runs): each call
// zeroes out[r] and adds the sum into it, its phases fenced by event
// barriers (twoshot reduces its segment of buf in place); nccl sums in
// place into buf[r].
type Group struct {
	dev     *Device   // rank 0's GPU (every rank's when shared)
	devs    []*Device // rank r's GPU
	shared  bool      // several ranks on one GPU
	Backend string
	Ranks   int
	N       int // floats per rank
	// Latency, when set, receives every timed call (once per rank, like the
	// CPU groups of engine/tp) under Backend and the message size in bytes.
	Latency *metrics.LatencySet

	streams []cu.Stream
	buf     []cu.DevicePtr // (Ranks) of (N) float32, buf[r] on devs[r]
	out     []cu.DevicePtr // (Ranks) of (N) float32: the sums (every backend but nccl)
	tabs    []commTabs     // per rank, on its GPU: every rank's buf pointer and mapped host staging (arKernel)
	evs     []cu.Event     // barrier events, one per rank
	t0, t1  cu.Event       // on devs[0]
	host    []pinned       // host: staging per rank, mapped (portable: every GPU maps it)
	comms   []uintptr      // nccl: one communicator per rank
	cur     *Device        // whose context is current on the locked thread
}

// NewGroup makes a group of ranks that all share d, with n floats per
// rank. nccl is refused with the reason when two or more ranks share d; a
// single rank on d is a one-GPU NCCL group.
func NewGroup(d *Device, backend string, ranks, n int) (*Group, error) {
	if ranks < 1 || ranks > 64 {
		return nil, fmt.Errorf("cuda: allreduce group of %d ranks (1 to 64)", ranks)
	}
	devs := make([]*Device, ranks)
	for i := range devs {
		devs[i] = d
	}
	return NewGroupOn(devs, backend, n)
}

// NewGroupOn makes a group with rank r on devs[r] and n floats per rank.
// The devices must all be the same (ranks share one GPU) or all distinct
// (one GPU per rank).
func NewGroupOn(devs []*Device, backend string, n int) (*Group, error) {
	return newGroupOn(devs, backend, n, NCCLSettings{})
}

// NewNCCLGroupOn is an nccl group whose communicators are created with s
// (a new protocol or algorithm takes a new group).
func NewNCCLGroupOn(devs []*Device, n int, s NCCLSettings) (*Group, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	return newGroupOn(devs, "nccl", n, s)
}

func newGroupOn(devs []*Device, backend string, n int, ncclSet NCCLSettings) (*Group, error) {
	R := len(devs)
	if R < 1 || R > 64 || n < 1 {
		return nil, fmt.Errorf("cuda: allreduce group of %d ranks x %d floats", R, n)
	}
	shared, err := placement(devs)
	if err != nil {
		return nil, err
	}
	switch backend {
	case "oneshot", "twoshot":
		if !shared && R > 1 {
			rep, err := PeerTest(devs)
			if err != nil {
				return nil, fmt.Errorf("cuda: allreduce %s across GPUs %v: the P2P self-test could not run: %w; use host or nccl", backend, ordinalsOf(devs), err)
			}
			if !rep.OK() {
				return nil, fmt.Errorf("cuda: allreduce %s across GPUs %v refused: P2P self-test %s; use host or nccl", backend, ordinalsOf(devs), rep.Failure())
			}
		}
	case "host":
	case "nccl":
		v, err := NCCLVersion()
		if err != nil {
			return nil, fmt.Errorf("cuda: allreduce nccl unavailable: %w", err)
		}
		if shared {
			return nil, fmt.Errorf("cuda: allreduce nccl unavailable: NCCL %s refuses two ranks on one GPU (ncclInvalidUsage: duplicate GPU); %d ranks would share GPU %d (%s) — use oneshot, twoshot or host, or one rank per GPU", v, R, devs[0].Ordinal, devs[0].Name)
		}
	default:
		return nil, fmt.Errorf("cuda: unknown allreduce backend %q (have %v)", backend, Backends)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := &Group{dev: devs[0], devs: devs, shared: shared, Backend: backend, Ranks: R, N: n}
	fail := func(e error) (*Group, error) { g.closeLocked(); return nil, e }
	ptrs := make([]uint64, R)
	for r := 0; r < R; r++ {
		if err := g.use(r); err != nil {
			return fail(err)
		}
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return fail(fmt.Errorf("cuda: stream for rank %d: %w", r, err))
		}
		g.streams = append(g.streams, s)
		b, err := cu.MemAlloc(int64(4 * n))
		if err != nil {
			return fail(fmt.Errorf("cuda: rank %d buffer of %d floats on GPU %d: %w", r, n, devs[r].Ordinal, err))
		}
		g.buf = append(g.buf, b)
		ptrs[r] = uint64(b)
		if backend != "nccl" {
			o, err := cu.MemAlloc(int64(4 * n))
			if err != nil {
				return fail(fmt.Errorf("cuda: rank %d output of %d floats on GPU %d: %w", r, n, devs[r].Ordinal, err))
			}
			g.out = append(g.out, o)
		}
		e, err := cu.MakeEvent(cu.DisableTiming)
		if err != nil {
			return fail(fmt.Errorf("cuda: event: %w", err))
		}
		g.evs = append(g.evs, e)
		if backend == "host" {
			p, err := allocMapped(4 * n)
			if err != nil {
				return fail(err)
			}
			g.host = append(g.host, p)
		}
	}
	if backend != "nccl" {
		if err := g.makeTabs(ptrs); err != nil {
			return fail(err)
		}
	}
	if err := g.use(0); err != nil {
		return fail(err)
	}
	if g.t0, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
		return fail(err)
	}
	if g.t1, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
		return fail(err)
	}
	if backend == "nccl" {
		if g.comms, err = ncclCreate(ordinalsOf(devs), ncclSet); err != nil {
			return fail(fmt.Errorf("cuda: allreduce %s: %w", ncclSet, err))
		}
		g.cur = nil // NCCL may have made another context current
	}
	return g, nil
}

// makeTabs gives every rank the tables arKernel reads, on its GPU: every
// rank's buf (bufs) and every rank's host staging as its GPU maps it.
func (g *Group) makeTabs(bufs []uint64) error {
	R := g.Ranks
	for r := range R {
		if err := g.use(r); err != nil {
			return err
		}
		hosts := make([]uint64, R)
		for q, p := range g.host {
			d, err := p.devicePtr()
			if err != nil {
				return err
			}
			hosts[q] = uint64(d)
		}
		var tb commTabs
		tb.hostDev = cu.DevicePtr(hosts[r])
		for _, t := range []*cu.DevicePtr{&tb.partTab, &tb.hostTab} {
			p, err := cu.MemAlloc(int64(8 * R))
			if err != nil {
				return fmt.Errorf("cuda: pointer table on GPU %d: %w", g.devs[r].Ordinal, err)
			}
			*t = p
		}
		g.tabs = append(g.tabs, tb)
		for _, up := range []struct {
			dst cu.DevicePtr
			src []uint64
		}{{tb.partTab, bufs}, {tb.hostTab, hosts}} {
			if err := cu.MemcpyHtoD(up.dst, unsafe.Pointer(&up.src[0]), int64(8*R)); err != nil {
				return fmt.Errorf("cuda: pointer table: %w", err)
			}
		}
	}
	return nil
}

// selfSync: the backend synchronizes the ranks itself (nccl), so a call
// needs no entry barrier.
func (g *Group) selfSync() bool { return g.Backend == "nccl" }

// placement says whether devs all share one GPU (true) or are all
// distinct (false); anything else is an error.
func placement(devs []*Device) (shared bool, err error) {
	seen := map[int]int{}
	for _, d := range devs {
		if d == nil {
			return false, fmt.Errorf("cuda: allreduce group: nil device")
		}
		seen[d.Ordinal]++
	}
	switch {
	case len(devs) == 1 || len(seen) == len(devs):
		return false, nil
	case len(seen) == 1: // one GPU (opened once, or once per rank: the same primary context, each its own kernels)
		return true, nil
	}
	return false, fmt.Errorf("cuda: allreduce group on GPUs %v: ranks must all share one GPU or each have their own", ordinalsOf(devs))
}

// Shared says whether the ranks share one GPU.
func (g *Group) Shared() bool { return g.shared }

// Devices returns rank r's device for every rank.
func (g *Group) Devices() []*Device { return append([]*Device(nil), g.devs...) }

// use makes rank r's context current (the thread must be locked).
func (g *Group) use(r int) error {
	d := g.devs[r]
	if g.cur == d {
		return nil
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		g.cur = nil
		return fmt.Errorf("cuda: make context of GPU %d current: %w", d.Ordinal, err)
	}
	g.cur = d
	return nil
}

// Close frees the group.
func (g *Group) Close() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.cur = nil
	g.closeLocked()
}

func (g *Group) closeLocked() {
	ncclDestroy(g.comms)
	g.cur = nil
	free := func(r int, ps ...cu.DevicePtr) {
		if r < len(g.devs) && g.use(r) == nil {
			for _, p := range ps {
				if p != 0 {
					cu.MemFree(p)
				}
			}
		}
	}
	for r, p := range g.buf {
		free(r, p)
	}
	for r, p := range g.out {
		free(r, p)
	}
	for r, tb := range g.tabs {
		free(r, tb.partTab, tb.hostTab)
	}
	for r := range g.streams {
		if g.use(r) == nil {
			g.streams[r].Destroy()
		}
	}
	for r := range g.evs {
		if g.use(r) == nil {
			cu.DestroyEvent(&g.evs[r])
		}
	}
	if g.use(0) == nil {
		var zero cu.Event
		if g.t0 != zero {
			cu.DestroyEvent(&g.t0)
		}
		if g.t1 != zero {
			cu.DestroyEvent(&g.t1)
		}
	}
	for _, p := range g.host {
		p.free()
	}
	*g = Group{dev: g.dev, devs: g.devs, shared: g.shared, Backend: g.Backend}
}

// Buf is rank r's input buffer; Result is where its sum lands.
func (g *Group) Buf(r int) cu.DevicePtr { return g.buf[r] }
func (g *Group) Result(r int) cu.DevicePtr {
	if g.Backend != "nccl" {
		return g.out[r]
	}
	return g.buf[r]
}

// barrier makes every stream wait for the work queued so far on all others
// (cuStreamWaitEvent takes events of other devices' contexts).
func (g *Group) barrier() error {
	for r, s := range g.streams {
		if err := g.use(r); err != nil {
			return err
		}
		if err := g.evs[r].Record(s); err != nil {
			return fmt.Errorf("cuda: barrier record (rank %d): %w", r, err)
		}
	}
	for r, s := range g.streams {
		if err := g.use(r); err != nil {
			return err
		}
		for q := range g.streams {
			if q != r {
				if err := s.Wait(g.evs[q], 0); err != nil {
					return fmt.Errorf("cuda: barrier wait (rank %d on %d): %w", r, q, err)
				}
			}
		}
	}
	return nil
}

func (g *Group) grid(r, n int) [3]int { return arGrid(g.devs[r].SMs, n) }

// arGrid is the grid of an allreduce kernel over n elements (256 threads a
// block, at most 4 blocks per SM): Group's calls and a step's (stepcomm.go).
func arGrid(sms, n int) [3]int { return [3]int{min(max(1, (n+255)/256), 4*sms), 1, 1} }

// spinNs is how long every rank's GPU spins before a timed call: longer
// than the host takes to enqueue one (a few launches and context switches).
const spinNs = 200_000

// AllReduce sums the first n floats of every rank's buffer and returns the
// device time or, for host, wall time. The ranks are lined up by a barrier
// and each GPU spins for spinNs while the host enqueues the call, so that
// the time (CUDA events on rank 0's stream, from the end of its spin to
// after an exit barrier, so every rank's work is inside) is the devices'
// latency, not the host's launch latency; it includes an entry barrier
// for the backends that do not synchronize the ranks themselves. The call
// is recorded into Latency when set.
func (g *Group) AllReduce(n int) (time.Duration, error) {
	dt, err := g.allReduce(n)
	if err == nil && g.Latency != nil {
		for range g.Ranks {
			g.Latency.Record(g.Backend, int64(4*n), dt)
		}
	}
	return dt, err
}

func (g *Group) allReduce(n int) (time.Duration, error) {
	if n < 1 || n > g.N {
		return 0, fmt.Errorf("cuda: allreduce of %d floats on buffers of %d", n, g.N)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.cur = nil // another goroutine (or NCCL) may have used this thread
	// Line the ranks up, keep them busy while the host enqueues the call,
	// then time it from rank 0's stream.
	if err := g.barrier(); err != nil {
		return 0, err
	}
	for r, s := range g.streams {
		if err := g.use(r); err != nil {
			return 0, err
		}
		if g.Backend != "nccl" { // the kernels add into out: zeroed before the timed part
			if err := cu.MemsetD32Async(g.out[r], 0, int64(n), s); err != nil {
				return 0, fmt.Errorf("cuda: allreduce %s: zero the output (rank %d): %w", g.Backend, r, err)
			}
		}
		spin, err := g.devs[r].fn("spin_ns")
		if err != nil {
			return 0, err
		}
		if err := launch(spin, [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, s, i64(spinNs)); err != nil {
			return 0, fmt.Errorf("cuda: allreduce %s: spin (rank %d): %w", g.Backend, r, err)
		}
	}
	if err := g.use(0); err != nil {
		return 0, err
	}
	if err := g.t0.Record(g.streams[0]); err != nil {
		return 0, fmt.Errorf("cuda: allreduce %s: start event: %w", g.Backend, err)
	}
	if !g.selfSync() {
		if err := g.barrier(); err != nil {
			return 0, err
		}
	}
	if err := g.enqueue(n); err != nil {
		return 0, fmt.Errorf("cuda: allreduce %s of %d floats on %d ranks: %w", g.Backend, n, g.Ranks, err)
	}
	if err := g.barrier(); err != nil {
		return 0, err
	}
	if err := g.use(0); err != nil {
		return 0, err
	}
	if err := g.t1.Record(g.streams[0]); err != nil {
		return 0, fmt.Errorf("cuda: allreduce %s: end event: %w", g.Backend, err)
	}
	if err := g.t1.Synchronize(); err != nil {
		return 0, fmt.Errorf("cuda: allreduce %s: %w", g.Backend, err)
	}
	if !g.shared {
		// A fault on another GPU is reported by its own stream.
		for r, s := range g.streams[1:] {
			if err := g.use(r + 1); err != nil {
				return 0, err
			}
			if err := s.Synchronize(); err != nil {
				return 0, fmt.Errorf("cuda: allreduce %s: rank %d on GPU %d: %w", g.Backend, r+1, g.devs[r+1].Ordinal, err)
			}
		}
		if err := g.use(0); err != nil {
			return 0, err
		}
	}
	ms, err := g.t0.Elapsed(g.t1)
	if err != nil {
		return 0, fmt.Errorf("cuda: allreduce %s: event time: %w", g.Backend, err)
	}
	return time.Duration(float64(ms) * 1e6), nil
}

// enqueue queues the backend's work on every rank's stream: nccl's
// collective, or arKernel's phases (the step's kernels), each phase after
// a barrier of the previous one.
func (g *Group) enqueue(n int) error {
	if g.Backend == "nccl" {
		err := ncclAllReduceAll(g.comms, g.buf, g.streams, n)
		g.cur = nil
		return err
	}
	phases, err := arPhases(g.Backend)
	if err != nil {
		return err
	}
	for ph := range phases {
		if ph > 0 {
			if err := g.barrier(); err != nil {
				return err
			}
		}
		for r, s := range g.streams {
			if err := g.use(r); err != nil {
				return err
			}
			k := arKernel(g.Backend, ph, arRank{r: r, x: g.out[r], part: g.buf[r], tabs: g.tabs[r]}, g.Ranks, n)
			fn, err := g.devs[r].fn(k.name)
			if err != nil {
				return err
			}
			if err := launch(fn, g.grid(r, k.n), [3]int{256, 1, 1}, 0, s, k.args...); err != nil {
				return fmt.Errorf("rank %d %s: %w", r, k.name, err)
			}
		}
	}
	return nil
}
