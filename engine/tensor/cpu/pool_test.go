package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// watchdog fails the test (with every goroutine's stack) if done is not
// closed within d, instead of letting a deadlocked pool hang the run.
func watchdog(t *testing.T, d time.Duration, what string, body func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		body()
	}()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s: still running after %v; goroutines:\n%s", what, d, buf)
	}
}

// checkCover runs one Parallel(n, grain) on p and checks that every element
// of [0, n) was visited exactly once and worker ids are in range.
func checkCover(p *Pool, n, grain int) error {
	hits := make([]int32, n)
	var bad atomic.Int32
	p.Parallel(n, grain, func(lo, hi, worker int) {
		if worker < 0 || worker >= p.threads() || lo < 0 || hi > n || lo >= hi {
			bad.Store(1)
			return
		}
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&hits[i], 1)
		}
	})
	if bad.Load() != 0 {
		return fmt.Errorf("Parallel(%d, %d) on %d threads: chunk or worker id out of range", n, grain, p.threads())
	}
	for i, h := range hits {
		if h != 1 {
			return fmt.Errorf("Parallel(%d, %d) on %d threads: element %d visited %d times", n, grain, p.threads(), i, h)
		}
	}
	return nil
}

func TestPoolParallelCovers(t *testing.T) {
	for _, th := range []int{1, 2, 3, 5} {
		p := NewPool(th)
		for _, c := range []struct{ n, grain int }{{0, 0}, {1, 0}, {7, 1}, {100, 0}, {100, 3}, {1000, 17}, {5, 100}} {
			if err := checkCover(p, c.n, c.grain); err != nil {
				t.Error(err)
			}
		}
	}
}

// Several pools with more than one thread each, used alternately from one
// goroutine (a target and a draft model) and concurrently from several
// (tensor-parallel ranks), while pools are dropped and the collector runs
// (a dropped pool's workers stop): every job must finish.
func TestPoolStress(t *testing.T) {
	rounds := 300
	if testing.Short() || raceEnabled {
		rounds = 60
	}
	watchdog(t, 2*time.Minute, "pool stress", func() {
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		// Alternating: two pools from one goroutine, new pools now and then.
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, b := NewPool(2), NewPool(3)
			for i := range rounds {
				for _, p := range []*Pool{a, b, a, a, b} {
					if err := checkCover(p, 64+i%50, 0); err != nil {
						errs <- err
						return
					}
				}
				if i%10 == 0 {
					a = NewPool(2) // the old one becomes garbage
					runtime.GC()
				}
			}
		}()
		// Concurrent: ranks with their own pools, plus a pool shared by two
		// goroutines.
		shared := NewPool(2)
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				own := NewPool(2)
				for i := range rounds {
					p := own
					if i%3 == r%3 {
						p = shared
					}
					if err := checkCover(p, 32+i%7, 1); err != nil {
						errs <- err
						return
					}
					if i%25 == r {
						runtime.GC()
					}
				}
			}()
		}
		// Short-lived pools, collected while others run.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds / 4 {
				if err := checkCover(NewPool(2+i%2), 40, 1); err != nil {
					errs <- err
					return
				}
				runtime.GC()
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// A dropped pool's workers exit once the collector finds it.
func TestPoolWorkersStop(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		p := NewPool(4)
		if err := checkCover(p, 100, 1); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n <= before+4 { // some slack for unrelated runtime goroutines
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before making 20 pools of 4 threads, %d after dropping them", before, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A panic in fn on the caller's goroutine propagates, and the pool stays
// usable afterwards (no lock left held, no worker left mid-job).
func TestPoolPanicLeavesPoolUsable(t *testing.T) {
	p := NewPool(3)
	watchdog(t, time.Minute, "pool after a panic", func() {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Parallel: the panic in fn did not propagate")
				}
			}()
			p.Parallel(64, 1, func(lo, hi, worker int) {
				if worker == 0 {
					panic("boom")
				}
			})
		}()
		if err := checkCover(p, 100, 1); err != nil {
			t.Error(err)
		}
	})
}
