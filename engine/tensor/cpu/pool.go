package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool runs data-parallel kernels on persistent worker goroutines. The
// caller's goroutine is worker 0; Threads-1 workers wait for jobs. Jobs
// from concurrent callers are serialized. Workers exit when the Pool becomes
// unreachable.
//
// Protocol (one job at a time, under Pool.mu): the caller publishes the job
// and increments gen under crew.mu, then broadcasts; each worker, having
// finished job g, waits until gen > g, first by polling briefly (a decode
// step issues a few dozen small jobs per token, and waking a parked
// goroutine costs more than the job), then by sleeping on crew.wake, whose
// condition gen != seen is checked under crew.mu, so no wakeup is lost.
// The caller waits for left == 0 the same way: the worker that brings left
// to zero broadcasts crew.done under crew.mu. Because the next job is
// published only after every worker has reported the current one, a worker
// sees each generation exactly once.
type Pool struct {
	Threads int

	once sync.Once
	crew *crew // nil until the first parallel job with Threads > 1
	mu   sync.Mutex

	mmOnce sync.Once
	mm     *matmul // the matrix product in flight (MatMulFused)
}

// spinBudget is how many polls a waiting worker or caller makes before it
// sleeps (PAUSE is 40-150 cycles: on the order of 0.5-1 ms).
const spinBudget = 20000

// spinWait is poll i of a spin-wait: a PAUSE each time, so that a polling
// thread leaves the core's execution units to the thread doing the work
// when the two share a core (hyperthreads, or vCPUs that share one on the
// host: on such a VM the Gosched-only loop made 2-thread decode slower than
// 1 thread, 3,500 vs 4,200 tok/s on gocoder-14m; with PAUSE 6,900), and every
// 1024 polls a Gosched, so that a goroutine waiting for a P still runs.
func spinWait(i int) {
	spinPause()
	if i&1023 == 1023 {
		runtime.Gosched()
	}
}

// crew is the state the workers share; it does not point back to the Pool,
// so the Pool can be collected and its cleanup can stop the crew.
type crew struct {
	n    int           // workers besides the caller
	gen  atomic.Uint64 // job generation; written under mu
	left atomic.Int32  // workers still running the current job
	next atomic.Int64  // next unclaimed element of the current job

	mu   sync.Mutex
	wake sync.Cond // workers: gen changed
	done sync.Cond // caller: left reached zero

	// The current job, written before gen is incremented.
	quit  bool
	fn    func(lo, hi, worker int)
	size  int // elements
	grain int // elements per claimed chunk
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
	c := &crew{n: p.threads() - 1}
	c.wake.L, c.done.L = &c.mu, &c.mu
	for w := 1; w <= c.n; w++ {
		go c.work(w)
	}
	p.crew = c
	runtime.AddCleanup(p, func(c *crew) {
		c.mu.Lock()
		c.quit = true
		c.gen.Add(1)
		c.mu.Unlock()
		c.wake.Broadcast()
	}, c)
}

// work is worker w's loop: wait for the next generation, run chunks,
// report. Generation 0 is the state before any job.
func (c *crew) work(w int) {
	for seen := uint64(0); ; seen++ {
		for i := 0; i < spinBudget && c.gen.Load() == seen; i++ {
			spinWait(i)
		}
		if c.gen.Load() == seen {
			c.mu.Lock()
			for c.gen.Load() == seen {
				c.wake.Wait()
			}
			c.mu.Unlock()
		}
		if c.quit { // written before gen moved on
			return
		}
		c.runChunks(w)
		if c.left.Add(-1) == 0 {
			c.mu.Lock() // the caller checks left under mu before it sleeps
			c.mu.Unlock()
			c.done.Broadcast()
		}
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
	defer p.finish() // also when fn panics here: the pool stays usable
	c := p.crew
	c.mu.Lock()
	c.fn, c.size, c.grain = fn, n, grain
	c.next.Store(0)
	c.left.Store(int32(c.n))
	c.gen.Add(1)
	c.mu.Unlock()
	c.wake.Broadcast()
	c.runChunks(0)
}

// finish waits until every worker has reported the job in flight, then
// releases the pool. Being deferred on p, it also keeps p reachable (and
// its cleanup from stopping the crew) until the job is over.
func (p *Pool) finish() {
	c := p.crew
	for i := 0; i < spinBudget && c.left.Load() != 0; i++ {
		spinWait(i)
	}
	c.mu.Lock()
	for c.left.Load() != 0 {
		c.done.Wait()
	}
	c.fn = nil
	c.mu.Unlock()
	p.mu.Unlock()
}
