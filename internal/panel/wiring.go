//go:build !headless

package panel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"fyne.io/fyne/v2"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/model"
	"rigscope/gpu"
	"rigscope/ui"
)

// panelEngine adapts *engine.Engine to the panel's ui.Engine: Run and
// Snapshot are the engine's own; Info describes it in the panel's terms.
type panelEngine struct {
	*engine.Engine
	info ui.ModelInfo
}

func (p *panelEngine) Info() ui.ModelInfo { return p.info }

// panelWiring connects the panel to the real engine, the allreduce backends
// and the GPU sampler.
type panelWiring struct {
	opts        engine.Options
	gpuInterval time.Duration

	mu      sync.Mutex
	cfg     model.Config // the loaded target's, for the TP choices
	sampler *gpu.Sampler
	stop    context.CancelFunc // the current dashboard's refresher
	api     *panelAPI          // the OpenAI API server the panel's switch runs
	replay  *metrics.Snapshot  // --replay: shown until the first run here
}

// open loads a model for the panel ("" = the embedded synthetic default).
func (w *panelWiring) open(ctx context.Context, path string, progress func(engine.Progress)) (ui.Engine, error) {
	if path == "" {
		path = engine.DefaultModel
	}
	progress(engine.Progress{What: "loading " + filepath.Base(path)})
	e, err := engine.Open(ctx, path, w.opts)
	if err != nil {
		return nil, err
	}
	if err := w.api.serve(e); err != nil {
		e.Close()
		return nil, err
	}
	info := e.Info()
	w.mu.Lock()
	w.cfg = info.Config
	w.mu.Unlock()
	return &panelEngine{Engine: e, info: ui.ModelInfo{
		Name: info.ServedName(), Format: info.Format, Path: info.Path, Params: info.Params,
		ChatTemplate: info.ChatTemplate, OwnTemplate: info.OwnTemplate, MaxSeq: info.Config.MaxSeq,
	}}, nil
}

// backends lists every allreduce backend with the reason an unavailable one
// cannot run here.
func (w *panelWiring) backends() []ui.Choice {
	var out []ui.Choice
	for _, b := range engine.AllReduceBackends(w.opts.Device) {
		out = append(out, ui.Choice{Name: b.Name, Available: b.Available, Reason: b.Reason})
	}
	return out
}

// tpSizes offers 1, 2, 4, 8 with the reason a size does not fit the loaded
// model's heads or this machine's cores.
func (w *panelWiring) tpSizes() []ui.Choice {
	w.mu.Lock()
	cfg := w.cfg
	w.mu.Unlock()
	var out []ui.Choice
	for _, n := range []int{1, 2, 4, 8} {
		c := ui.Choice{Name: strconv.Itoa(n), Available: true}
		var err error
		if cfg.Heads > 0 { // a model is loaded: its heads and this machine's cores
			err = engine.CheckTP(cfg, n)
		} else if n > 4*runtime.NumCPU() {
			err = fmt.Errorf("more than 4x this machine's %d cores", runtime.NumCPU())
		}
		if err != nil {
			c.Available, c.Reason = false, err.Error()
		}
		out = append(out, c)
	}
	return out
}

// dashboard makes the live charts for a loaded engine and refreshes them
// until the next engine replaces them.
func (w *panelWiring) dashboard(e ui.Engine) fyne.CanvasObject {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
	if w.sampler == nil {
		w.sampler = gpu.Open()
		if w.sampler.Err() == nil {
			w.sampler.Start(context.Background(), w.gpuInterval)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	snap := e.Snapshot
	if r := w.replay; r != nil {
		snap = func() metrics.Snapshot {
			if s := e.Snapshot(); s.RunID != "" {
				return s
			}
			return *r
		}
	}
	d := ui.NewDashboard(ui.SamplerSource{Metrics: snap, Sampler: w.sampler})
	d.Start(ctx)
	return d
}

func (w *panelWiring) close() {
	if err := w.api.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "rigscope:", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
	if w.sampler != nil {
		w.sampler.Close()
	}
}
