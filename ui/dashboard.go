package ui

import (
	"context"
	"image/color"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
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

// AllReduceCurves implements DashboardSource: Curves when set, else every
// backend's curve from this machine's calibration cache (the table for the
// last run's TP size), re-read when a calibration rewrites it.
func (s SamplerSource) AllReduceCurves() []Curve {
	if s.Curves != nil {
		return s.Curves()
	}
	return machineCalibration.curves(s.Snapshot().TP)
}

// machineCalibration reads the calibration cache tp.LoadOrCalibrate writes.
var machineCalibration = &calibrationReader{}

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
	// The scroll bar draws over the content's right edge: keep the charts
	// (their legends are right-aligned) clear of it.
	gutter := canvas.NewRectangle(color.Transparent)
	gutter.SetMinSize(fyne.NewSize(theme.ScrollBarSize()+theme.Padding(), 0))
	scroll := container.NewVScroll(container.NewBorder(nil, nil, nil, gutter, d.views.root))
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

// RunFinished shows a finished run's own figures: the tokens/s chart ends
// on the run's decode rate and the footer states it, the same number as
// the chat's stats row (a short run may end before the live series has
// more than one early sample). UI goroutine only.
func (d *Dashboard) RunFinished(rec *RunRecord) {
	d.mu.Lock()
	h := &d.hist
	if id := rec.Stats.RunID; id != "" && id != h.runID {
		h.startRun(id, time.Now())
	}
	x := 0.0
	if n := len(rec.Steps); n > 0 {
		x = rec.Steps[n-1].At.Seconds()
	}
	if xs := h.tokX.Values(nil); len(xs) > 0 {
		x = max(x, xs[len(xs)-1])
	}
	h.tokX.Push(x)
	h.tokY.Push(rec.Stats.DecodeTokensPerS)
	h.final = finishedRun{runID: h.runID, tokS: rec.Stats.DecodeTokensPerS, tokens: rec.Stats.GeneratedTokens, stop: rec.Stats.StopReason, set: true}
	d.mu.Unlock()
	d.Refresh()
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
