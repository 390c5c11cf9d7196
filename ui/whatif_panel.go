package ui

import (
	"fyne.io/fyne/v2/container"

	"rigscope/engine/planner"
)

// The What if tab's wiring into the panel: one call per hook in app.go.

// addWhatIf adds the What if tab next to the dashboard when the panel has
// a planner; Apply sets the run controls to a row.
func (p *Panel) addWhatIf() {
	if p.opts.Planner == nil {
		return
	}
	p.WhatIf = NewWhatIfView(p.post)
	p.WhatIf.OnApply = func(cfg planner.Config) {
		p.Controls.ApplyPlan(cfg)
		p.WhatIf.SetCurrent(p.Controls.Settings())
	}
	p.WhatIf.SetCurrent(p.Controls.Settings())
	shown := p.Tabs.Selected()
	at := min(2, len(p.Tabs.Items)) // after the dashboard
	p.Tabs.Items = append(p.Tabs.Items[:at], append([]*container.TabItem{container.NewTabItem("What if", container.NewScroll(p.WhatIf.Root))}, p.Tabs.Items[at:]...)...)
	p.Tabs.Refresh()
	if shown != nil {
		p.Tabs.Select(shown)
	}
}

// whatIfModel gives the What if tab the loaded model's planner.
func (p *Panel) whatIfModel(eng Engine) {
	if p.WhatIf == nil {
		return
	}
	backends, tps := defaultChoices(p.opts)
	p.WhatIf.SetPlanner(p.opts.Planner(eng), WhatIfGrid(p.Controls.Settings(), backends, tps))
}

// whatIfRun puts a finished run's rate beside its prediction.
func (p *Panel) whatIfRun(rec *RunRecord) {
	if p.WhatIf != nil {
		p.WhatIf.RunDone(rec)
	}
}

// whatIfSettings marks the controls' configuration.
func (p *Panel) whatIfSettings(s Settings) {
	if p.WhatIf != nil {
		p.WhatIf.SetCurrent(s)
	}
}
