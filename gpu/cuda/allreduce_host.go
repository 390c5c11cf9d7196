//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"
)

func (g *Group) syncAll(what string) error {
	for r, s := range g.streams {
		if err := g.use(r); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("cuda: %s: rank %d on GPU %d: %w", what, r, g.devs[r].Ordinal, err)
		}
	}
	return nil
}

// Check fills every rank's first n floats with fresh random values (seeded,
// on the rank's own GPU), poisons the outputs with NaN (a call zeroes
// them and adds the sum: an element no kernel wrote is 0, not the sum), runs one
// allreduce (not recorded into Latency) and returns max|got-ref|/max|ref|
// over all ranks, ref being the float64 sum; NaN when any output is NaN.
// It works for ranks sharing one GPU and for one GPU per rank.
func (g *Group) Check(n int, seed uint32) (float64, error) {
	if n < 1 || n > g.N {
		return 0, fmt.Errorf("cuda: allreduce check of %d floats on buffers of %d", n, g.N)
	}
	ref := make([]float64, n)
	tmp := make([]float32, n)
	err := func() error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		g.cur = nil
		for r, s := range g.streams {
			if err := g.use(r); err != nil {
				return err
			}
			d := g.devs[r]
			fill, err := d.fn("fill_f32")
			if err != nil {
				return err
			}
			if err := launch(fill, [3]int{min(4*d.SMs, (n+255)/256), 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(g.buf[r]), i64(n), uint64(seed+uint32(r)*7919), f32(1), f32(0)); err != nil {
				return fmt.Errorf("cuda: allreduce check fill (rank %d): %w", r, err)
			}
			if g.Backend != "nccl" {
				if err := cu.MemsetD32Async(g.out[r], 0x7fc00000, int64(n), s); err != nil {
					return fmt.Errorf("cuda: allreduce check poison (rank %d): %w", r, err)
				}
			}
		}
		if err := g.syncAll("allreduce check fill"); err != nil {
			return err
		}
		for r := range g.streams {
			if err := g.use(r); err != nil {
				return err
			}
			if err := cu.MemcpyDtoH(unsafe.Pointer(&tmp[0]), g.buf[r], int64(4*n)); err != nil {
				return fmt.Errorf("cuda: allreduce check read input (rank %d): %w", r, err)
			}
			for i, v := range tmp {
				ref[i] += float64(v)
			}
		}
		return nil
	}()
	if err != nil {
		return 0, err
	}
	if _, err := g.allReduce(n); err != nil {
		return 0, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.cur = nil
	var num, den float64
	for _, v := range ref {
		den = math.Max(den, math.Abs(v))
	}
	for r := range g.streams {
		if err := g.use(r); err != nil {
			return 0, err
		}
		if err := cu.MemcpyDtoH(unsafe.Pointer(&tmp[0]), g.Result(r), int64(4*n)); err != nil {
			return 0, fmt.Errorf("cuda: allreduce check read result (rank %d): %w", r, err)
		}
		for i, v := range tmp {
			if math.IsNaN(float64(v)) {
				return math.NaN(), nil
			}
			num = math.Max(num, math.Abs(float64(v)-ref[i]))
		}
	}
	return num / math.Max(den, 1e-30), nil
}
