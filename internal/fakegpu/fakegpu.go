// Package fakegpu is an accelerator for tests on the CPU, registered with
// the engine as a GPU build registers "cuda": its target is the CPU runner
// (unsharded), and its tensor-parallel ranks join through the GPU step's
// backend names (oneshot, twoshot, host, auto), each call costing a known
// time it spins for, with auto's table the step's own (rules and the time
// per call of every backend at every message size a step makes, float32
// partial sums). The planner and `rigscope plan --device` are tested
// against it: the plumbing a GPU run takes, without a GPU.
package fakegpu

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"rigscope/engine"
	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/tensor/cpu"
	"rigscope/engine/tp"
)

// MaxTokens is the largest step the fake's table covers (the GPU step's).
const MaxTokens = 16

// Backends are the step's backends, auto aside.
var Backends = []string{"oneshot", "twoshot", "host"}

// Device is a registered fake: what the engine asked of it.
type Device struct {
	// CallUs is each backend's time per allreduce call, in microseconds,
	// whatever the message (the fake's forwards spin for it).
	CallUs map[string]float64
	// AutoUpTo is where auto switches from oneshot to twoshot: messages of
	// at most this many bytes take oneshot.
	AutoUpTo int64

	mu       sync.Mutex
	loads    int
	backends []string
	tables   int
}

// Register makes name a device of this build whose ranks cost callUs per
// allreduce call (oneshot, twoshot and host must be there).
func Register(name string, callUs map[string]float64, autoUpTo int64) (*Device, error) {
	for _, b := range Backends {
		if callUs[b] <= 0 {
			return nil, fmt.Errorf("fakegpu: no cost for %s", b)
		}
	}
	d := &Device{CallUs: callUs, AutoUpTo: autoUpTo}
	engine.RegisterDevice(name, engine.Device{Target: d.target, Backends: backendInfo})
	return d, nil
}

// Seen is how many targets were loaded, the backends the ranks were
// joined with in order, and how many auto tables were handed out.
func (d *Device) Seen() (loads int, backends []string, tables int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loads, slices.Clone(d.backends), d.tables
}

func backendInfo() []tp.BackendInfo {
	out := []tp.BackendInfo{}
	for _, b := range append(slices.Clone(Backends), "auto") {
		out = append(out, tp.BackendInfo{Name: b, Available: true, Exact: true})
	}
	return append(out, tp.BackendInfo{Name: "nccl", Reason: "fakegpu: no NCCL here"})
}

// Target is the fake's target: the CPU runner, plus the allreduce calls a
// sharded step makes (two per layer), each spinning for its cost.
type Target struct {
	spec.Target
	d       *Device
	ranks   int
	calls   int // per forward
	dim     int
	backend string
	auto    *tp.AutoTable
	total   time.Duration
}

func (d *Device) target(src loader.Source, tpN int, _ []int, ctxLen int) (spec.Target, error) {
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.loads++
	d.mu.Unlock()
	cfg := src.Config()
	return &Target{Target: spec.NewRunnerTarget(model.NewRunner(w, ctxLen, nil, cpu.NewPool(1))), d: d, ranks: tpN,
		calls: 2 * cfg.Layers, dim: cfg.Dim, backend: "oneshot"}, nil
}

// SetAllReduce joins the ranks with backend; auto gets the step's table.
func (t *Target) SetAllReduce(_ context.Context, backend string, _ tp.GroupOptions) error {
	if backend == "" {
		backend = "auto"
	}
	if backend != "auto" && !slices.Contains(Backends, backend) {
		return fmt.Errorf("fakegpu: allreduce %q refused (have %v and auto)", backend, Backends)
	}
	t.d.mu.Lock()
	t.d.backends = append(t.d.backends, backend)
	t.d.mu.Unlock()
	t.backend, t.auto, t.total = backend, nil, 0
	if backend == "auto" && t.ranks > 1 {
		t.auto = t.table()
	}
	return nil
}

// table is the step's auto table: every backend's cost at every step size,
// oneshot up to AutoUpTo bytes and twoshot above.
func (t *Target) table() *tp.AutoTable {
	t.d.mu.Lock()
	t.d.tables++
	t.d.mu.Unlock()
	a := &tp.AutoTable{Ranks: t.ranks, Source: "measured", MeasuredAt: time.Now()}
	for T := 1; T <= MaxTokens; T++ {
		bytes := int64(4 * T * t.dim)
		for _, b := range Backends {
			a.Points = append(a.Points, tp.CalibPoint{Bytes: bytes, Backend: b, TimeUs: t.d.CallUs[b]})
		}
		b := "twoshot"
		if bytes <= t.d.AutoUpTo {
			b = "oneshot"
		}
		if n := len(a.Rules); n > 0 && a.Rules[n-1].Backend == b {
			a.Rules[n-1].MaxBytes = bytes
		} else {
			a.Rules = append(a.Rules, tp.AutoRule{MaxBytes: bytes, Backend: b})
		}
	}
	return a
}

// Forward runs the CPU runner, then spins through the step's allreduce
// calls (none at TP 1).
func (t *Target) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	out, err := t.Target.Forward(ctx, b)
	if err != nil || t.ranks < 2 {
		return out, err
	}
	backend := t.backend
	if t.auto != nil {
		backend = t.auto.Pick(int64(4 * len(b.Tokens) * t.dim))
	}
	cost := time.Duration(t.d.CallUs[backend] * float64(t.calls) * 1e3)
	for start := time.Now(); time.Since(start) < cost; {
	}
	t.total += cost
	return out, nil
}

// RankGPUs is the GPU of each rank: all share GPU 0, as cuda's ranks do.
func (t *Target) RankGPUs() []int { return make([]int, t.ranks) }

// AllReduceTime is rank 0's time in allreduce since SetAllReduce.
func (t *Target) AllReduceTime() time.Duration { return t.total }

// AllReduceTable is auto's table in use (nil for another backend).
func (t *Target) AllReduceTable() *tp.AutoTable {
	if t.backend != "auto" {
		return nil
	}
	return t.auto
}
