//go:build cuda

package cuda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gorgonia.org/cu"

	"rigscope/engine/metrics"
	"rigscope/engine/tp"
)

// SetAllReduce joins the ranks with backend for the runs that follow: the
// weights stay where they are, and the step graphs (which hold the
// allreduce kernels) are captured again when the choice changed. o.Latency
// and o.Bytes receive every call; auto's table is o.Auto, or this GPU's
// calibration from the cache (per machine, GPU and build), or measured here
// on the target's own kernels (o.Calibrating reports it) and cached.
func (t *Target) SetAllReduce(ctx context.Context, backend string, o tp.GroupOptions) error {
	if backend == "" {
		backend = "auto"
	}
	if err := checkStepBackend(t.place, backend); err != nil {
		return err
	}
	if !o.NCCL.IsZero() && backend != "nccl" {
		return fmt.Errorf("cuda: NCCL settings (%s) apply to the nccl backend; this run's ranks join with %s", o.NCCL, backend)
	}
	c := t.comm
	if c == nil {
		return nil // one rank: no allreduce
	}
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	var use *tp.NCCLUse
	if backend == "nccl" && len(t.ranks) > 1 {
		created, err := t.stepNCCL(o.NCCL) // stepnccl.go: made again only when the settings change
		if err != nil {
			return err
		}
		if created {
			t.dropGraphs() // captured with the old communicators' calls
		}
		v, _ := NCCLVersion()
		use = &tp.NCCLUse{Settings: o.NCCL, Version: v, BuffSize: ncclProc.buffInEffect(), Created: created}
	}
	var auto *tp.AutoTable
	if backend == "auto" {
		if auto = o.Auto; auto == nil {
			if auto, err = t.loadOrCalibrate(ctx, o); err != nil {
				return err
			}
		}
	}
	if backend != c.backend || rulesOf(auto) != rulesOf(c.auto) {
		t.dropGraphs()
	}
	c.backend, c.auto, c.lat, c.bytes, c.total, c.ncclUse = backend, auto, o.Latency, o.Bytes, 0, use
	return nil
}

// AllReduceTime is rank 0's device time in allreduce since SetAllReduce.
func (t *Target) AllReduceTime() time.Duration {
	if t.comm == nil {
		return 0
	}
	return t.comm.total
}

// RankGPUs is the GPU ordinal each rank runs on.
func (t *Target) RankGPUs() []int {
	g := make([]int, len(t.ranks))
	for i, R := range t.ranks {
		g[i] = R.rd.dev.Ordinal
	}
	return g
}

// AllReduceTable is auto's table in use (nil unless the backend is auto).
func (t *Target) AllReduceTable() *tp.AutoTable {
	if t.comm == nil || t.comm.backend != "auto" {
		return nil
	}
	return t.comm.auto
}

// dropGraphs destroys the captured steps (context bound).
func (t *Target) dropGraphs() {
	for k, g := range t.graphs {
		g.destroy()
		delete(t.graphs, k)
	}
}

func (t *Target) cacheKeys() (machine, table string) {
	return fmt.Sprintf("%s gpu=%q sm=%d.%d sms=%d", tp.MachineKey(), t.dev.Name, t.dev.Major, t.dev.Minor, t.dev.SMs),
		fmt.Sprintf("%dx%d%s", len(t.ranks), t.cfg.Dim, t.placeKey())
}

// loadOrCalibrate returns auto's table for this target's ranks and hidden
// size from the cache, or measures it. A cache from another machine, GPU
// or build is measured again (and said so through o.Warn); a corrupt or
// invalid one is moved aside to PATH.bad.
func (t *Target) loadOrCalibrate(ctx context.Context, o tp.GroupOptions) (*tp.AutoTable, error) {
	machine, key := t.cacheKeys()
	path, err := gpuCachePath(o.CacheDir, machine)
	if err != nil {
		return nil, err
	}
	cf, why := readGPUCache(path, machine)
	if cf != nil && cf.Tables[key] != nil {
		a := cf.Tables[key]
		a.Source, a.Note = "cache", "from "+path
		return a, nil
	}
	if why != "" && o.Warn != nil {
		o.Warn(why)
	}
	if cf == nil {
		cf = &gpuCache{Machine: machine, Build: tp.BuildKey(), Tables: map[string]*tp.AutoTable{}}
	}
	if why == "" {
		why = fmt.Sprintf("no GPU allreduce table for %d ranks x hidden %d in %s", len(t.ranks), t.cfg.Dim, path)
	}
	if o.Calibrating != nil {
		o.Calibrating(why, false)
		defer o.Calibrating(why, true)
	}
	a, err := t.calibrate(ctx)
	if err != nil {
		return nil, err
	}
	cf.Tables[key] = a
	a.Note = why + fmt.Sprintf("; calibrated in %.2fs", a.Took)
	if data, err := json.MarshalIndent(cf, "", "  "); err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = metrics.WriteFileAtomic(path, data)
		}
		if err != nil {
			a.Note += "; not cached: " + err.Error()
		} else {
			a.Note += "; saved to " + path
		}
	}
	return a, nil
}

// calibrate times every candidate at every message size a step makes (1
// to MaxTokens tokens of the hidden size), each as a graph of calReps
// calls on the target's own buffers and kernels (what a step runs), and
// builds auto's table from the fastest at each size. Context bound.
func (t *Target) calibrate(ctx context.Context) (*tp.AutoTable, error) {
	start := time.Now()
	var cells []tp.Measured
	for T := 1; T <= MaxTokens; T++ {
		for _, b := range stepCandidates {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			us, err := t.timeAllReduce(b, T)
			if err != nil {
				return nil, fmt.Errorf("cuda: calibrating allreduce %s at %d tokens: %w", b, T, err)
			}
			cells = append(cells, tp.Measured{Backend: b, Bytes: int64(4 * T * t.cfg.Dim), TimeUs: us})
		}
	}
	a, err := tp.BuildAutoTable(len(t.ranks), stepCandidates, 0, cells)
	if err != nil {
		return nil, err
	}
	a.MeasuredAt, a.Took = time.Now(), time.Since(start).Seconds()
	return a, nil
}

const calReps = 32

// timeAllReduce is the device time of one call of backend b at T tokens,
// in microseconds: the median of five launches of a graph of calReps calls.
func (t *Target) timeAllReduce(b string, T int) (float64, error) {
	c := t.comm
	saved, savedAuto, savedLat := c.backend, c.auto, c.lat
	c.backend, c.auto, c.lat = b, nil, nil
	defer func() { c.backend, c.auto, c.lat = saved, savedAuto, savedLat }()
	if err := beginCapture(t.stream); err != nil {
		return 0, err
	}
	var err error
	for range calReps {
		if err = t.allReduceAdd(T, 0); err != nil {
			break
		}
	}
	g, err2 := endCapture(t.stream)
	if err != nil || err2 != nil {
		if g != nil {
			g.destroy()
		}
		return 0, errors.Join(err, err2)
	}
	defer g.destroy()
	e0, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, err
	}
	defer cu.DestroyEvent(&e0)
	e1, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, err
	}
	defer cu.DestroyEvent(&e1)
	var us []float64
	for i := range 6 {
		if err := e0.Record(t.stream); err != nil {
			return 0, err
		}
		if err := g.launch(t.stream); err != nil {
			return 0, err
		}
		if err := e1.Record(t.stream); err != nil {
			return 0, err
		}
		if err := e1.Synchronize(); err != nil {
			return 0, err
		}
		ms, err := e0.Elapsed(e1)
		if err != nil {
			return 0, err
		}
		if i > 0 { // the first launch warms up
			us = append(us, float64(ms)*1e3/calReps)
		}
	}
	slices.Sort(us)
	return us[len(us)/2], nil
}

// placeKey tells tables of ranks on distinct GPUs from those of ranks
// sharing one ("" when they share one, as the tables cached before).
func (t *Target) placeKey() string {
	if !t.place.distinct() {
		return ""
	}
	return "@" + joinInts(t.place.gpus)
}
