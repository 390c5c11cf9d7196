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
	eng      *engine.Engine
	timer    Timer // eng (tests replace it)
	device   string
	cacheDir string
	warn     func(string)

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
	wire := 4 // CPU ranks sum float32 buffers
	if device != "" && device != "cpu" {
		wire = 2
	}
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
	s := &Session{eng: eng, timer: eng, device: device, cacheDir: cacheDir, warn: warn, cache: cache, book: &Book{}}
	s.in = Inputs{Shape: ShapeOf(info.Path, info.DType, info.Config, wire), Accept: s.book, Fits: eng.CheckFit,
		AllReduce: &cache.AllReduce, Compute: &cache.Compute, Draft: &cache.Draft, Auto: map[int]*tp.AutoTable{}}
	s.useDeviceAuto()
	return s, nil
}

// useDeviceAuto takes a device's imported auto tables (CPU ranks' come
// from engine/tp's calibration, loadAuto).
func (s *Session) useDeviceAuto() {
	if s.device == "cpu" {
		return
	}
	for _, a := range s.cache.Auto {
		if a.Device == s.device {
			s.in.Auto[a.Table.Ranks] = a.Table
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

// loadAuto reads auto's table for each TP size of g when g has the auto
// backend, measuring it when this machine has none (tp.LoadOrCalibrate).
func (s *Session) loadAuto(ctx context.Context, g Grid) error {
	if !slices.Contains(g.Backends, "auto") || s.device != "cpu" {
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
