//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"
)

// Backends lists the GPU allreduce backends.
var Backends = []string{"oneshot", "twoshot", "host", "nccl"}

// Group is ranks that share one GPU (one context, one stream per rank,
// every rank's buffer visible to all) joined by an allreduce backend. Each
// rank owns buf[r] (n floats); oneshot writes the sum to out[r], the other
// backends sum in place into buf[r].
type Group struct {
	dev     *Device
	Backend string
	Ranks   int
	N       int // floats per rank

	streams []cu.Stream
	buf     []cu.DevicePtr // (Ranks) of (N) float32
	out     []cu.DevicePtr // (Ranks) of (N) float32, oneshot's results
	table   cu.DevicePtr   // device array of buf pointers (Ranks)
	evs     []cu.Event     // barrier events, one per rank
	t0, t1  cu.Event
	host    []pinned // host: staging per rank
	hsum    pinned
}

// NewGroup makes a group of ranks on d with n floats per rank. nccl is
// refused with the reason when ranks share one GPU.
func NewGroup(d *Device, backend string, ranks, n int) (*Group, error) {
	switch backend {
	case "oneshot", "twoshot", "host":
	case "nccl":
		if ranks > 1 {
			v, err := NCCLVersion()
			if err != nil {
				return nil, fmt.Errorf("cuda: allreduce nccl unavailable: %w", err)
			}
			return nil, fmt.Errorf("cuda: allreduce nccl unavailable: NCCL %s refuses two ranks on one GPU (ncclInvalidUsage: duplicate GPU); %d ranks would share %s — use oneshot, twoshot or host, or one rank per GPU", v, ranks, d.Name)
		}
	default:
		return nil, fmt.Errorf("cuda: unknown allreduce backend %q (have %v)", backend, Backends)
	}
	if ranks < 1 || n < 1 {
		return nil, fmt.Errorf("cuda: allreduce group of %d ranks x %d floats", ranks, n)
	}
	unbind, err := d.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	g := &Group{dev: d, Backend: backend, Ranks: ranks, N: n}
	fail := func(e error) (*Group, error) { g.closeBound(); return nil, e }
	ptrs := make([]uint64, ranks)
	for r := 0; r < ranks; r++ {
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return fail(fmt.Errorf("cuda: stream for rank %d: %w", r, err))
		}
		g.streams = append(g.streams, s)
		b, err := cu.MemAlloc(int64(4 * n))
		if err != nil {
			return fail(fmt.Errorf("cuda: rank %d buffer of %d floats: %w", r, n, err))
		}
		g.buf = append(g.buf, b)
		ptrs[r] = uint64(b)
		if backend == "oneshot" {
			o, err := cu.MemAlloc(int64(4 * n))
			if err != nil {
				return fail(fmt.Errorf("cuda: rank %d output of %d floats: %w", r, n, err))
			}
			g.out = append(g.out, o)
		}
		e, err := cu.MakeEvent(cu.DisableTiming)
		if err != nil {
			return fail(fmt.Errorf("cuda: event: %w", err))
		}
		g.evs = append(g.evs, e)
		if backend == "host" {
			p, err := allocPinned(4 * n)
			if err != nil {
				return fail(err)
			}
			g.host = append(g.host, p)
		}
	}
	if backend == "host" {
		if g.hsum, err = allocPinned(4 * n); err != nil {
			return fail(err)
		}
	}
	if g.table, err = cu.MemAlloc(int64(8 * ranks)); err != nil {
		return fail(fmt.Errorf("cuda: pointer table: %w", err))
	}
	if err := cu.MemcpyHtoD(g.table, unsafe.Pointer(&ptrs[0]), int64(8*ranks)); err != nil {
		return fail(fmt.Errorf("cuda: pointer table: %w", err))
	}
	if g.t0, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
		return fail(err)
	}
	if g.t1, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
		return fail(err)
	}
	return g, nil
}

// Close frees the group.
func (g *Group) Close() {
	unbind, err := g.dev.Bind()
	if err != nil {
		return
	}
	defer unbind()
	g.closeBound()
}

func (g *Group) closeBound() {
	for _, p := range append(append([]cu.DevicePtr{}, g.buf...), g.out...) {
		cu.MemFree(p)
	}
	if g.table != 0 {
		cu.MemFree(g.table)
	}
	for i := range g.streams {
		g.streams[i].Destroy()
	}
	for i := range g.evs {
		cu.DestroyEvent(&g.evs[i])
	}
	for _, p := range g.host {
		p.free()
	}
	g.hsum.free()
	*g = Group{dev: g.dev}
}

// Buf is rank r's input buffer; Result is where its sum lands.
func (g *Group) Buf(r int) cu.DevicePtr { return g.buf[r] }
func (g *Group) Result(r int) cu.DevicePtr {
	if g.Backend == "oneshot" {
		return g.out[r]
	}
	return g.buf[r]
}

// barrier makes every stream wait for the work queued so far on all others.
func (g *Group) barrier() error {
	for r, s := range g.streams {
		if err := g.evs[r].Record(s); err != nil {
			return fmt.Errorf("cuda: barrier record: %w", err)
		}
	}
	for r, s := range g.streams {
		for q := range g.streams {
			if q != r {
				if err := s.Wait(g.evs[q], 0); err != nil {
					return fmt.Errorf("cuda: barrier wait: %w", err)
				}
			}
		}
	}
	return nil
}

func (g *Group) grid(n int) [3]int { return [3]int{min(max(1, (n+255)/256), 4*g.dev.SMs), 1, 1} }

// AllReduce sums the first n floats of every rank's buffer and returns the
// device time (events on rank 0's stream around barrier-to-barrier) or,
// for host, wall time.
func (g *Group) AllReduce(n int) (time.Duration, error) {
	if n < 1 || n > g.N {
		return 0, fmt.Errorf("cuda: allreduce of %d floats on buffers of %d", n, g.N)
	}
	unbind, err := g.dev.Bind()
	if err != nil {
		return 0, err
	}
	defer unbind()
	if g.Backend == "host" {
		return g.hostAllReduce(n)
	}
	if err := g.t0.Record(g.streams[0]); err != nil {
		return 0, err
	}
	if err := g.barrier(); err != nil {
		return 0, err
	}
	R := g.Ranks
	switch g.Backend {
	case "oneshot":
		fn, err := g.dev.fn("ar_oneshot")
		if err != nil {
			return 0, err
		}
		for r, s := range g.streams {
			if err := launch(fn, g.grid((n+3)/4), [3]int{256, 1, 1}, 0, s, ptr(g.out[r]), ptr(g.table), i32(R), i64(n)); err != nil {
				return 0, err
			}
		}
	case "twoshot":
		red, err := g.dev.fn("ar_reduce_range")
		if err != nil {
			return 0, err
		}
		gat, err := g.dev.fn("ar_gather")
		if err != nil {
			return 0, err
		}
		for r, s := range g.streams {
			lo, hi := n*r/R, n*(r+1)/R
			if hi > lo {
				if err := launch(red, g.grid(hi-lo), [3]int{256, 1, 1}, 0, s, ptr(g.buf[r]), ptr(g.table), i32(R), i64(lo), i64(hi)); err != nil {
					return 0, err
				}
			}
		}
		if err := g.barrier(); err != nil {
			return 0, err
		}
		for r, s := range g.streams {
			if err := launch(gat, g.grid(n), [3]int{256, 1, 1}, 0, s, ptr(g.buf[r]), ptr(g.table), i32(R), i32(r), i64(n)); err != nil {
				return 0, err
			}
		}
	}
	if err := g.barrier(); err != nil {
		return 0, err
	}
	if err := g.t1.Record(g.streams[0]); err != nil {
		return 0, err
	}
	if err := g.t1.Synchronize(); err != nil {
		return 0, fmt.Errorf("cuda: allreduce %s: %w", g.Backend, err)
	}
	ms, err := g.t0.Elapsed(g.t1)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms * 1e6), nil
}

// hostAllReduce stages through pinned host memory: every rank copies its
// buffer down, the host sums in rank order, every rank copies the sum up.
func (g *Group) hostAllReduce(n int) (time.Duration, error) {
	start := time.Now()
	for r, s := range g.streams {
		if err := cu.MemcpyDtoHAsync(g.host[r].p, g.buf[r], int64(4*n), s); err != nil {
			return 0, fmt.Errorf("cuda: host allreduce down: %w", err)
		}
	}
	for _, s := range g.streams {
		if err := s.Synchronize(); err != nil {
			return 0, fmt.Errorf("cuda: host allreduce: %w", err)
		}
	}
	sum := g.hsum.floats()[:n]
	workers := min(runtime.NumCPU(), max(1, n/(1<<16)))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(sum[lo:hi], g.host[0].floats()[lo:hi])
			for r := 1; r < g.Ranks; r++ {
				src := g.host[r].floats()[lo:hi]
				for i := range src {
					sum[lo+i] += src[i]
				}
			}
		}()
	}
	wg.Wait()
	for r, s := range g.streams {
		if err := cu.MemcpyHtoDAsync(g.buf[r], g.hsum.p, int64(4*n), s); err != nil {
			return 0, fmt.Errorf("cuda: host allreduce up: %w", err)
		}
	}
	for _, s := range g.streams {
		if err := s.Synchronize(); err != nil {
			return 0, fmt.Errorf("cuda: host allreduce: %w", err)
		}
	}
	return time.Since(start), nil
}
