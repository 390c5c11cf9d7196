package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/tp"
)

// Session is the planner over one loaded engine: the model's shape, this
// machine's cached measurements, and the acceptance of logged runs. Its
// methods may be called from several goroutines.
type Session struct {
	eng   *engine.Engine
	timer Timer // eng (tests replace it)
	// stepTable is the device step's own auto table per TP size
	// (eng.StepAllReduceTable); nil on CPU ranks.
	stepTable func(ctx context.Context, tpSize int) (*tp.AutoTable, error)
	stepRead  map[int]bool // TP sizes whose step table this session read
	device    string
	cacheDir  string
	warn      func(string)

	mu       sync.Mutex
	in       Inputs
	cache    *Cache
	book     *Book
	runsNote string
}

// NewSession reads this machine's planner cache (dir "" = the default
// folder) for eng, whose target runs on device. warn hears about a bad
// cache that was moved aside (nil: ignored).
func NewSession(eng *engine.Engine, device, cacheDir string, warn func(string)) (*Session, error) {
	if warn == nil {
		warn = func(string) {}
	}
	info := eng.Info()
	// The engine's ranks sum float32 values, CPU buffers and a GPU step's
	// partial sums alike (gpu/cuda's step: 4 x tokens x hidden bytes a
	// call, the sizes its auto table is filed under).
	const wire = 4
	if device == "" {
		device = "cpu"
	}
	cache, w, err := LoadCache(cacheDir)
	if err != nil {
		return nil, err
	}
	if w != "" {
		warn(w)
	}
	s := &Session{eng: eng, timer: eng, device: device, cacheDir: cacheDir, warn: warn, cache: cache, book: &Book{}, stepRead: map[int]bool{}}
	if device != "cpu" {
		s.stepTable = func(ctx context.Context, n int) (*tp.AutoTable, error) { return eng.StepAllReduceTable(ctx, n, warn) }
	}
	s.in = Inputs{Shape: ShapeOf(info.Path, info.DType, info.Config, wire), Accept: s.book, Fits: eng.CheckFit,
		AllReduce: &cache.AllReduce, Compute: &cache.Compute, Draft: &cache.Draft, Auto: map[int]*tp.AutoTable{}}
	s.useDeviceAuto()
	return s, nil
}

// useDeviceAuto takes a device's cached auto tables, the step's own
// before an imported allreduce-bench's (CPU ranks' come from engine/tp's
// calibration, loadAuto).
func (s *Session) useDeviceAuto() {
	if s.device == "cpu" {
		return
	}
	for _, step := range []bool{false, true} {
		for _, a := range s.cache.Auto {
			if a.Device == s.device && a.Step == step {
				s.in.Auto[a.Table.Ranks] = a.Table
			}
		}
	}
}

// ImportAllReduce adds an allreduce table measured by allreduce-bench on
// this session's device (ReadAllReduceBench) to the measurements, and
// saves them: a device's backends are timed there, not by the planner.
func (s *Session) ImportAllReduce(bt *BenchTable) error {
	if bt.Device != s.device {
		return fmt.Errorf("planner: the allreduce table is of %s ranks and the planner is predicting %s (give the table of this device: rigscope allreduce-bench --device %s --json)", bt.Device, s.device, s.device)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range bt.Points {
		s.cache.putAllReduce(p)
	}
	for _, a := range bt.Auto {
		s.cache.putAuto(a)
	}
	s.useDeviceAuto()
	s.cache.Note += fmt.Sprintf("; %d allreduce cell(s) of %s ranks imported", len(bt.Points), bt.Device)
	return s.cache.Save()
}

// Shape is the model's shape as the planner sees it.
func (s *Session) Shape() Shape { return s.in.Shape }

// Device is where the target runs.
func (s *Session) Device() string { return s.device }

// Notes says where the measurements and the acceptance come from.
func (s *Session) Notes() (measurements, runs string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache.Note, s.runsNote
}

// ReadRuns adds the run logs in dir (default: the panel's run log folder)
// to the acceptance model.
func (s *Session) ReadRuns(dir string) error {
	if dir == "" {
		d, err := engine.DefaultLogDir()
		if err != nil {
			s.mu.Lock()
			s.runsNote = "no run logs (" + err.Error() + ")"
			s.mu.Unlock()
			return nil
		}
		dir = d
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, notes, err := ReadRunLogs(s.book, dir, s.in.Shape.Name)
	if err != nil {
		return err
	}
	s.runsNote = fmt.Sprintf("%d logged speculative run(s) of this model in %s", n, dir)
	if len(notes) > 0 {
		s.runsNote += fmt.Sprintf(" (%d file(s) skipped: %s)", len(notes), notes[0])
	}
	return nil
}

// AddRun adds a finished run (the panel's, as it ends) to the acceptance
// model.
func (s *Session) AddRun(r metrics.RunRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if AddRecord(s.book, r, s.in.Shape.Name) {
		s.runsNote += " + 1 run this session"
	}
}

// loadAuto reads auto's table for each TP size of g. On a device, for
// every TP size above 1, it is the step's own (loadStepTables), which
// also gives every step backend's time per call. On CPU ranks, only when
// g has the auto backend, measuring it when this machine has none
// (tp.LoadOrCalibrate).
func (s *Session) loadAuto(ctx context.Context, g Grid) error {
	if s.device != "cpu" {
		return s.loadStepTables(ctx, g)
	}
	if !slices.Contains(g.Backends, "auto") {
		return nil
	}
	for _, n := range g.TP {
		if n < 2 || s.in.Auto[n] != nil {
			continue
		}
		t, err := tp.LoadOrCalibrate(ctx, n, tp.GroupOptions{CacheDir: s.cacheDir, Warn: s.warn})
		if err != nil {
			return err
		}
		s.in.Auto[n] = t
	}
	return nil
}

// loadStepTables reads the device step's auto table at each TP size of g
// above 1 (once a session): it resolves auto as the step does, and its
// points, each step backend's time per call at each message size, join
// the allreduce table (replacing an imported allreduce-bench's cells:
// the step's kernels are what a run calls). Both are cached.
func (s *Session) loadStepTables(ctx context.Context, g Grid) error {
	if s.stepTable == nil {
		return nil
	}
	for _, n := range g.TP {
		if n < 2 || s.stepRead[n] {
			continue
		}
		t, err := s.stepTable(ctx, n)
		if err != nil {
			return fmt.Errorf("planner: the %s step's allreduce table at TP %d: %w", s.device, n, err)
		}
		if err := checkAuto(t, n); err != nil {
			return fmt.Errorf("planner: the %s step's allreduce table at TP %d: %w", s.device, n, err)
		}
		points := 0
		for _, p := range t.Points {
			if !slices.Contains(GPUBackends, p.Backend) || p.Bytes <= 0 || !(p.TimeUs > 0) || p.TimeUs > 1e9 {
				continue // not a cell the cache would take back
			}
			s.cache.putAllReduce(AllReducePoint{Device: s.device, Ranks: n, Backend: p.Backend, Bytes: p.Bytes, Us: Exact(p.TimeUs)})
			points++
		}
		s.cache.putAuto(DeviceAuto{Device: s.device, Step: true, Table: t})
		s.in.Auto[n] = t
		s.stepRead[n] = true
		s.cache.Note += fmt.Sprintf("; the %s step's allreduce table at TP %d (%s, %d cell(s))", s.device, n, t.Describe(), points)
	}
	return nil
}

// Plan predicts every configuration of g from the measurements at hand;
// it measures nothing (auto's table too is read or measured by Measure).
func (s *Session) Plan(_ context.Context, g Grid) ([]Prediction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.Device = s.device
	return Plan(s.in, g.Configs()), nil
}

// Measure measures what g's predictions lack (see Measure), saves it to
// the cache and predicts g again. The measuring works on a copy of the
// tables, so Plan answers from the tables at hand meanwhile.
func (s *Session) Measure(ctx context.Context, g Grid, opt Calibration) ([]Prediction, error) {
	s.mu.Lock()
	g.Device = s.device
	if err := s.loadAuto(ctx, g); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	preds := Plan(s.in, g.Configs())
	if len(MissingOf(preds)) == 0 {
		s.mu.Unlock()
		return preds, nil
	}
	work := s.cache.clone()
	shape, auto := s.in.Shape, maps.Clone(s.in.Auto)
	s.mu.Unlock()
	if err := Measure(ctx, work, s.timer, shape, auto, preds, opt); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.cache = *work // s.in's tables point into s.cache
	s.cache.Note = "measured now, saved to " + s.cache.Path
	return Plan(s.in, g.Configs()), nil
}

// Forget drops the measurements Measure takes (not the file, nor an
// imported allreduce table), so the next Measure takes every one afresh:
// the check does so each round, so its measurements see the machine's
// load as the runs beside them do.
func (s *Session) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.Compute, s.cache.Draft = ComputeTable{}, DraftTable{}
}
