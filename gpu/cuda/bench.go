//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// Bandwidth measures, on n bytes (medians of 10 after a warm-up), a
// device-to-device copy (GB/s counting bytes read plus written) and a
// read-only stream of 16-byte loads, the access pattern of the weights.
func Bandwidth(d *Device, n int64) (copyGBps, readGBps float64, err error) {
	unbind, err := d.Bind()
	if err != nil {
		return 0, 0, err
	}
	defer unbind()
	a, err := cu.MemAlloc(n)
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: copy bandwidth buffer: %w", err)
	}
	defer cu.MemFree(a)
	b, err := cu.MemAlloc(n)
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: copy bandwidth buffer: %w", err)
	}
	defer cu.MemFree(b)
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return 0, 0, err
	}
	defer s.Destroy()
	fill, err := d.fn("fill_f32")
	if err != nil {
		return 0, 0, err
	}
	if err := launch(fill, [3]int{4 * d.SMs, 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(a), i64(int(n/4)), 5, f32(1), f32(0)); err != nil {
		return 0, 0, err
	}
	read, err := d.fn("read_bw")
	if err != nil {
		return 0, 0, err
	}
	e0, _ := cu.MakeEvent(cu.DefaultEvent)
	e1, _ := cu.MakeEvent(cu.DefaultEvent)
	defer cu.DestroyEvent(&e0)
	defer cu.DestroyEvent(&e1)
	median := func(op func() error) (float64, error) {
		var ts []float64
		for i := 0; i < 11; i++ {
			e0.Record(s)
			if err := op(); err != nil {
				return 0, err
			}
			e1.Record(s)
			if err := e1.Synchronize(); err != nil {
				return 0, err
			}
			ms, err := e0.Elapsed(e1)
			if err != nil {
				return 0, err
			}
			if i > 0 {
				ts = append(ts, ms)
			}
		}
		sort.Float64s(ts)
		return ts[len(ts)/2], nil
	}
	ms, err := median(func() error { return cu.MemcpyDtoDAsync(b, a, n, s) })
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: copy: %w", err)
	}
	copyGBps = 2 * float64(n) / (ms * 1e6)
	ms, err = median(func() error {
		return launch(read, [3]int{8 * d.SMs, 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(b), ptr(a), i64(int(n/16)))
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: read bandwidth: %w", err)
	}
	return copyGBps, float64(n) / (ms * 1e6), nil
}

// CheckAllReduce fills every rank's first n floats with fresh random values
// (seeded), poisons oneshot's outputs, runs one allreduce and returns
// max|got-ref|/max|ref| over all ranks, ref being the float64 sum.
func CheckAllReduce(g *Group, n int, seed uint32) (float64, error) {
	d := g.dev
	unbind, err := d.Bind()
	if err != nil {
		return 0, err
	}
	fill, err := d.fn("fill_f32")
	if err != nil {
		unbind()
		return 0, err
	}
	s := g.streams[0]
	for r := 0; r < g.Ranks; r++ {
		if err := launch(fill, [3]int{min(4*d.SMs, (n+255)/256), 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(g.buf[r]), i64(n), uint64(seed+uint32(r)*7919), f32(1), f32(0)); err != nil {
			unbind()
			return 0, err
		}
		if g.Backend == "oneshot" {
			if err := cu.MemsetD32Async(g.out[r], 0x7fc00000, int64(n), s); err != nil {
				unbind()
				return 0, err
			}
		}
	}
	if err := s.Synchronize(); err != nil {
		unbind()
		return 0, err
	}
	ref := make([]float64, n)
	tmp := make([]float32, n)
	for r := 0; r < g.Ranks; r++ {
		if err := cu.MemcpyDtoH(unsafe.Pointer(&tmp[0]), g.buf[r], int64(4*n)); err != nil {
			unbind()
			return 0, err
		}
		for i, v := range tmp {
			ref[i] += float64(v)
		}
	}
	unbind()
	if _, err := g.AllReduce(n); err != nil {
		return 0, err
	}
	unbind, err = d.Bind()
	if err != nil {
		return 0, err
	}
	defer unbind()
	var num, den float64
	for _, v := range ref {
		den = math.Max(den, math.Abs(v))
	}
	for r := 0; r < g.Ranks; r++ {
		if err := cu.MemcpyDtoH(unsafe.Pointer(&tmp[0]), g.Result(r), int64(4*n)); err != nil {
			return 0, err
		}
		for i, v := range tmp {
			e := math.Abs(float64(v) - ref[i])
			if math.IsNaN(float64(v)) {
				return math.NaN(), nil
			}
			num = math.Max(num, e)
		}
	}
	return num / math.Max(den, 1e-30), nil
}

// KernelInfo reports, per kernel name, the registers the driver's compiler
// gave it and the blocks of threads threads that fit on one SM by
// registers alone (65536 per SM, allocated per warp in units of 256): the
// occupancy that decides whether a product runs in one wave.
func KernelInfo(d *Device, names []string, threads []int) (string, error) {
	unbind, err := d.Bind()
	if err != nil {
		return "", err
	}
	defer unbind()
	var b []byte
	for i, n := range names {
		fn, err := d.fn(n)
		if err != nil {
			return "", err
		}
		regs, err := fn.Attribute(cu.NumRegs)
		if err != nil {
			return "", err
		}
		perWarp := (regs*32 + 255) / 256 * 256
		b = fmt.Appendf(b, " %s %d regs %d/SM;", n, regs, 65536/(perWarp*threads[i]/32))
	}
	return string(b), nil
}

// stepTimer measures the device time of each step, from before its
// parameter copy to after its results' copy back (Target.TimeSteps), so
// cuda-bench can tell the GPU's time per step from the host's.
type stepTimer struct {
	ev    [2]cu.Event // the step's start and end
	ms    float64
	steps int
}

// mark records the step's start (i 0) or end (i 1) on st (nil: not timing).
func (s *stepTimer) mark(i int, st cu.Stream) error {
	if s == nil {
		return nil
	}
	return s.ev[i].Record(st)
}

// collect adds the last step's time once it has finished.
func (s *stepTimer) collect() error {
	if s == nil {
		return nil
	}
	ms, err := s.ev[0].Elapsed(s.ev[1])
	s.ms += ms
	s.steps++
	return err
}

// TimeSteps starts timing every step's device time (on) or stops, and
// returns the mean device time of the steps timed since it started.
func (t *Target) TimeSteps(on bool) (float64, error) {
	unbind, err := t.dev.Bind()
	if err != nil {
		return 0, err
	}
	defer unbind()
	var mean float64
	if s := t.timer; s != nil {
		mean = s.ms / float64(max(s.steps, 1)) / 1e3
		cu.DestroyEvent(&s.ev[0])
		cu.DestroyEvent(&s.ev[1])
		t.timer = nil
	}
	if on {
		s := &stepTimer{}
		for i := range s.ev {
			if s.ev[i], err = cu.MakeEvent(cu.DefaultEvent); err != nil {
				return 0, fmt.Errorf("cuda: step timer: %w", err)
			}
		}
		t.timer = s
	}
	return mean, nil
}

// FillRandom runs t's cache up to n positions with tokens drawn from
// rng, MaxTokens a forward: the context a benchmark or a check decodes
// against.
func FillRandom(ctx context.Context, t *Target, n int, rng *rand.Rand) error {
	for t.Len() < n {
		b := make([]int32, min(MaxTokens, n-t.Len()))
		for i := range b {
			b[i] = int32(rng.IntN(t.cfg.Vocab))
		}
		if _, err := t.Forward(ctx, model.Batch{Tokens: b, Logits: model.LogitsNone}); err != nil {
			return err
		}
	}
	return nil
}
