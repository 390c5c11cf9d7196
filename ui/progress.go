package ui

import (
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"

	"rigscope/engine"
)

// ProgressDialog shows long work (loading a model, a calibration sweep, a
// benchmark): what it is doing, a bar, and Cancel.
type ProgressDialog struct {
	dlg   *dialog.CustomDialog
	what  *widget.Label
	bar   *widget.ProgressBar
	spin  *widget.ProgressBarInfinite
	title string

	cancelButton *widget.Button
}

// NewProgressDialog builds (but does not show) a progress dialog; cancel is
// called when the user presses Cancel.
func NewProgressDialog(win fyne.Window, title string, cancel func()) *ProgressDialog {
	p := &ProgressDialog{title: title, what: widget.NewLabel("starting…"), bar: widget.NewProgressBar(), spin: widget.NewProgressBarInfinite()}
	p.bar.Hide()
	content := container.NewVBox(p.what, p.bar, p.spin)
	p.dlg = dialog.NewCustomWithoutButtons(title, content, win)
	p.cancelButton = widget.NewButton("Cancel", func() {
		p.what.SetText("cancelling…")
		cancel()
	})
	p.dlg.SetButtons([]fyne.CanvasObject{p.cancelButton})
	p.dlg.Resize(fyne.NewSize(460, 160))
	return p
}

// Show opens the dialog.
func (p *ProgressDialog) Show() { p.dlg.Show() }

// Hide closes it.
func (p *ProgressDialog) Hide() {
	p.spin.Stop()
	p.dlg.Hide()
}

// Update shows pr; call it on the UI goroutine.
func (p *ProgressDialog) Update(pr engine.Progress) {
	p.what.SetText(ProgressText(pr))
	if pr.Total > 0 {
		p.spin.Stop()
		p.spin.Hide()
		p.bar.Show()
		p.bar.SetValue(float64(pr.Done) / float64(pr.Total))
	}
}

// Text returns what the dialog currently says (tests).
func (p *ProgressDialog) Text() string { return p.what.Text }

// ProgressText describes pr in words, e.g. "loading weights: 3 of 5".
func ProgressText(pr engine.Progress) string {
	switch {
	case pr.Total <= 0:
		return pr.What + "…"
	case pr.Total > 1<<20: // bytes
		return fmt.Sprintf("%s: %s of %s", pr.What, humanize.IBytes(uint64(pr.Done)), humanize.IBytes(uint64(pr.Total)))
	}
	return fmt.Sprintf("%s: %d of %d", pr.What, pr.Done, pr.Total)
}
