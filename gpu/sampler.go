package gpu

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DefaultInterval is the sampling interval when none is given.
const DefaultInterval = 500 * time.Millisecond

// Options size a Sampler.
type Options struct {
	History int // samples kept per GPU (default 1200: 10 minutes at 500 ms)
}

// GPUSnapshot is a copy of one GPU's state for a view.
type GPUSnapshot struct {
	Info
	Seq    uint64 `json:"seq"`    // samples taken so far; 0 means Latest is empty
	Latest Sample `json:"latest"` // the newest sample
	// Series of the most recent samples, oldest first; NaN where unavailable.
	TX   []float64 `json:"tx"`   // bytes/s
	RX   []float64 `json:"rx"`   // bytes/s
	Util []float64 `json:"util"` // percent
	// ThroughputSource says how TX/RX are measured (SourceCounters or SourceSampled).
	ThroughputSource string `json:"throughput_source"`
}

// Sampler samples every GPU on its own goroutine into ring buffers.
type Sampler struct {
	lib      Library
	err      error // non-nil: NVML unavailable, no GPUs to sample
	gpus     []*gpuState
	topo     *Topology
	interval atomic.Int64 // nanoseconds

	mu      sync.Mutex // guards started, cancel
	started bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// gpuState is one GPU: its reader (owned by its goroutine) and its ring.
type gpuState struct {
	dev *device

	mu     sync.Mutex // guards ring, seq, source
	ring   *Ring[Sample]
	seq    uint64
	source string
}

// Open initializes the system's NVML. It never fails: when NVML cannot be
// used, the Sampler has no GPUs and Err says why.
func Open() *Sampler { return OpenLibrary(nvml.New(), Options{}) }

// OpenLibrary is Open over any Library (go-nvml's mock in tests).
func OpenLibrary(lib Library, opt Options) *Sampler {
	if opt.History <= 0 {
		opt.History = 1200
	}
	s := &Sampler{lib: lib}
	s.interval.Store(int64(DefaultInterval))
	if _, r := guard(func() (struct{}, nvml.Return) { return struct{}{}, lib.Init() }); r != nvml.SUCCESS {
		s.err, s.lib = &UnavailableError{Op: "nvmlInit", Ret: r}, nil
		return s
	}
	n, r := guard(lib.DeviceGetCount)
	if r != nvml.SUCCESS {
		s.err = &UnavailableError{Op: "nvmlDeviceGetCount", Ret: r}
		return s
	}
	devs := make([]nvml.Device, 0, n)
	for i := 0; i < n; i++ {
		d, r := guard(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if r != nvml.SUCCESS || d == nil {
			// Keep indices aligned with nvidia-smi: a GPU we cannot open is
			// the end of what we can show consistently.
			if len(devs) == 0 {
				s.err = &UnavailableError{Op: "nvmlDeviceGetHandleByIndex", Ret: r}
			}
			break
		}
		devs = append(devs, d)
		dv := newDevice(i, d)
		s.gpus = append(s.gpus, &gpuState{dev: dv, ring: NewRing[Sample](opt.History), source: dv.source})
	}
	if len(devs) > 0 {
		s.topo = readTopology(devs)
	}
	return s
}

// Err is why NVML is unavailable, or nil.
func (s *Sampler) Err() error { return s.err }

// Count is the number of GPUs sampled.
func (s *Sampler) Count() int { return len(s.gpus) }

// Topology is the link matrix read at Open; nil without GPUs.
func (s *Sampler) Topology() *Topology { return s.topo }

// Interval is the current sampling interval.
func (s *Sampler) Interval() time.Duration { return time.Duration(s.interval.Load()) }

// SetInterval changes the sampling interval; the goroutines pick it up
// after their current wait. d <= 0 restores DefaultInterval.
func (s *Sampler) SetInterval(d time.Duration) {
	if d <= 0 {
		d = DefaultInterval
	}
	s.interval.Store(int64(d))
}

// Start samples every GPU at interval (<= 0: DefaultInterval), one goroutine
// per GPU, until ctx ends or Close. It returns at once; a second Start is a
// no-op.
func (s *Sampler) Start(ctx context.Context, interval time.Duration) {
	s.SetInterval(interval)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	for _, g := range s.gpus {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.loop(ctx, g)
		}()
	}
}

func (s *Sampler) loop(ctx context.Context, g *gpuState) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.sample(time.Now())
		t.Reset(s.Interval())
	}
}

// SampleOnce samples every GPU once, in parallel, and waits. Use it
// headless without Start; do not mix it with a running Start.
func (s *Sampler) SampleOnce() {
	var wg sync.WaitGroup
	for _, g := range s.gpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.sample(time.Now())
		}()
	}
	wg.Wait()
}

func (g *gpuState) sample(now time.Time) {
	smp := g.dev.read(now)
	g.mu.Lock()
	g.ring.Push(smp)
	g.seq++
	g.source = g.dev.source
	g.mu.Unlock()
}

// Snapshot copies every GPU's state with up to 120 samples of history.
func (s *Sampler) Snapshot() []GPUSnapshot { return s.SnapshotN(120) }

// SnapshotN copies every GPU's state with up to n samples of history.
func (s *Sampler) SnapshotN(n int) []GPUSnapshot {
	out := make([]GPUSnapshot, len(s.gpus))
	for i, g := range s.gpus {
		out[i] = g.snapshot(n)
	}
	return out
}

func (g *gpuState) snapshot(n int) GPUSnapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	snap := GPUSnapshot{Info: g.dev.info, Seq: g.seq, ThroughputSource: g.source}
	snap.Latest, _ = g.ring.Last()
	first := max(0, g.ring.Len()-n)
	k := g.ring.Len() - first
	snap.TX, snap.RX, snap.Util = make([]float64, k), make([]float64, k), make([]float64, k)
	for i := 0; i < k; i++ {
		smp := g.ring.At(first + i)
		snap.TX[i], snap.RX[i], snap.Util[i] = smp.TX.Or(math.NaN()), smp.RX.Or(math.NaN()), smp.Util.Or(math.NaN())
	}
	return snap
}

// Close stops the goroutines, waits for them, and shuts NVML down.
func (s *Sampler) Close() error {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if s.lib == nil {
		return nil
	}
	lib := s.lib
	s.lib = nil
	if _, r := guard(func() (struct{}, nvml.Return) { return struct{}{}, lib.Shutdown() }); r != nvml.SUCCESS {
		return &UnavailableError{Op: "nvmlShutdown", Ret: r}
	}
	return nil
}
