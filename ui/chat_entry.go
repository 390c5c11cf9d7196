package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
)

// promptEntry is the multi-line prompt box: Enter (or Ctrl+Enter) sends,
// Shift+Enter starts a new line, ↑ on the first line and ↓ on the last walk
// the prompt history, Esc calls OnEscape (stop the run, cancel an edit) and
// Ctrl+N OnNewChat.
type promptEntry struct {
	widget.Entry
	history []string
	pos     int  // len(history) = the fresh line
	shift   bool // a Shift key is held (desktop.Keyable)

	onSubmit  func()
	OnEscape  func()
	OnNewChat func()
}

func newPromptEntry() *promptEntry {
	e := &promptEntry{}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.ExtendBaseWidget(e)
	e.SetMinRowsVisible(3)
	return e
}

func (e *promptEntry) remember(p string) {
	if n := len(e.history); n == 0 || e.history[n-1] != p {
		e.history = append(e.history, p)
	}
	e.pos = len(e.history)
}

// KeyDown tracks Shift so that Shift+Enter inserts a new line.
func (e *promptEntry) KeyDown(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = true
	}
	e.Entry.KeyDown(k)
}

// KeyUp implements desktop.Keyable.
func (e *promptEntry) KeyUp(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shift = false
	}
	e.Entry.KeyUp(k)
}

// TypedKey sends on Enter, walks the history on ↑/↓ at the first/last
// line and otherwise behaves as a multi-line Entry.
func (e *promptEntry) TypedKey(k *fyne.KeyEvent) {
	switch k.Name {
	case fyne.KeyReturn, fyne.KeyEnter:
		if e.shift {
			// The Entry treats keys typed with Shift held as selection
			// moves: let go of Shift for it, so that it inserts a new line
			// (OnSubmitted is nil), then hold it again.
			shift := &fyne.KeyEvent{Name: desktop.KeyShiftLeft}
			e.Entry.KeyUp(shift)
			e.Entry.TypedKey(k)
			e.Entry.KeyDown(shift)
			return
		}
		if e.onSubmit != nil {
			e.onSubmit()
		}
	case fyne.KeyEscape:
		if e.OnEscape != nil {
			e.OnEscape()
		}
	case fyne.KeyUp:
		if e.CursorRow > 0 {
			e.Entry.TypedKey(k)
			return
		}
		if e.pos > 0 {
			e.pos--
			e.SetText(e.history[e.pos])
		}
	case fyne.KeyDown:
		if e.CursorRow < strings.Count(e.Text, "\n") {
			e.Entry.TypedKey(k)
			return
		}
		if e.pos < len(e.history) {
			e.pos++
			if e.pos == len(e.history) {
				e.SetText("")
			} else {
				e.SetText(e.history[e.pos])
			}
		}
	default:
		e.Entry.TypedKey(k)
	}
}

// TypedShortcut sends on Ctrl+Enter and starts a new chat on Ctrl+N.
func (e *promptEntry) TypedShortcut(s fyne.Shortcut) {
	if cs, ok := s.(*desktop.CustomShortcut); ok {
		switch {
		case (cs.KeyName == fyne.KeyReturn || cs.KeyName == fyne.KeyEnter) && cs.Modifier&(fyne.KeyModifierControl|fyne.KeyModifierSuper) != 0:
			if e.onSubmit != nil {
				e.onSubmit()
			}
			return
		case cs.KeyName == fyne.KeyN && cs.Modifier&(fyne.KeyModifierControl|fyne.KeyModifierSuper) != 0:
			if e.OnNewChat != nil {
				e.OnNewChat()
			}
			return
		}
	}
	e.Entry.TypedShortcut(s)
}
