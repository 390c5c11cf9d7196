package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/metrics"
	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tp"
)

// DeviceTarget builds a target on an accelerator: tp ranks placed on gpus
// (nil: the device's default placement), with a KV cache of ctxLen
// positions. When tp > 1 the target implements deviceAllReduce: the ranks'
// allreduce backend is chosen per run. The CPU target is built in; a -tags
// cuda build registers "cuda" (gpu/cuda).
type DeviceTarget func(src loader.Source, tp int, gpus []int, ctxLen int) (spec.Target, error)

// deviceAllReduce is a device target whose tensor-parallel ranks join
// through an allreduce chosen per run (the weights stay on the device) and
// measured per call into the run's latency histograms and byte counters
// (o.Latency, o.Bytes), as CPU ranks are.
type deviceAllReduce interface {
	SetAllReduce(ctx context.Context, backend string, o tp.GroupOptions) error
	AllReduceTime() time.Duration  // since SetAllReduce
	AllReduceTable() *tp.AutoTable // auto's table, nil for another backend
}

// DeviceHead puts an EAGLE-3 head on an accelerator, with a cache of slots
// positions: its greedy chains then run there (eagle3.ChainRunner).
type DeviceHead func(h *eagle3.Head, slots int) (eagle3.ChainRunner, error)

// Device is what an accelerator build registers.
type Device struct {
	Target DeviceTarget
	Head   DeviceHead // nil: EAGLE-3 heads run on the CPU
	// Backends lists the allreduce backends its ranks can join with.
	Backends func() []tp.BackendInfo
	// MaxContext is the longest context (up to the model's) a target of
	// cfg with weightBytes of weights fits on gpus with tp ranks: the
	// default context on the device when --ctx is not given.
	MaxContext func(cfg model.Config, weightBytes int64, tp int, gpus []int) (int, error)
}

// deviceDefaultCtx is the context a device target gets without --ctx: the
// longest the device fits, up to the model's own, when that is more than
// the CPU's default; else the CPU's default (a target that does not fit
// then fails to load with the numbers).
func deviceDefaultCtx(opts Options, cfg model.Config, dtype string, def int) int {
	d, err := lookupDevice(opts.Device)
	if err != nil || d.MaxContext == nil {
		return def
	}
	w, _ := memoryNeed(cfg, dtype, 0, 1)
	n, err := d.MaxContext(cfg, int64(w), 1, opts.GPUs)
	if err != nil || n <= def {
		return def // the load reports what is wrong with the device
	}
	return n
}

// AllReduceBackends lists the allreduce backends of device's ranks, with
// the reason an unavailable one cannot run (the CPU's when device is "",
// "cpu" or not registered).
func AllReduceBackends(device string) []tp.BackendInfo {
	if d, err := lookupDevice(device); err == nil && d.Backends != nil {
		return d.Backends()
	}
	return tp.Available()
}

var (
	devicesMu sync.Mutex
	devices   = map[string]Device{}
)

// RegisterDevice makes a device selectable with Options.Device. It is called
// from main (build-tagged files), so the engine never imports gpu/.
func RegisterDevice(name string, d Device) {
	devicesMu.Lock()
	defer devicesMu.Unlock()
	devices[name] = d
}

// Devices lists the registered device names plus "cpu".
func Devices() []string {
	devicesMu.Lock()
	defer devicesMu.Unlock()
	names := []string{"cpu"}
	for n := range devices {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

// CheckDevice says whether name ("cpu" or a registered device) can be asked
// for, with the devices this build has when it cannot.
func CheckDevice(name string) error {
	if name == "" || name == "cpu" {
		return nil
	}
	_, err := lookupDevice(name)
	return err
}

// checkBackendName accepts a backend some device of this build offers (the
// CPU's, or a registered device's even when unavailable here: the device
// says why when the run starts) and refuses any other name with the CPU's
// message.
func checkBackendName(name string) error {
	err := tp.CheckBackend(name)
	if err == nil {
		return nil
	}
	devicesMu.Lock()
	defer devicesMu.Unlock()
	for _, d := range devices {
		if d.Backends == nil {
			continue
		}
		for _, b := range d.Backends() {
			if b.Name == name {
				return nil
			}
		}
	}
	return err
}

func lookupDevice(name string) (Device, error) {
	devicesMu.Lock()
	f, ok := devices[name]
	devicesMu.Unlock()
	if !ok {
		return Device{}, fmt.Errorf("device %q is not in this build (devices: %s); GPU devices need a -tags cuda build", name, strings.Join(Devices(), ", "))
	}
	return f, nil
}

// accelTarget is a device target kept between runs of the same TP size and
// placement (its weights live on the device); each run attaches its
// allreduce backend and measurements.
type accelTarget struct {
	spec.Target
	key     string
	comm    deviceAllReduce // nil: one rank, or a device without TP allreduce
	backend string
	bytes   *metrics.RankBytes
	lat     *metrics.LatencySet
}

// ForwardIDs keeps the device's own argmax visible through the wrapper, so
// greedy steps copy back token ids, not logits (spec.IDTarget).
func (a *accelTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	return spec.GreedyIDs(ctx, a.Target, b)
}

// Ahead, EnqueueGreedy and WaitGreedy keep the device's greedy steps
// enqueued ahead visible through the wrapper (spec.AheadTarget), so plain
// greedy decoding keeps the device busy while the host streams tokens.
func (a *accelTarget) Ahead() bool {
	at, ok := a.Target.(spec.AheadTarget)
	return ok && at.Ahead()
}

func (a *accelTarget) EnqueueGreedy(ctx context.Context, next int32, fed bool) error {
	at, ok := a.Target.(spec.AheadTarget)
	if !ok {
		return fmt.Errorf("%s target enqueues no greedy steps ahead", a.key)
	}
	return at.EnqueueGreedy(ctx, next, fed)
}

func (a *accelTarget) WaitGreedy(ctx context.Context) (int32, error) {
	at, ok := a.Target.(spec.AheadTarget)
	if !ok {
		return 0, fmt.Errorf("%s target enqueues no greedy steps ahead", a.key)
	}
	return at.WaitGreedy(ctx)
}

// SampleIDs keeps the device's own sampler visible through the wrapper, so
// plain sampled steps copy back token ids, not logits (spec.SampleTarget);
// a device without one samples on the host over Forward's logits.
func (a *accelTarget) SampleIDs(ctx context.Context, b model.Batch, p sample.Params, u []float64) ([]int32, error) {
	return spec.SampledIDs(ctx, a.Target, b, p, u)
}

func (a *accelTarget) allReduceTime() time.Duration {
	if a.comm == nil {
		return 0
	}
	return a.comm.AllReduceTime()
}

// commStats fills the tensor-parallel parts of st as tpTarget does, from
// the device's own per-call measurements.
func (a *accelTarget) commStats(st *Stats, wall float64) {
	if a.comm == nil {
		return
	}
	st.AllReduceMs = ms(a.comm.AllReduceTime())
	if wall > 0 {
		st.AllReduceShare = st.AllReduceMs / wall
	}
	if a.bytes != nil {
		st.BytesSent, st.BytesRecv = a.bytes.Sent(), a.bytes.Recv()
	}
	var lat []metrics.LatencySummary
	if a.lat != nil {
		lat = a.lat.Summaries()
	}
	st.SetAllReduce(lat, a.backend, a.comm.AllReduceTable())
	if n, ok := a.comm.(interface{ NCCLUse() *tp.NCCLUse }); ok {
		st.NCCL = n.NCCLUse()
	}
}

// accelFeatureTarget is an accelerator target that captures hidden states
// for EAGLE-3 heads (the device implements spec.FeatureTarget).
type accelFeatureTarget struct {
	*accelTarget
	f spec.FeatureTarget
}

func (a accelFeatureTarget) SetCapture(layers []int) { a.f.SetCapture(layers) }
func (a accelFeatureTarget) Captured() [][]float32   { return a.f.Captured() }

// VerifyChain keeps the device's verify of a greedy chain its head left
// there visible through the wrapper (spec.ChainVerifier).
func (a accelFeatureTarget) VerifyChain(ctx context.Context, next int32, p spec.PendingChain) ([]int32, []int32, error) {
	cv, ok := a.Target.(spec.ChainVerifier)
	if !ok {
		return nil, nil, fmt.Errorf("%s target verifies no chains left on its device", a.key)
	}
	return cv.VerifyChain(ctx, next, p)
}

// EnqueueCycle, WaitCycle and DropCycle keep the device's speculative
// cycle visible through the wrapper (spec.CycleVerifier): a device
// without one refuses every chain, and the loop verifies it by
// VerifyChain.
func (a accelFeatureTarget) EnqueueCycle(ctx context.Context, next int32, p spec.PendingChain) (bool, error) {
	cv, ok := a.Target.(spec.CycleVerifier)
	if !ok {
		return false, nil
	}
	return cv.EnqueueCycle(ctx, next, p)
}

func (a accelFeatureTarget) WaitCycle(ctx context.Context) (spec.CycleStep, error) {
	cv, ok := a.Target.(spec.CycleVerifier)
	if !ok {
		return spec.CycleStep{}, fmt.Errorf("%s target keeps no speculative steps on its device", a.key)
	}
	return cv.WaitCycle(ctx)
}

func (a accelFeatureTarget) DropCycle() error {
	if cv, ok := a.Target.(spec.CycleVerifier); ok {
		return cv.DropCycle()
	}
	return nil
}

// deviceTarget builds (or reuses) the accelerator target for cfg and joins
// its ranks with cfg's backend for this run. Weights are uploaded once per
// TP size and placement; swapping the backend between runs keeps them.
func (e *Engine) deviceTarget(ctx context.Context, cfg RunConfig, gopts tp.GroupOptions) (runTarget, error) {
	dev, err := lookupDevice(e.opts.Device)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d/%v", cfg.TP, e.opts.GPUs)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.accel == nil || e.accel.key != key {
		if err := e.loadAccel(dev, cfg, key); err != nil {
			return nil, err
		}
	}
	a := e.accel
	if a.comm == nil {
		if cfg.TP > 1 {
			return nil, fmt.Errorf("%s: its tensor-parallel ranks have no allreduce to choose", e.opts.Device)
		}
		if err := tp.CheckBackend(cfg.AllReduce); err != nil {
			return nil, err // an unknown backend name is an error even at TP=1
		}
		return withFeatures(a), nil
	}
	// The device checks the backend's name at every TP size.
	if gopts.CacheDir == "" {
		gopts.CacheDir = e.opts.CacheDir
	}
	gopts.NCCL = cfg.NCCL
	if err := a.comm.SetAllReduce(ctx, cfg.AllReduce, gopts); err != nil {
		return nil, e.onDevice(err)
	}
	a.backend, a.lat, a.bytes = cfg.AllReduce, gopts.Latency, gopts.Bytes
	return withFeatures(a), nil
}

// loadAccel replaces the device target with one for cfg's TP size and the
// engine's placement (e.mu held).
func (e *Engine) loadAccel(dev Device, cfg RunConfig, key string) error {
	if e.accel != nil {
		if c, ok := e.accel.Target.(interface{ Close() error }); ok {
			c.Close()
		}
		e.accel = nil
	}
	t, err := dev.Target(e.src, cfg.TP, e.opts.GPUs, e.opts.CtxLen)
	if err != nil {
		return e.onDevice(err)
	}
	e.accel = &accelTarget{Target: t, key: key}
	if c, ok := t.(deviceAllReduce); ok {
		e.accel.comm = c
	}
	return nil
}

// rankGPUs is the GPU each of t's ranks runs on, when t is on GPUs.
func rankGPUs(t runTarget) []int {
	if a := accelOf(t); a != nil {
		if g, ok := a.Target.(interface{ RankGPUs() []int }); ok {
			return g.RankGPUs()
		}
	}
	return nil
}

// prefillPath is how t's device runs prompts (PrefillPath), when it says.
func prefillPath(t runTarget) string {
	if a := accelOf(t); a != nil {
		if p, ok := a.Target.(interface{ PrefillPath() string }); ok {
			return p.PrefillPath()
		}
	}
	return ""
}

// accelOf is the device target behind t (nil on CPU ranks).
func accelOf(t runTarget) *accelTarget {
	if f, ok := t.(accelFeatureTarget); ok {
		return f.accelTarget
	}
	a, _ := t.(*accelTarget)
	return a
}

// onDevice names the device in err unless err already starts with it.
func (e *Engine) onDevice(err error) error {
	if strings.HasPrefix(err.Error(), e.opts.Device+":") {
		return err
	}
	return fmt.Errorf("%s: %w", e.opts.Device, err)
}

// withFeatures exposes the device target's hidden-state capture when it has
// one, so the spec loop can feed an EAGLE-3 head.
func withFeatures(a *accelTarget) runTarget {
	if f, ok := a.Target.(spec.FeatureTarget); ok {
		return accelFeatureTarget{a, f}
	}
	return a
}
