package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"rigscope/engine/tp"
)

// StepAllReduceTable is the auto table the device's tensor-parallel step
// uses at TP tpSize, as a run with --allreduce auto gets it: the device
// reads it from its own calibration cache (per machine, GPU and build) or
// measures it with the step's own allreduce kernels and caches it. Its
// Points are each step backend's time per call at every message size a
// step makes (the step's own wire: float32 partial sums). warn hears
// about a cache that was redone (nil: ignored). CPU ranks have no step
// table (their auto table is engine/tp's calibration, tp.LoadOrCalibrate).
// It holds the engine as a run does; the table returned is a copy.
func (e *Engine) StepAllReduceTable(ctx context.Context, tpSize int, warn func(string)) (*tp.AutoTable, error) {
	e.run.Lock()
	defer e.run.Unlock()
	if e.device() == "cpu" {
		return nil, errors.New("step allreduce table: CPU ranks' auto table is engine/tp's calibration, not a device step's")
	}
	if tpSize < 2 {
		return nil, fmt.Errorf("step allreduce table: TP %d makes no allreduce; give 2 or more ranks", tpSize)
	}
	if err := CheckTP(e.cfg, tpSize); err != nil {
		return nil, err
	}
	cfg := RunConfig{TP: tpSize, AllReduce: "auto"}
	t, err := e.prepare(ctx, &cfg, tp.GroupOptions{Warn: warn})
	if err != nil {
		return nil, err
	}
	a := accelOf(t)
	if a == nil || a.comm == nil {
		return nil, fmt.Errorf("%s: its tensor-parallel ranks have no allreduce table", e.device())
	}
	tab := a.comm.AllReduceTable()
	if tab == nil || len(tab.Rules) == 0 {
		return nil, fmt.Errorf("%s: the step at TP %d joined with auto but reports no table", e.device(), tpSize)
	}
	c := *tab
	c.Rules, c.Points = slices.Clone(tab.Rules), slices.Clone(tab.Points)
	return &c, nil
}
