//go:build !headless

package panel

import (
	"fmt"
	"os"

	"rigscope/engine/planner"
	"rigscope/ui"
)

// planner gives the panel's What if tab the planner of a loaded engine:
// this machine's cached measurements and the run logs' acceptance.
func (w *panelWiring) planner(eng ui.Engine) ui.WhatIfPlanner {
	pe, ok := eng.(*panelEngine)
	if !ok {
		return nil
	}
	warn := func(m string) { fmt.Fprintln(os.Stderr, "rigscope: planner:", m) }
	s, err := planner.NewSession(pe.Engine, w.opts.Device, w.opts.CacheDir, warn)
	if err != nil {
		warn(err.Error())
		return nil
	}
	if err := s.ReadRuns(w.opts.LogDir); err != nil {
		warn(err.Error())
	}
	return s
}
