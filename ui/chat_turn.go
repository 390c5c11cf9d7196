package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
)

// chatTurn is one prompt and its answer.
type chatTurn struct {
	v      *ChatView
	prompt string
	box    *fyne.Container // the turn in the transcript
	user   *widget.Label   // the prompt, selectable
	answer *fyne.Container // *lazyBlock blocks, top to bottom
	blocks *stackLayout
	stats  *widget.Label
	spans  []span // the answer, coalesced into runs of same-origin tokens
	text   strings.Builder
	done   bool
	code   []bool // per block of answer: a code block (finished answers)

	copyPrompt, edit, copyAnswer, regenerate *widget.Button
}

// span is a run of consecutive tokens that all came from accepted drafts or
// all from the target; block says which RichText block holds it while the
// answer streams.
type span struct {
	text  string
	draft bool
	block int
}

func newChatTurn(v *ChatView, prompt, config string) *chatTurn {
	t := &chatTurn{v: v, prompt: prompt, stats: widget.NewLabel("generating… (" + config + ")")}
	t.answer, t.blocks = newStack(0, newLazyBlock())
	t.stats.TextStyle.Italic = true
	t.stats.Importance = widget.LowImportance
	t.stats.Wrapping = fyne.TextWrapWord
	t.user = widget.NewLabel(prompt)
	t.user.Wrapping = fyne.TextWrapWord
	t.user.Selectable = true
	t.copyPrompt = smallButton("Copy", theme.ContentCopyIcon(), func() { copyText(t.prompt) })
	t.edit = smallButton("Edit", theme.DocumentCreateIcon(), func() { t.v.Edit(t.index()) })
	t.copyAnswer = smallButton("Copy", theme.ContentCopyIcon(), func() { copyText(t.text.String()) })
	t.regenerate = smallButton("Regenerate", theme.ViewRefreshIcon(), func() {
		if t.v.OnRegenerate != nil {
			t.v.OnRegenerate()
		}
	})
	you := widget.NewLabelWithStyle("You", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	model := widget.NewLabelWithStyle("Model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	userHead := container.NewBorder(nil, nil, you, container.NewHBox(t.edit, t.copyPrompt))
	answerHead := container.NewBorder(nil, nil, model, container.NewHBox(t.regenerate, t.copyAnswer))
	t.box = container.NewVBox(userHead, t.user, answerHead, t.answer, t.stats, widget.NewSeparator())
	return t
}

func smallButton(label string, icon fyne.Resource, tapped func()) *widget.Button {
	b := widget.NewButtonWithIcon(label, icon, tapped)
	b.Importance = widget.LowImportance
	return b
}

// copyText puts s on the clipboard.
func copyText(s string) {
	if a := fyne.CurrentApp(); a != nil {
		a.Clipboard().SetContent(s)
	}
}

func (t *chatTurn) index() int {
	for i, o := range t.v.turns {
		if o == t {
			return i
		}
	}
	return -1
}

// setActions enables editing and copying once the turn is done, and shows
// Regenerate on the last turn only.
func (t *chatTurn) setActions(idle, last bool) {
	enable := func(b *widget.Button, on bool) {
		if on {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	enable(t.edit, idle)
	enable(t.copyAnswer, t.done)
	if last {
		t.regenerate.Show()
	} else {
		t.regenerate.Hide()
	}
	enable(t.regenerate, idle)
}

// append adds tokens to the streaming answer.
func (t *chatTurn) append(toks []engine.Token) {
	blocks := t.answer.Objects
	last := blocks[len(blocks)-1].(*lazyBlock).rt
	changed := map[*widget.RichText]bool{}
	for _, tok := range toks {
		if tok.Text == "" {
			continue
		}
		t.text.WriteString(tok.Text)
		bi := len(blocks) - 1
		size := 0
		for i := len(t.spans) - 1; i >= 0 && t.spans[i].block == bi; i-- {
			size += len(t.spans[i].text)
		}
		if size > blockChars && (strings.HasSuffix(t.spans[len(t.spans)-1].text, "\n") || size > 2*blockChars) {
			lb := newLazyBlock()
			last = lb.rt
			t.answer.Add(lb)
			blocks = t.answer.Objects
			bi++
		}
		n := len(t.spans)
		if n > 0 && t.spans[n-1].block == bi && t.spans[n-1].draft == tok.FromDraft {
			t.spans[n-1].text += tok.Text
			segs := last.Segments
			segs[len(segs)-1].(*widget.TextSegment).Text = t.spans[n-1].text
		} else {
			t.spans = append(t.spans, span{text: tok.Text, draft: tok.FromDraft, block: bi})
			last.Segments = append(last.Segments, t.v.segment(t.spans[len(t.spans)-1], false))
		}
		changed[last] = true
	}
	for rt := range changed {
		rt.Refresh()
	}
}

// finish shows the stats row and lays the answer out again as prose and
// code blocks, each selectable.
func (t *chatTurn) finish(stats string) {
	t.done = true
	t.stats.SetText(stats)
	text := t.text.String()
	blocks := splitBlocks(text, blockChars)
	t.code = t.code[:0]
	var objs []fyne.CanvasObject
	for _, b := range blocks {
		lb := newLazyBlock()
		for _, s := range spansIn(t.spans, b.start, b.end) {
			lb.rt.Segments = append(lb.rt.Segments, t.v.segment(s, b.code))
		}
		lb.makeSelectable(text[b.start:b.end], b.code)
		t.code = append(t.code, b.code)
		if b.code {
			code := text[b.start:b.end]
			head := container.NewBorder(nil, nil, widget.NewLabelWithStyle(orDefault(b.lang, "code"), fyne.TextAlignLeading, fyne.TextStyle{Italic: true}),
				smallButton("Copy code", theme.ContentCopyIcon(), func() { copyText(code) }))
			objs = append(objs, &codeHeader{Container: head})
		}
		objs = append(objs, lb)
	}
	if len(objs) == 0 {
		objs = []fyne.CanvasObject{newLazyBlock()}
	}
	t.answer.Objects = objs
	t.blocks.invalidate()
	t.answer.Refresh()
}

// codeHeader is the caption row above a code block (its language and a
// copy button); a lazyBlock look-alike for the culling walk.
type codeHeader struct{ *fyne.Container }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// restyle redraws every block's segments (draft marking changed).
func (t *chatTurn) restyle() {
	t.blocks.invalidate()
	if t.done {
		text := t.text.String()
		i := 0
		for _, b := range splitBlocks(text, blockChars) {
			for i < len(t.answer.Objects) {
				lb, ok := t.answer.Objects[i].(*lazyBlock)
				i++
				if ok {
					lb.rt.Segments = lb.rt.Segments[:0]
					for _, s := range spansIn(t.spans, b.start, b.end) {
						lb.rt.Segments = append(lb.rt.Segments, t.v.segment(s, b.code))
					}
					lb.rt.Refresh()
					break
				}
			}
		}
		return
	}
	for bi, o := range t.answer.Objects {
		rt := o.(*lazyBlock).rt
		rt.Segments = rt.Segments[:0]
		for _, s := range t.spans {
			if s.block == bi {
				rt.Segments = append(rt.Segments, t.v.segment(s, false))
			}
		}
		rt.Refresh()
	}
}
