package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/planner"
	"rigscope/ui/widgets"
)

// WhatIfPlanner is what the What if view needs from the engine's planner
// (engine/planner.Session; main wires it per loaded model).
type WhatIfPlanner interface {
	Plan(ctx context.Context, g planner.Grid) ([]planner.Prediction, error)
	Measure(ctx context.Context, g planner.Grid, opt planner.Calibration) ([]planner.Prediction, error)
	AddRun(r metrics.RunRecord)
	Notes() (measurements, runs string)
}

// WhatIfView is the "What if" tab: for each TP size x backend x drafter x
// k, the predicted tokens/s with its range and whether speculation pays;
// the current configuration marked; the measured rate of the session's
// runs beside the prediction; Apply sets the run controls to a row.
type WhatIfView struct {
	Root fyne.CanvasObject

	// OnApply receives the configuration of a row's Apply button.
	OnApply func(planner.Config)

	post     func(func())
	planner  WhatIfPlanner
	grid     planner.Grid
	current  Settings
	preds    []planner.Prediction
	measured map[string]float64 // configKey -> the last run's decode tok/s
	busy     bool

	notes   *widget.Label
	status  *widget.Label
	measure *widget.Button
	rows    *fyne.Container
	chart   *widgets.BarHistogram
}

// whatIfColumns are the table's columns.
var whatIfColumns = []string{"", "TP", "backend", "drafter", "k", "predicted tok/s", "range", "speculation", "break-even", "measured", ""}

// NewWhatIfView builds the view; post runs functions on the UI goroutine.
func NewWhatIfView(post func(func())) *WhatIfView {
	v := &WhatIfView{post: post, measured: map[string]float64{}}
	v.notes = widget.NewLabel("The planner appears once a model is loaded.")
	v.notes.Wrapping = fyne.TextWrapWord
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	v.measure = widget.NewButton("Measure what is missing", v.Measure)
	v.measure.Disable()
	v.rows = container.NewGridWithColumns(len(whatIfColumns))
	v.chart = widgets.NewBarHistogram("Predicted tok/s at the controls' drafter and k", "TP size", widgets.Plain)
	v.chart.Empty = "no predictions yet"
	top := container.NewVBox(v.notes, container.NewHBox(v.measure, widget.NewButton("Predict again", v.Predict)), v.status)
	v.Root = container.NewBorder(top, nil, nil, nil, container.NewVSplit(v.chart, container.NewVScroll(v.rows)))
	return v
}

// SetPlanner shows the planner of a newly loaded model over grid.
func (v *WhatIfView) SetPlanner(p WhatIfPlanner, grid planner.Grid) {
	v.planner, v.grid = p, grid
	v.measured = map[string]float64{}
	v.Predict()
}

// SetCurrent marks the row of the run controls' configuration.
func (v *WhatIfView) SetCurrent(s Settings) {
	v.current = s
	v.render()
}

// Predict predicts the grid from the measurements at hand.
func (v *WhatIfView) Predict() {
	if v.planner == nil {
		return
	}
	preds, err := v.planner.Plan(context.Background(), v.grid)
	if err != nil {
		v.status.SetText("Planner: " + err.Error())
		return
	}
	v.preds = preds
	v.render()
}

// Measure runs the calibration the predictions lack, in the background
// (the engine is held as a run holds it), then predicts again.
func (v *WhatIfView) Measure() {
	if v.planner == nil || v.busy {
		return
	}
	v.busy = true
	v.measure.Disable()
	v.status.SetText("Measuring this machine (the forward per TP size and backend, draft times)…")
	p, g := v.planner, v.grid
	go func() {
		preds, err := p.Measure(context.Background(), g, planner.Calibration{Progress: func(what string) {
			v.post(func() { v.status.SetText("Measuring " + what + "…") })
		}})
		v.post(func() {
			v.busy = false
			if err != nil {
				v.status.SetText("Measurement failed: " + err.Error())
			} else {
				v.status.SetText("Measured.")
				v.preds = preds
			}
			v.render()
		})
	}()
}

// RunDone records a finished run: its decode rate goes beside the
// prediction of its configuration and its steps into the acceptance model.
func (v *WhatIfView) RunDone(rec *RunRecord) {
	if rec == nil || rec.Err != "" {
		return
	}
	v.measured[configKey(runPlanConfig(rec.Config))] = rec.Stats.DecodeTokensPerS
	if v.planner != nil {
		cfg, _ := json.Marshal(rec.Config)
		v.planner.AddRun(metrics.RunRecord{Config: cfg, Steps: rec.Steps, Complete: true})
		v.Predict()
		return
	}
	v.render()
}

// runPlanConfig is a run's configuration in the planner's terms.
func runPlanConfig(c engine.RunConfig) planner.Config {
	pc := planner.Config{TP: max(c.TP, 1), Backend: c.AllReduce, Drafter: c.Drafter.Kind, K: c.Drafter.K, Tree: c.Drafter.Tree}
	if pc.Drafter == "" {
		pc.Drafter = DrafterNone
	}
	if pc.K == 0 {
		pc.K = engine.DefaultK
	}
	return pc
}

// settingsConfig is the run controls' configuration in the planner's terms.
func settingsConfig(s Settings) planner.Config {
	return planner.Config{TP: s.TP, Backend: s.Backend, Drafter: s.Drafter, K: s.K, Tree: s.Tree}
}

// configKey names a configuration for matching rows, runs and controls.
func configKey(c planner.Config) string {
	backend := c.Backend
	if c.TP <= 1 {
		backend = ""
	}
	if !c.Speculative() {
		return fmt.Sprintf("%d/%s/none", c.TP, backend)
	}
	return fmt.Sprintf("%d/%s/%s/%d/%d", c.TP, backend, c.Drafter, c.K, c.Tree)
}

// Rows is the table as text, a row per configuration (tests, exports).
func (v *WhatIfView) Rows() [][]string {
	var out [][]string
	cur := configKey(settingsConfig(v.current))
	for _, p := range v.preds {
		out = append(out, whatIfRow(p, cur, v.measured))
	}
	return out
}

// whatIfRow is one row's cells (the Apply column aside).
func whatIfRow(p planner.Prediction, current string, measured map[string]float64) []string {
	c := p.Config
	key := configKey(c)
	mark, backend, k := "", c.Backend, "—"
	if key == current {
		mark = "▶ current"
	}
	if c.TP <= 1 {
		backend = "—"
	}
	if c.Speculative() {
		k = strconv.Itoa(c.K)
		if c.Tree > 0 {
			k += fmt.Sprintf(" ×%d", c.Tree)
		}
	}
	row := []string{mark, strconv.Itoa(c.TP), backend, c.Drafter, k}
	switch {
	case p.Unfit != "":
		row = append(row, "does not fit", p.Unfit, "", "")
	case !p.OK():
		row = append(row, "not measured", p.Missing[0].String(), "", "")
	default:
		be := "—"
		if c.Speculative() {
			be = fmt.Sprintf("%.2f", p.BreakEven.V)
		}
		row = append(row, fmt.Sprintf("%.1f", p.TokS.V), fmt.Sprintf("%.1f–%.1f", p.TokS.Lo, p.TokS.Hi), planner.VerdictWords(p.Verdict), be)
	}
	m := "—"
	if t, ok := measured[key]; ok {
		m = fmt.Sprintf("%.1f", t)
	}
	return append(row, m)
}

func (v *WhatIfView) render() {
	if v.planner != nil {
		m, r := v.planner.Notes()
		v.notes.SetText("Predicted from this machine's measurements (" + m + ") and the acceptance of logged runs (" + r + "). Ranges combine each measurement's spread.")
	}
	missing := len(planner.MissingOf(v.preds)) > 0
	if v.planner != nil && missing && !v.busy {
		v.measure.Enable()
	} else {
		v.measure.Disable()
	}
	v.rows.RemoveAll()
	for _, h := range whatIfColumns {
		l := widget.NewLabel(h)
		l.TextStyle.Bold = true
		v.rows.Add(l)
	}
	cur := configKey(settingsConfig(v.current))
	for _, p := range v.preds {
		for i, cell := range whatIfRow(p, cur, v.measured) {
			l := widget.NewLabel(cell)
			l.Truncation = fyne.TextTruncateEllipsis
			if i == 0 && cell != "" {
				l.Importance = widget.HighImportance
			}
			v.rows.Add(l)
		}
		cfg := p.Config
		apply := widget.NewButton("Apply", func() {
			if v.OnApply != nil {
				v.OnApply(cfg)
			}
		})
		if p.Unfit != "" {
			apply.Disable()
		}
		v.rows.Add(apply)
	}
	v.rows.Refresh()
	v.setChart()
}

// setChart draws, per TP size, each backend's predicted tok/s at the
// controls' drafter, k and shape, with the current configuration's as the
// reference line.
func (v *WhatIfView) setChart() {
	cur := settingsConfig(v.current)
	v.chart.Ref, v.chart.RefLabel = 0, ""
	var tps []int
	backends := map[string]map[int]float64{}
	var names []string
	for _, p := range v.preds {
		c := p.Config
		if !p.OK() || c.Drafter != cur.Drafter || (c.Speculative() && (c.K != cur.K || c.Tree != cur.Tree)) {
			continue
		}
		if !containsInt(tps, c.TP) {
			tps = append(tps, c.TP)
		}
		for _, b := range v.grid.Backends {
			if c.TP > 1 && b != c.Backend {
				continue
			}
			if backends[b] == nil {
				backends[b] = map[int]float64{}
				names = append(names, b)
			}
			backends[b][c.TP] = p.TokS.V
		}
		if configKey(c) == configKey(cur) {
			v.chart.Ref, v.chart.RefLabel = p.TokS.V, "current"
		}
	}
	cats := make([]string, len(tps))
	for i, n := range tps {
		cats[i] = strconv.Itoa(n)
	}
	var series []widgets.BarSeries
	for i, b := range names {
		vals := make([]float64, len(tps))
		for j, n := range tps {
			vals[j] = backends[b][n]
		}
		series = append(series, widgets.BarSeries{Name: b, Values: vals, Color: widgets.SeriesColor(i)})
	}
	v.chart.Set(cats, series)
	v.chart.Refresh()
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ApplyPlan sets the run controls to a planner configuration: TP size,
// backend (at TP > 1), drafter, k and shape. A drafter that needs a file
// the controls lack is left as it is, with the reason shown.
func (c *ControlsView) ApplyPlan(cfg planner.Config) {
	c.tp.SetSelected(strconv.Itoa(cfg.TP))
	if cfg.TP > 1 && cfg.Backend != "" {
		c.backend.SetSelected(cfg.Backend)
	}
	if (cfg.Drafter == DrafterModel || cfg.Drafter == DrafterEagle3) && c.s.DraftPath == "" {
		c.problem.SetText(fmt.Sprintf("the %s drafter needs a file: choose it under Drafter", cfg.Drafter))
		return
	}
	c.drafter.SetSelected(cfg.Drafter)
	if cfg.Speculative() {
		c.k.SetText(strconv.Itoa(cfg.K))
		c.shape.SetSelectedIndex(min(cfg.Tree, len(shapes)-1))
		c.update(func(s *Settings) { s.K, s.Tree = cfg.K, cfg.Tree })
	}
}

// WhatIfGrid is the grid the panel predicts: every available TP size and
// backend, no drafter, the n-gram drafter and the draft model when one is
// chosen, at k = 2, 4 and the controls' k.
func WhatIfGrid(s Settings, backends, tpSizes []Choice) planner.Grid {
	g := planner.Grid{Drafters: []string{DrafterNone, DrafterNgram}, K: []int{2, 4}}
	if s.DraftPath != "" && (s.Drafter == DrafterModel || s.Drafter == DrafterEagle3) {
		g.Drafters = append(g.Drafters, s.Drafter)
		g.DraftPath = s.DraftPath
	}
	if s.K != 2 && s.K != 4 && s.K > 0 {
		g.K = append(g.K, s.K)
	}
	g.Tree = s.Tree
	for _, c := range tpSizes {
		if n, err := strconv.Atoi(c.Name); err == nil && c.Available {
			g.TP = append(g.TP, n)
		}
	}
	for _, b := range backends {
		if b.Available && !strings.EqualFold(b.Name, "nccl") {
			g.Backends = append(g.Backends, b.Name)
		}
	}
	return g
}
