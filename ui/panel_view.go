package ui

import (
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine/metrics"
)

// More preference keys (settings.go has the rest).
const (
	prefRecentModels = "recent_models"
	prefSystem       = "system_prompt"
	prefTheme        = "theme"
)

// maxRecent bounds the recent models list.
const maxRecent = 6

// addRecent puts path first in the recent models list.
func addRecent(list []string, path string) []string {
	out := []string{path}
	for _, p := range list {
		if p != path && len(out) < maxRecent {
			out = append(out, p)
		}
	}
	return out
}

// FormatParams writes a parameter count as model cards do: 14.2M, 1.5B.
func FormatParams(n int64) string {
	f := float64(n)
	switch {
	case f >= 1e9:
		return trimZero(f/1e9) + "B"
	case f >= 1e6:
		return trimZero(f/1e6) + "M"
	case f >= 1e3:
		return trimZero(f/1e3) + "K"
	}
	return fmt.Sprint(n)
}

// trimZero prints v with one decimal, dropping ".0" (and the decimal from
// 100 up).
func trimZero(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

// isSynthetic says whether the loaded model is the built-in synthetic one.
func (p *Panel) isSynthetic() bool {
	return p.info.Format == "synthetic" || strings.HasPrefix(p.info.Path, "synthetic:")
}

// welcomeContent is the first screen: what the loaded model is (the
// synthetic default says it is random weights), how to open a model and
// the recent models, one click each.
func (p *Panel) welcomeContent() fyne.CanvasObject {
	title := widget.NewLabelWithStyle("rigscope: chat with a model, watch the rig run it", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	var about string
	switch {
	case p.session == nil:
		about = "Loading the model…"
	case p.isSynthetic():
		about = "The model loaded now is the built-in synthetic model: random weights that exercise the engine " +
			"(tensor parallelism, allreduce, speculative decoding) with nothing to download. Its answers are " +
			"gibberish by design. Open a real model to chat with it."
	default:
		about = fmt.Sprintf("%s is loaded (%s, %s parameters). Type a message below: Enter sends, Shift+Enter starts a new line, "+
			"Esc stops a run, Ctrl+N starts a new chat.", p.info.Name, p.info.Format, FormatParams(p.info.Params))
	}
	text := widget.NewLabel(about)
	text.Wrapping = fyne.TextWrapWord
	box := container.NewVBox(title, text, container.NewHBox(
		widget.NewButtonWithIcon("Open a model file (GGUF, llama2.c)…", theme.FileIcon(), p.modelPicker.ShowFile),
		widget.NewButtonWithIcon("Open a Hugging Face folder…", theme.FolderOpenIcon(), p.modelPicker.ShowFolder)))
	recent := p.app.Preferences().StringList(prefRecentModels)
	if len(recent) == 0 {
		if last := p.app.Preferences().String(prefLastModel); last != "" {
			recent = []string{last}
		}
	}
	if len(recent) > 0 {
		box.Add(widget.NewLabelWithStyle("Recent models", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		for _, path := range recent {
			b := widget.NewButton(baseName(path)+"   ("+filepath.Dir(path)+")", func() { p.LoadModel(path) })
			b.Alignment = widget.ButtonAlignLeading
			b.Importance = widget.LowImportance
			if path == p.info.Path {
				b.Disable()
			}
			box.Add(b)
		}
	}
	return container.NewPadded(box)
}

// showError shows err as the panel words it (Fyne's error dialog
// capitalises the first letter, which garbles a leading file name).
func showError(err error, win fyne.Window) {
	msg := widget.NewLabel(err.Error())
	msg.Wrapping = fyne.TextWrapWord
	content := container.NewBorder(nil, nil, widget.NewIcon(theme.ErrorIcon()), nil, msg)
	d := dialog.NewCustom("Error", "OK", content, win)
	d.Resize(fyne.NewSize(min(560, max(win.Canvas().Size().Width-40, 300)), 0))
	d.Show()
}

// export asks for a folder, asks again before overwriting an earlier
// export there, and writes runs in every format.
func (p *Panel) export(runs []*RunRecord) {
	d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil {
			showError(err, p.win)
			return
		}
		if u == nil {
			return
		}
		p.exportTo(u.Path(), runs, false)
	}, p.win)
	d.SetTitleText(fmt.Sprintf("Export %d runs to a folder", len(runs)))
	d.SetConfirmText("Export here")
	d.Resize(fyne.NewSize(760, 520))
	d.Show()
}

// exportTo writes runs into dir; without overwrite it first asks whether
// to replace the export files already there.
func (p *Panel) exportTo(dir string, runs []*RunRecord, overwrite bool) {
	if existing := existingExports(dir); len(existing) > 0 && !overwrite {
		dialog.ShowConfirm("Replace the earlier export?",
			fmt.Sprintf("%s already holds\n%s\nReplace them with these %d runs?", dir, strings.Join(existing, "\n"), len(runs)),
			func(yes bool) {
				if yes {
					p.exportTo(dir, runs, true)
				}
			}, p.win)
		return
	}
	paths, err := ExportRuns(p.ctx, dir, runs)
	if err != nil {
		showError(err, p.win)
		return
	}
	dialog.ShowInformation("Exported", fmt.Sprintf("%d runs written to\n%s", len(runs), strings.Join(paths, "\n")), p.win)
}

// existingExports lists the export files already in dir.
func existingExports(dir string) []string {
	var out []string
	for _, n := range []string{metrics.ExportJSONLName, metrics.ExportRunsCSVName, metrics.ExportStepsCSVName, metrics.ExportTraceName} {
		if _, err := os.Stat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
			out = append(out, n)
		}
	}
	return out
}

// Theme choices.
var themeChoices = []string{"System", "Light", "Dark"}

// themeSelect is the light/dark toggle (following the system by default),
// saved in the preferences.
func (p *Panel) themeSelect() fyne.CanvasObject {
	sel := widget.NewSelect(themeChoices, func(v string) {
		p.app.Preferences().SetString(prefTheme, v)
		p.applyTheme(v)
	})
	saved := p.app.Preferences().String(prefTheme)
	if !slices.Contains(themeChoices, saved) {
		saved = themeChoices[0]
	}
	sel.Selected = saved
	p.applyTheme(saved)
	return container.NewHBox(widget.NewLabel("Theme"), sel)
}

func (p *Panel) applyTheme(choice string) {
	switch choice {
	case "Light":
		p.app.Settings().SetTheme(variantTheme{theme.LightTheme(), theme.VariantLight})
	case "Dark":
		p.app.Settings().SetTheme(variantTheme{theme.DarkTheme(), theme.VariantDark})
	default:
		p.app.Settings().SetTheme(theme.DefaultTheme())
	}
}

// variantTheme is the default theme held to one variant.
type variantTheme struct {
	fyne.Theme
	v fyne.ThemeVariant
}

func (t variantTheme) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return theme.DefaultTheme().Color(n, t.v)
}

// addShortcuts binds the window's keys: Esc stops the run (or cancels an
// edit), Ctrl+Enter sends, Ctrl+N starts a new chat.
func (p *Panel) addShortcuts() {
	c := p.win.Canvas()
	c.SetOnTypedKey(func(k *fyne.KeyEvent) {
		if k.Name == fyne.KeyEscape {
			p.Chat.Escape()
		}
	})
	for _, key := range []fyne.KeyName{fyne.KeyReturn, fyne.KeyEnter} {
		c.AddShortcut(&desktop.CustomShortcut{KeyName: key, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { p.Chat.Submit() })
	}
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { p.Chat.NewChat() })
}
