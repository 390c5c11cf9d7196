package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"rigscope/internal/modelpath"
)

// Model formats the picker accepts (modelpath's).
const (
	FormatGGUF    = modelpath.FormatGGUF
	FormatHF      = modelpath.FormatHF
	FormatEagle3  = modelpath.FormatEagle3
	FormatLlama2C = modelpath.FormatLlama2C
)

// CheckModelPath says whether path is a model the engine can open and, if
// not, why, in words meant for the user (modelpath.Check).
func CheckModelPath(path string) (format string, err error) { return modelpath.Check(path) }

// Picker lets the user choose a target or draft model: a file (GGUF or
// llama2.c) or a Hugging Face folder. A path that cannot be used is refused
// with the reason, in a dialog.
type Picker struct {
	win    fyne.Window
	onPick func(path, format string)
	// Refused is called with the reason a choice was refused (tests read it).
	Refused func(err error)
}

// NewPicker returns a picker whose accepted choices go to onPick.
func NewPicker(win fyne.Window, onPick func(path, format string)) *Picker {
	p := &Picker{win: win, onPick: onPick}
	p.Refused = func(err error) { dialog.ShowError(err, win) }
	return p
}

// Choose checks path and passes it on, or refuses it with the reason.
func (p *Picker) Choose(path string) bool {
	format, err := CheckModelPath(path)
	if err != nil {
		p.Refused(err)
		return false
	}
	p.onPick(path, format)
	return true
}

// ShowFile opens the file dialog for GGUF and llama2.c files.
func (p *Picker) ShowFile() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			p.Refused(err)
			return
		}
		if r == nil {
			return // cancelled
		}
		r.Close()
		p.Choose(r.URI().Path())
	}, p.win)
	d.Resize(fyne.NewSize(760, 520))
	d.Show()
}

// ShowFolder opens the folder dialog for Hugging Face model folders.
func (p *Picker) ShowFolder() {
	d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil {
			p.Refused(err)
			return
		}
		if u == nil {
			return
		}
		p.Choose(u.Path())
	}, p.win)
	d.Resize(fyne.NewSize(760, 520))
	d.Show()
}

// Buttons returns "Model file…" and "HF folder…" buttons laid out in a row.
func (p *Picker) Buttons(label string) fyne.CanvasObject {
	return container.NewHBox(
		widget.NewButton(label+" file…", p.ShowFile),
		widget.NewButton(label+" HF folder…", p.ShowFolder),
	)
}
