package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool runs data-parallel kernels on persistent worker goroutines. The
// caller's goroutine is worker 0; Threads-1 workers wait for work, spinning
// briefly after each job (a decode step issues a few dozen small jobs per
// token, and waking a parked goroutine costs more than the job) and then
// parking. Jobs from concurrent callers are serialized. Workers exit when
// the Pool becomes unreachable.
type Pool struct {
	Threads int

	once sync.Once
	crew *crew // nil until the first parallel job with Threads > 1
	mu   sync.Mutex

	mmOnce sync.Once
	mm     *matmul // the matrix product in flight (MatMulFused)
}

// spinBudget is how many polls a worker makes before it parks (on the order
// of 50-100 µs).
const spinBudget = 20000

// crew is the state the workers share; it does not point back to the Pool,
// so the Pool can be collected and its cleanup can stop the crew.
type crew struct {
	n        int           // workers besides the caller
	gen      atomic.Uint64 // job generation; odd bit never used, just a counter
	quit     atomic.Bool   // stop after the current job
	fn       func(lo, hi, worker int)
	size     int          // elements of the current job
	grain    int          // elements per claimed chunk
	next     atomic.Int64 // next unclaimed element
	left     atomic.Int32 // workers still running the current job
	sleepers []sleeper
}

type sleeper struct {
	parked atomic.Bool
	wake   chan struct{}
	_      [48]byte // keep workers' flags on separate cache lines
}

// NewPool returns a pool with n threads (n <= 0: one per CPU).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	return &Pool{Threads: n}
}

func (p *Pool) threads() int {
	if p == nil || p.Threads < 1 {
		return 1
	}
	return p.Threads
}

func (p *Pool) start() {
	c := &crew{n: p.Threads - 1, sleepers: make([]sleeper, p.Threads-1)}
	for i := range c.sleepers {
		c.sleepers[i].wake = make(chan struct{}, 1)
	}
	for w := 1; w <= c.n; w++ {
		go c.work(w)
	}
	p.crew = c
	runtime.AddCleanup(p, func(c *crew) {
		c.quit.Store(true)
		c.gen.Add(1)
		c.wakeAll()
	}, c)
}

func (c *crew) wakeAll() {
	for i := range c.sleepers {
		s := &c.sleepers[i]
		if s.parked.CompareAndSwap(true, false) {
			s.wake <- struct{}{}
		}
	}
}

// work is worker w's loop: wait for a new generation, run chunks, report.
func (c *crew) work(w int) {
	s := &c.sleepers[w-1]
	seen := c.gen.Load()
	for {
		spins := 0
		for c.gen.Load() == seen {
			spins++
			if spins < spinBudget {
				if spins&63 == 0 {
					runtime.Gosched()
				}
				continue
			}
			s.parked.Store(true)
			if c.gen.Load() != seen {
				if !s.parked.CompareAndSwap(true, false) {
					<-s.wake // a waker already claimed us; take its token
				}
				break
			}
			<-s.wake
			spins = 0
		}
		seen = c.gen.Load()
		if c.quit.Load() {
			return
		}
		c.runChunks(w)
		c.left.Add(-1)
	}
}

func (c *crew) runChunks(w int) {
	for {
		lo := int(c.next.Add(int64(c.grain))) - c.grain
		if lo >= c.size {
			return
		}
		c.fn(lo, min(lo+c.grain, c.size), w)
	}
}

// Parallel splits [0, n) into chunks of grain elements (grain <= 0: about
// four per thread), hands them out to the threads as they become free, and
// calls fn(lo, hi, worker) on each, worker in [0, Threads). It returns when
// all are done. fn must not call Parallel on the same pool.
func (p *Pool) Parallel(n, grain int, fn func(lo, hi, worker int)) {
	th := p.threads()
	if grain <= 0 {
		grain = max(1, (n+4*th-1)/(4*th))
	}
	if th == 1 || n <= grain {
		if n > 0 {
			fn(0, n, 0)
		}
		return
	}
	p.once.Do(p.start)
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.crew
	c.fn, c.size, c.grain = fn, n, grain
	c.next.Store(0)
	c.left.Store(int32(c.n))
	c.gen.Add(1)
	c.wakeAll()
	c.runChunks(0)
	for spins := 0; c.left.Load() != 0; spins++ {
		if spins&63 == 63 {
			runtime.Gosched()
		}
	}
	c.fn = nil
}
