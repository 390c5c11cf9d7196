package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
)

// DeviceTarget builds a target on an accelerator: tp ranks joined by the
// named allreduce backend, with a KV cache of ctxLen positions. The CPU
// target is built in; a -tags cuda build registers "cuda" (gpu/cuda).
type DeviceTarget func(src loader.Source, tp int, allreduce string, ctxLen int) (spec.Target, error)

// DeviceHead puts an EAGLE-3 head on an accelerator, with a cache of slots
// positions: its greedy chains then run there (eagle3.ChainRunner).
type DeviceHead func(h *eagle3.Head, slots int) (eagle3.ChainRunner, error)

// Device is what an accelerator build registers.
type Device struct {
	Target DeviceTarget
	Head   DeviceHead // nil: EAGLE-3 heads run on the CPU
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
// backend (its weights live on the device).
type accelTarget struct {
	spec.Target
	key string
}

// ForwardIDs keeps the device's own argmax visible through the wrapper, so
// greedy steps copy back token ids, not logits (spec.IDTarget).
func (a *accelTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	return spec.GreedyIDs(ctx, a.Target, b)
}

func (a *accelTarget) allReduceTime() time.Duration      { return 0 }
func (a *accelTarget) commStats(st *Stats, wall float64) {}

// accelFeatureTarget is an accelerator target that captures hidden states
// for EAGLE-3 heads (the device implements spec.FeatureTarget).
type accelFeatureTarget struct {
	*accelTarget
	f spec.FeatureTarget
}

func (a accelFeatureTarget) SetCapture(layers []int) { a.f.SetCapture(layers) }
func (a accelFeatureTarget) Captured() [][]float32   { return a.f.Captured() }

// deviceTarget builds (or reuses) the accelerator target for cfg. Weights
// are uploaded once per (TP, backend); a new combination uploads again.
func (e *Engine) deviceTarget(cfg RunConfig) (runTarget, error) {
	dev, err := lookupDevice(e.opts.Device)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d/%s", cfg.TP, cfg.AllReduce)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.accel != nil && e.accel.key == key {
		return withFeatures(e.accel), nil
	}
	if e.accel != nil {
		if c, ok := e.accel.Target.(interface{ Close() error }); ok {
			c.Close()
		}
		e.accel = nil
	}
	t, err := dev.Target(e.src, cfg.TP, cfg.AllReduce, e.opts.CtxLen)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.opts.Device, err)
	}
	e.accel = &accelTarget{Target: t, key: key}
	return withFeatures(e.accel), nil
}

// withFeatures exposes the device target's hidden-state capture when it has
// one, so the spec loop can feed an EAGLE-3 head.
func withFeatures(a *accelTarget) runTarget {
	if f, ok := a.Target.(spec.FeatureTarget); ok {
		return accelFeatureTarget{a, f}
	}
	return a
}
