package ui

import (
	"context"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine/metrics"
	"rigscope/gpu"
)

// DashboardSource is what the telemetry dashboard reads. Every method
// returns a copy and must be cheap and non-blocking (a lock and a copy);
// the dashboard calls them off the UI goroutine about 15 times a second.
type DashboardSource interface {
	Snapshot() metrics.Snapshot
	GPUs() []gpu.GPUSnapshot  // nil without GPUs
	GPUError() error          // why there are no GPUs (NVML unavailable), or nil
	Topology() *gpu.Topology  // nil without GPUs
	AllReduceCurves() []Curve // from the last calibration or bench; may be nil
}

// SamplerSource is a DashboardSource over the engine's snapshot function
// and a gpu.Sampler (either may be nil).
type SamplerSource struct {
	Metrics func() metrics.Snapshot
	Sampler *gpu.Sampler
	Curves  func() []Curve
}

// Snapshot implements DashboardSource.
func (s SamplerSource) Snapshot() metrics.Snapshot {
	if s.Metrics == nil {
		return metrics.Snapshot{}
	}
	return s.Metrics()
}

// GPUs implements DashboardSource.
func (s SamplerSource) GPUs() []gpu.GPUSnapshot {
	if s.Sampler == nil {
		return nil
	}
	return s.Sampler.Snapshot()
}

// GPUError implements DashboardSource.
func (s SamplerSource) GPUError() error {
	if s.Sampler == nil {
		return nil
	}
	return s.Sampler.Err()
}

// Topology implements DashboardSource.
func (s SamplerSource) Topology() *gpu.Topology {
	if s.Sampler == nil {
		return nil
	}
	return s.Sampler.Topology()
}

// AllReduceCurves implements DashboardSource.
func (s SamplerSource) AllReduceCurves() []Curve {
	if s.Curves == nil {
		return nil
	}
	return s.Curves()
}

// RefreshRate is how often Start refreshes the dashboard.
const RefreshRate = 15 // Hz

// historyLen bounds every time series the dashboard keeps (ring buffers):
// 20 minutes at 1 point per second of run time.
const historyLen = 1200

// Dashboard is the live telemetry panel: GPU cards (or engine-counted
// per-rank traffic without GPUs), allreduce latency, acceptance, step time
// and the topology matrix. Embed it anywhere as a widget.
type Dashboard struct {
	widget.BaseWidget
	src DashboardSource

	mu    sync.Mutex // guards hist (collect runs off the UI goroutine)
	hist  history
	views *views // touched only on the UI goroutine
	root  fyne.CanvasObject
}

// NewDashboard builds the dashboard over src. Call Refresh (on the UI
// goroutine) or Start to fill it.
func NewDashboard(src DashboardSource) *Dashboard {
	d := &Dashboard{src: src, hist: newHistory()}
	d.views = newViews()
	scroll := container.NewVScroll(d.views.root)
	for _, l := range d.views.layouts {
		l.relayout = scroll.Refresh
	}
	d.root = scroll
	d.ExtendBaseWidget(d)
	return d
}

// CreateRenderer implements fyne.Widget.
func (d *Dashboard) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(d.root)
}

// Refresh reads the source and redraws; call it on the UI goroutine.
func (d *Dashboard) Refresh() {
	f := d.collect(time.Now())
	d.views.apply(f)
	d.BaseWidget.Refresh()
}

// Start refreshes at RefreshRate until ctx ends: reading the source and
// aggregating on its own goroutine, applying on the UI goroutine through
// fyne.Do. Frames where nothing changed are skipped.
func (d *Dashboard) Start(ctx context.Context) {
	go func() {
		t := time.NewTicker(time.Second / RefreshRate)
		defer t.Stop()
		var last frameKey
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				f := d.collect(now)
				if f.key == last {
					continue
				}
				last = f.key
				fyne.Do(func() { d.views.apply(f) })
			}
		}
	}()
}
