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

// ChatView is the chat pane: a conversation (system prompt, then turns of
// a prompt and its streamed answer with a stats row), the multi-line prompt
// box with history, Send, Stop and New chat. Each message has a copy
// button; a prompt can be edited and resent, the last answer regenerated.
// Finished answers are selectable, fenced code in a monospace font.
type ChatView struct {
	Root fyne.CanvasObject

	transcript *fyne.Container
	stack      *stackLayout
	scroll     *container.Scroll
	welcome    *fyne.Container // shown while the conversation is empty
	entry      *promptEntry
	system     *widget.Entry
	send, stop *widget.Button
	newChat    *widget.Button
	template   *widget.Label
	context    *widget.Label
	editNote   *widget.Label
	editBar    *fyne.Container
	markDrafts *widget.Check

	turns   []*chatTurn
	mark    bool
	editing int // the turn an edited prompt replaces; -1 when not editing
	running bool

	// OnSend is called with the prompt the user submitted (after an edit
	// has dropped the turns it replaces).
	OnSend func(prompt string)
	// OnStop is called when the user presses Stop (or Esc during a run).
	OnStop func()
	// OnMarkDrafts is called when the draft-marking toggle changes.
	OnMarkDrafts func(on bool)
	// OnRegenerate is called when the user asks for the last answer again.
	OnRegenerate func()
	// OnChanged is called when the prompt or the system prompt changes
	// (the panel recounts the context).
	OnChanged func()
	// OnSystem is called with the system prompt when it changes.
	OnSystem func(string)
}

// NewChatView builds the chat pane; mark says whether draft tokens are marked.
func NewChatView(mark bool) *ChatView {
	v := &ChatView{mark: mark, editing: -1}
	v.transcript, v.stack = newStack(-1)
	v.scroll = container.NewVScroll(v.transcript)
	v.scroll.OnScrolled = func(fyne.Position) { v.cull() }
	v.stack.after = v.cull
	v.welcome = container.NewVBox()
	v.entry = newPromptEntry()
	v.entry.SetPlaceHolder("Message (Enter sends, Shift+Enter new line, ↑/↓ history)")
	v.entry.onSubmit = v.submit
	v.entry.OnEscape = v.escape
	v.entry.OnNewChat = v.NewChat
	v.entry.OnChanged = func(string) { v.changed() }
	v.system = widget.NewMultiLineEntry()
	v.system.Wrapping = fyne.TextWrapWord
	v.system.SetMinRowsVisible(2)
	v.system.SetPlaceHolder("System prompt (optional): sent first, in the model's chat template")
	v.system.OnChanged = func(s string) {
		if v.OnSystem != nil {
			v.OnSystem(s)
		}
		v.changed()
	}
	v.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.submit)
	v.send.Importance = widget.HighImportance
	v.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() {
		if v.OnStop != nil {
			v.OnStop()
		}
	})
	v.stop.Disable()
	v.newChat = widget.NewButtonWithIcon("New chat", theme.ContentAddIcon(), v.NewChat)
	v.template = widget.NewLabel("")
	v.template.TextStyle.Italic = true
	v.template.Truncation = fyne.TextTruncateEllipsis
	v.context = widget.NewLabel("")
	v.context.Importance = widget.LowImportance
	v.editNote = widget.NewLabel("")
	v.editNote.Importance = widget.WarningImportance
	v.editBar = container.NewBorder(nil, nil, nil, widget.NewButton("Cancel edit", v.cancelEdit), v.editNote)
	v.editBar.Hide()
	v.markDrafts = widget.NewCheck("Mark draft tokens", func(on bool) {
		v.SetMarkDrafts(on)
		if v.OnMarkDrafts != nil {
			v.OnMarkDrafts(on)
		}
	})
	v.markDrafts.SetChecked(mark)
	sys := widget.NewAccordion(widget.NewAccordionItem("System prompt", v.system))
	top := container.NewBorder(nil, sys, nil, container.NewHBox(v.markDrafts, v.newChat), v.template)
	buttons := container.NewVBox(v.send, v.stop)
	bottom := container.NewVBox(v.editBar,
		container.NewBorder(nil, nil, nil, buttons, v.entry), v.context)
	v.Root = container.NewBorder(top, bottom, nil, nil, container.NewStack(v.scroll, v.welcome))
	return v
}

func (v *ChatView) changed() {
	if v.OnChanged != nil {
		v.OnChanged()
	}
}

func (v *ChatView) submit() {
	p := strings.TrimSpace(v.entry.Text)
	if p == "" || v.send.Disabled() {
		return
	}
	if v.editing >= 0 {
		v.Truncate(v.editing)
		v.cancelEdit()
	}
	v.entry.remember(p)
	v.entry.SetText("")
	if v.OnSend != nil {
		v.OnSend(p)
	}
}

// escape stops the run in flight, or cancels an edit.
func (v *ChatView) escape() {
	switch {
	case v.running && v.OnStop != nil:
		v.OnStop()
	case v.editing >= 0:
		v.cancelEdit()
		v.entry.SetText("")
	}
}

// Escape is what the Esc key does anywhere in the window.
func (v *ChatView) Escape() { v.escape() }

// Submit sends the prompt box's text (Ctrl+Enter anywhere in the window).
func (v *ChatView) Submit() { v.submit() }

// Remember adds p to the prompt history (a prompt that did not come from
// the box, e.g. --autorun).
func (v *ChatView) Remember(p string) { v.entry.remember(p) }

// Edit puts turn i's prompt in the box; sending it replaces turn i and
// every turn after it.
func (v *ChatView) Edit(i int) {
	if i < 0 || i >= len(v.turns) || v.running {
		return
	}
	v.editing = i
	v.entry.SetText(v.turns[i].prompt)
	v.editNote.SetText(fmt.Sprintf("Editing message %d: sending replaces it and what follows it (Esc cancels).", i+1))
	v.editBar.Show()
	if c := fyne.CurrentApp().Driver().CanvasForObject(v.entry); c != nil {
		c.Focus(v.entry)
	}
}

func (v *ChatView) cancelEdit() {
	v.editing = -1
	v.editBar.Hide()
}

// Draft returns the text in the prompt box.
func (v *ChatView) Draft() string { return v.entry.Text }

// SystemPrompt returns the system prompt ("" for none).
func (v *ChatView) SystemPrompt() string { return strings.TrimSpace(v.system.Text) }

// SetSystemPrompt sets the system prompt (e.g. from preferences).
func (v *ChatView) SetSystemPrompt(s string) { v.system.SetText(s) }

// SetTemplateInfo shows which prompt format is in use.
func (v *ChatView) SetTemplateInfo(s string) { v.template.SetText(s) }

// SetContextInfo shows how much of the context the conversation uses.
func (v *ChatView) SetContextInfo(s string) { v.context.SetText(s) }

// ContextInfo returns the context line (tests).
func (v *ChatView) ContextInfo() string { return v.context.Text }

// SetWelcome sets what the empty conversation shows (the first screen).
func (v *ChatView) SetWelcome(o fyne.CanvasObject) {
	v.welcome.Objects = []fyne.CanvasObject{o}
	v.welcome.Refresh()
	v.refreshWelcome()
}

func (v *ChatView) refreshWelcome() {
	if len(v.turns) == 0 && len(v.welcome.Objects) > 0 {
		v.welcome.Show()
	} else {
		v.welcome.Hide()
	}
}

// Welcome returns the first screen's content (tests); nil when hidden.
func (v *ChatView) Welcome() fyne.CanvasObject {
	if !v.welcome.Visible() || len(v.welcome.Objects) == 0 {
		return nil
	}
	return v.welcome.Objects[0]
}

// SetRunning switches between the idle (Send) and running (Stop) states.
func (v *ChatView) SetRunning(running bool) {
	v.running = running
	if running {
		v.send.Disable()
		v.stop.Enable()
		v.newChat.Disable()
	} else {
		v.send.Enable()
		v.stop.Disable()
		v.newChat.Enable()
	}
	v.refreshActions()
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
	t := newChatTurn(v, prompt, config)
	v.turns = append(v.turns, t)
	v.transcript.Add(t.box)
	v.refreshWelcome()
	v.refreshActions()
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
			if lb, ok := o.(*lazyBlock); ok {
				y := base + o.Position().Y
				lb.show(y+o.Size().Height >= top && y <= bottom)
			}
		}
	}
}

// AppendTokens adds a frame's worth of tokens to the current answer and
// refreshes only the block that changed.
func (v *ChatView) AppendTokens(toks []engine.Token) {
	if len(v.turns) == 0 {
		return
	}
	v.turns[len(v.turns)-1].append(toks)
	v.scroll.ScrollToBottom()
}

// segment renders a span: accepted-draft text in the primary colour when
// marking is on (colour only: the selectable copy laid over a finished
// answer has the same metrics).
func (v *ChatView) segment(s span, code bool) *widget.TextSegment {
	st := widget.RichTextStyleInline
	if code {
		st.TextStyle = fyne.TextStyle{Monospace: true}
	}
	if s.draft && v.mark {
		st.ColorName = theme.ColorNamePrimary
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
		t.restyle()
	}
}

// FinishTurn writes the stats row under the current answer and makes the
// answer selectable.
func (v *ChatView) FinishTurn(rec *RunRecord) {
	if len(v.turns) == 0 {
		return
	}
	v.turns[len(v.turns)-1].finish(StatsLine(rec))
	v.stack.invalidate()
	v.refreshActions()
	v.scroll.ScrollToBottom()
}

// refreshActions offers Regenerate on the last finished answer only and
// disables editing while a run is in flight.
func (v *ChatView) refreshActions() {
	for i, t := range v.turns {
		t.setActions(!v.running && t.done, !v.running && t.done && i == len(v.turns)-1)
	}
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

// Conversation is what a chat template renders for a new prompt: the
// system prompt, the finished exchanges and the prompt.
func (v *ChatView) Conversation(prompt string) []Message {
	var msgs []Message
	if s := v.SystemPrompt(); s != "" {
		msgs = append(msgs, Message{Role: "system", Content: s})
	}
	msgs = append(msgs, v.History()...)
	if prompt != "" {
		msgs = append(msgs, Message{Role: "user", Content: prompt})
	}
	return msgs
}

// Turns returns how many turns the conversation holds.
func (v *ChatView) Turns() int { return len(v.turns) }

// Truncate drops turn i and every turn after it.
func (v *ChatView) Truncate(i int) {
	if i < 0 || i >= len(v.turns) {
		return
	}
	for _, t := range v.turns[i:] {
		v.transcript.Remove(t.box)
	}
	v.turns = v.turns[:i]
	v.stack.invalidate()
	v.refreshWelcome()
	v.refreshActions()
}

// PopLast drops the last turn and returns its prompt (Regenerate).
func (v *ChatView) PopLast() (string, bool) {
	if len(v.turns) == 0 || v.running {
		return "", false
	}
	p := v.turns[len(v.turns)-1].prompt
	v.Truncate(len(v.turns) - 1)
	return p, true
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

// NewChat starts an empty conversation (the system prompt stays); not
// while a run is in flight.
func (v *ChatView) NewChat() {
	if v.running {
		return
	}
	v.cancelEdit()
	v.Clear()
	v.changed()
}

// Clear removes every turn.
func (v *ChatView) Clear() {
	v.turns = nil
	v.transcript.RemoveAll()
	v.stack.invalidate()
	v.refreshWelcome()
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

// ttft formats a time to first token: whole milliseconds, or one decimal
// below 10 ms (small models answer in under a millisecond).
func ttft(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
