package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
)

// blockChars bounds one RichText block of an answer: past it a new block
// starts (at a line end when possible), so a streaming refresh re-lays out
// only the last block, not the whole answer.
const blockChars = 1500

// ChatView is the chat pane: the transcript with streaming answers and a
// stats row under each, the prompt entry with history, Send and Stop.
type ChatView struct {
	Root fyne.CanvasObject

	transcript *fyne.Container
	stack      *stackLayout
	scroll     *container.Scroll
	entry      *promptEntry
	send, stop *widget.Button
	template   *widget.Label
	markDrafts *widget.Check

	turns []*chatTurn
	mark  bool

	// OnSend is called with the prompt the user submitted.
	OnSend func(prompt string)
	// OnStop is called when the user presses Stop.
	OnStop func()
	// OnMarkDrafts is called when the draft-marking toggle changes.
	OnMarkDrafts func(on bool)
}

// chatTurn is one prompt and its answer.
type chatTurn struct {
	prompt string
	box    *fyne.Container // the turn in the transcript
	answer *fyne.Container // *lazyBlock blocks, top to bottom
	blocks *stackLayout
	stats  *widget.Label
	spans  []span // the answer, coalesced into runs of same-origin tokens
	text   strings.Builder
	done   bool
}

// span is a run of consecutive tokens that all came from accepted drafts or
// all from the target; block says which RichText block holds it.
type span struct {
	text  string
	draft bool
	block int
}

// NewChatView builds the chat pane; mark says whether draft tokens are marked.
func NewChatView(mark bool) *ChatView {
	v := &ChatView{mark: mark}
	v.transcript, v.stack = newStack(-1)
	v.scroll = container.NewVScroll(v.transcript)
	v.scroll.OnScrolled = func(fyne.Position) { v.cull() }
	v.stack.after = v.cull
	v.entry = newPromptEntry()
	v.entry.SetPlaceHolder("Prompt (Enter sends, ↑/↓ history)")
	v.entry.OnSubmitted = func(string) { v.submit() }
	v.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.submit)
	v.send.Importance = widget.HighImportance
	v.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() {
		if v.OnStop != nil {
			v.OnStop()
		}
	})
	v.stop.Disable()
	v.template = widget.NewLabel("")
	v.template.TextStyle.Italic = true
	v.markDrafts = widget.NewCheck("Mark draft tokens", func(on bool) {
		v.SetMarkDrafts(on)
		if v.OnMarkDrafts != nil {
			v.OnMarkDrafts(on)
		}
	})
	v.markDrafts.SetChecked(mark)
	top := container.NewHBox(v.template, widget.NewSeparator(), v.markDrafts)
	bottom := container.NewBorder(nil, nil, nil, container.NewHBox(v.send, v.stop), v.entry)
	v.Root = container.NewBorder(top, bottom, nil, nil, v.scroll)
	return v
}

func (v *ChatView) submit() {
	p := strings.TrimSpace(v.entry.Text)
	if p == "" || v.send.Disabled() {
		return
	}
	v.entry.remember(p)
	v.entry.SetText("")
	if v.OnSend != nil {
		v.OnSend(p)
	}
}

// SetTemplateInfo shows which prompt format is in use.
func (v *ChatView) SetTemplateInfo(s string) { v.template.SetText(s) }

// SetRunning switches between the idle (Send) and running (Stop) states.
func (v *ChatView) SetRunning(running bool) {
	if running {
		v.send.Disable()
		v.stop.Enable()
	} else {
		v.send.Enable()
		v.stop.Disable()
	}
}

// SetReady enables or disables sending (no model loaded yet).
func (v *ChatView) SetReady(ready bool) {
	if ready {
		v.send.Enable()
	} else {
		v.send.Disable()
	}
}

// BeginTurn adds the prompt and an empty answer that tokens stream into.
func (v *ChatView) BeginTurn(prompt, config string) {
	t := &chatTurn{prompt: prompt, stats: widget.NewLabel("generating… (" + config + ")")}
	t.answer, t.blocks = newStack(0, newLazyBlock())
	t.stats.TextStyle.Italic = true
	t.stats.Wrapping = fyne.TextWrapWord
	q := widget.NewLabelWithStyle("› "+prompt, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	q.Wrapping = fyne.TextWrapWord
	v.turns = append(v.turns, t)
	t.box = container.NewVBox(q, t.answer, t.stats, widget.NewSeparator())
	v.transcript.Add(t.box)
	v.scroll.ScrollToBottom()
}

// cull paints only the answer blocks within a screen of the visible part
// of the transcript.
func (v *ChatView) cull() {
	top := v.scroll.Offset.Y - v.scroll.Size().Height
	bottom := v.scroll.Offset.Y + 2*v.scroll.Size().Height
	for _, t := range v.turns {
		base := t.box.Position().Y + t.answer.Position().Y
		for _, o := range t.answer.Objects {
			y := base + o.Position().Y
			o.(*lazyBlock).show(y+o.Size().Height >= top && y <= bottom)
		}
	}
}

// AppendTokens adds a frame's worth of tokens to the current answer and
// refreshes only the block that changed.
func (v *ChatView) AppendTokens(toks []engine.Token) {
	if len(v.turns) == 0 {
		return
	}
	t := v.turns[len(v.turns)-1]
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
			last.Segments = append(last.Segments, v.segment(t.spans[len(t.spans)-1]))
		}
		changed[last] = true
	}
	for rt := range changed {
		rt.Refresh()
	}
	v.scroll.ScrollToBottom()
}

// segment renders a span: accepted-draft text in the primary colour (bold)
// when marking is on.
func (v *ChatView) segment(s span) *widget.TextSegment {
	st := widget.RichTextStyleInline
	if s.draft && v.mark {
		st.ColorName = theme.ColorNamePrimary
		st.TextStyle = fyne.TextStyle{Bold: true}
	}
	return &widget.TextSegment{Text: s.text, Style: st}
}

// SetMarkDrafts turns the marking of accepted-draft tokens on or off and
// restyles every answer.
func (v *ChatView) SetMarkDrafts(on bool) {
	if on == v.mark {
		return
	}
	v.mark = on
	if v.markDrafts.Checked != on {
		v.markDrafts.SetChecked(on)
	}
	v.stack.invalidate()
	for _, t := range v.turns {
		t.blocks.invalidate()
		for bi, o := range t.answer.Objects {
			rt := o.(*lazyBlock).rt
			rt.Segments = rt.Segments[:0]
			for _, s := range t.spans {
				if s.block == bi {
					rt.Segments = append(rt.Segments, v.segment(s))
				}
			}
			rt.Refresh()
		}
	}
}

// FinishTurn writes the stats row under the current answer.
func (v *ChatView) FinishTurn(rec *RunRecord) {
	if len(v.turns) == 0 {
		return
	}
	t := v.turns[len(v.turns)-1]
	t.done = true
	t.stats.SetText(StatsLine(rec))
	v.scroll.ScrollToBottom()
}

// History returns the finished exchanges, oldest first, for chat templates.
func (v *ChatView) History() []Message {
	var msgs []Message
	for _, t := range v.turns {
		if t.done {
			msgs = append(msgs, Message{Role: "user", Content: t.prompt}, Message{Role: "assistant", Content: t.text.String()})
		}
	}
	return msgs
}

// maxHistory bounds the remembered prompts.
const maxHistory = 100

// SetHistory replaces the prompt history (oldest first), e.g. from preferences.
func (v *ChatView) SetHistory(h []string) {
	v.entry.history = append([]string(nil), h[max(len(h)-maxHistory, 0):]...)
	v.entry.pos = len(v.entry.history)
}

// HistoryPrompts returns the prompt history, oldest first.
func (v *ChatView) HistoryPrompts() []string {
	h := v.entry.history
	return append([]string(nil), h[max(len(h)-maxHistory, 0):]...)
}

// Clear removes every turn.
func (v *ChatView) Clear() {
	v.turns = nil
	v.transcript.RemoveAll()
	v.stack.invalidate()
}

// AnswerText returns the text of answer i (tests).
func (v *ChatView) AnswerText(i int) string { return v.turns[i].text.String() }

// StatsLine is the LM Studio style stats row for a finished run.
func StatsLine(rec *RunRecord) string {
	s := rec.Stats
	parts := []string{
		fmt.Sprintf("%.1f tok/s", s.DecodeTokensPerS),
		fmt.Sprintf("%d tokens", s.GeneratedTokens),
		ttft(s.TimeToFirstTokenMs) + " to first token",
		"stop: " + s.StopReason,
	}
	if rec.Config.Drafter.Kind != DrafterNone && rec.Config.Drafter.Kind != "" {
		parts = append(parts,
			fmt.Sprintf("%.0f%% of drafts accepted", 100*s.DraftAcceptRate),
			fmt.Sprintf("mean accept len %.2f", s.MeanAcceptLen),
			verdictText(rec))
	}
	line := strings.Join(parts, " · ")
	if rec.Err != "" {
		line += " · error: " + rec.Err
	}
	return line
}

// promptEntry is a single-line entry whose ↑/↓ keys walk the prompt history.
type promptEntry struct {
	widget.Entry
	history []string
	pos     int // len(history) = the fresh line
}

func newPromptEntry() *promptEntry {
	e := &promptEntry{}
	e.ExtendBaseWidget(e)
	return e
}

func (e *promptEntry) remember(p string) {
	if n := len(e.history); n == 0 || e.history[n-1] != p {
		e.history = append(e.history, p)
	}
	e.pos = len(e.history)
}

// TypedKey walks the history on ↑/↓ and otherwise behaves as an Entry.
func (e *promptEntry) TypedKey(k *fyne.KeyEvent) {
	switch k.Name {
	case fyne.KeyUp:
		if e.pos > 0 {
			e.pos--
			e.SetText(e.history[e.pos])
		}
	case fyne.KeyDown:
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

// ttft formats a time to first token: whole milliseconds, or one decimal
// below 10 ms (small models answer in under a millisecond).
func ttft(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
