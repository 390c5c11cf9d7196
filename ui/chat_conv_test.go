//go:build ci

package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
	"rigscope/engine/tokenizer"
)

func TestPromptEnterSendsShiftEnterNewLine(t *testing.T) {
	test.NewTempApp(t)
	v := NewChatView(true)
	w := test.NewTempWindow(t, v.Root)
	w.Canvas().Focus(v.entry)
	var sent []string
	v.OnSend = func(p string) { sent = append(sent, p) }
	test.Type(v.entry, "func main() {")
	v.entry.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	v.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	v.entry.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	test.Type(v.entry, "}")
	if len(sent) != 0 {
		t.Fatalf("Shift+Enter sent %q; it must start a new line", sent)
	}
	if v.entry.Text != "func main() {\n}" {
		t.Fatalf("after Shift+Enter the box holds %q, want two lines", v.entry.Text)
	}
	v.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if len(sent) != 1 || sent[0] != "func main() {\n}" {
		t.Fatalf("Enter sent %q, want the two-line prompt", sent)
	}
	test.Type(v.entry, "again")
	v.entry.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierControl})
	if len(sent) != 2 || sent[1] != "again" {
		t.Errorf("Ctrl+Enter sent %q, want again", sent)
	}
}

// finishedTurn sends prompt through the panel on a gate engine and lets
// the run end.
func finishedTurn(t *testing.T, p *Panel, q *uiQueue, g *gateEngine, prompt string) {
	t.Helper()
	n := len(g.runConfigs())
	runs := len(p.Runs.Runs())
	p.Send(prompt)
	q.until(t, "the run to start", func() bool { return len(g.runConfigs()) == n+1 })
	g.release <- struct{}{}
	q.until(t, "the run to end", func() bool { return len(p.Runs.Runs()) == runs+1 })
}

func TestChatConversationWithSystemPrompt(t *testing.T) {
	g := newGateEngine()
	p, q, _ := newTestPanel(t, g, Options{})
	p.Chat.system.SetText("You are terse.")
	finishedTurn(t, p, q, g, "first")
	finishedTurn(t, p, q, g, "second")
	c := g.runConfigs()[1]
	for _, want := range []string{"system<|end_header_id|>\n\nYou are terse.", "user<|end_header_id|>\n\nfirst", "assistant<|end_header_id|>\n\nhi there", "user<|end_header_id|>\n\nsecond"} {
		if !strings.Contains(c.Prompt, want) {
			t.Errorf("second prompt %q lacks %q", c.Prompt, want)
		}
	}
	if got := p.app.Preferences().String(prefSystem); got != "You are terse." {
		t.Errorf("saved system prompt = %q", got)
	}
}

func TestChatRegenerateEditAndNewChat(t *testing.T) {
	g := newGateEngine()
	p, q, _ := newTestPanel(t, g, Options{})
	finishedTurn(t, p, q, g, "one")
	finishedTurn(t, p, q, g, "two")

	// Regenerate replaces the last answer: same prompt, same history.
	test.Tap(p.Chat.turns[1].regenerate)
	q.until(t, "the regenerated run to start", func() bool { return len(g.runConfigs()) == 3 })
	g.release <- struct{}{}
	q.until(t, "the regenerated run to end", func() bool { return len(p.Runs.Runs()) == 3 })
	if n := p.Chat.Turns(); n != 2 {
		t.Errorf("after Regenerate the chat has %d turns, want 2", n)
	}
	if a, b := g.runConfigs()[1].Prompt, g.runConfigs()[2].Prompt; a != b {
		t.Errorf("regenerated prompt %q differs from the original %q", b, a)
	}

	// Edit the first prompt and resend: it replaces turn 0 and drops turn 1.
	test.Tap(p.Chat.turns[0].edit)
	if p.Chat.entry.Text != "one" || !p.Chat.editBar.Visible() {
		t.Fatalf("Edit put %q in the box (edit bar shown %v)", p.Chat.entry.Text, p.Chat.editBar.Visible())
	}
	p.Chat.entry.SetText("uno")
	p.Chat.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	q.until(t, "the edited run to start", func() bool { return len(g.runConfigs()) == 4 })
	g.release <- struct{}{}
	q.until(t, "the edited run to end", func() bool { return len(p.Runs.Runs()) == 4 })
	if n := p.Chat.Turns(); n != 1 || p.Chat.turns[0].prompt != "uno" {
		t.Errorf("after editing, turns = %d (first %q), want just the edited one", n, p.Chat.turns[0].prompt)
	}
	if c := g.runConfigs()[3].Prompt; strings.Contains(c, "one") || strings.Contains(c, "two") {
		t.Errorf("the edited prompt still carries the replaced turns: %q", c)
	}

	// Ctrl+N starts a new chat: the next prompt has no history.
	p.Chat.entry.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierControl})
	if p.Chat.Turns() != 0 || p.Chat.Welcome() == nil {
		t.Errorf("after Ctrl+N: %d turns, welcome shown %v", p.Chat.Turns(), p.Chat.Welcome() != nil)
	}
	finishedTurn(t, p, q, g, "fresh")
	if c := g.runConfigs()[4].Prompt; strings.Contains(c, "uno") {
		t.Errorf("a new chat's prompt carries the old conversation: %q", c)
	}
}

func TestChatAnswerIsSelectableWithCopyAndCodeBlocks(t *testing.T) {
	a := test.NewTempApp(t)
	v := NewChatView(true)
	w := test.NewTempWindow(t, v.Root)
	w.Resize(fyne.NewSize(700, 500))
	v.BeginTurn("code please", "")
	answer := "Here:\n```go\nfmt.Println(1)\n```\nDone."
	for _, piece := range []string{"Here:\n", "```go\nfmt", ".Println(1)\n```\n", "Done."} {
		v.AppendTokens([]engine.Token{{Text: piece, FromDraft: piece == "Done."}})
	}
	v.FinishTurn(fixedRecord(1, "ring", 100))
	var blocks []*lazyBlock
	for _, o := range v.turns[0].answer.Objects {
		if lb, ok := o.(*lazyBlock); ok {
			blocks = append(blocks, lb)
		}
	}
	if len(blocks) != 3 {
		t.Fatalf("the answer has %d blocks, want prose, code, prose", len(blocks))
	}
	for i, want := range []struct {
		text string
		code bool
	}{{"Here:\n", false}, {"fmt.Println(1)", true}, {"Done.", false}} {
		b := blocks[i]
		if b.sel == nil || !b.sel.Selectable || b.sel.Text != want.text {
			t.Errorf("block %d: selectable %v text %q, want a selectable %q", i, b.sel != nil && b.sel.Selectable, b.Text(), want.text)
			continue
		}
		if b.sel.TextStyle.Monospace != want.code || (b.bg != nil) != want.code {
			t.Errorf("block %d: monospace %v, tinted %v; want both %v", i, b.sel.TextStyle.Monospace, b.bg != nil, want.code)
		}
		for _, seg := range b.rt.Segments {
			if ts := seg.(*widget.TextSegment); ts.Style.TextStyle.Monospace != want.code {
				t.Errorf("block %d segment %q: monospace %v", i, ts.Text, ts.Style.TextStyle.Monospace)
			}
		}
	}
	test.Tap(v.turns[0].copyAnswer)
	if got := a.Clipboard().Content(); got != answer {
		t.Errorf("Copy put %q on the clipboard, want the answer %q", got, answer)
	}
	test.Tap(v.turns[0].copyPrompt)
	if got := a.Clipboard().Content(); got != "code please" {
		t.Errorf("Copy on the prompt put %q on the clipboard", got)
	}
	if !v.turns[0].user.Selectable {
		t.Error("the prompt is not selectable")
	}
}

func TestSplitBlocks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // "p:text" or "c:text"
	}{
		{"plain", []string{"p:plain"}},
		{"a\n```\nx\n```\nb", []string{"p:a\n", "c:x", "p:b"}},
		{"```py\nopen\n", []string{"c:open\n"}}, // unclosed fence runs to the end
		{"a\n````\n```\n````\n", []string{"p:a\n", "c:```"}},
		{"   ```\nindented\n   ```", []string{"c:indented"}},
		{"    ```\nfour spaces is code text\n", []string{"p:    ```\nfour spaces is code text\n"}},
	} {
		var got []string
		for _, b := range splitBlocks(tc.in, 0) {
			kind := "p:"
			if b.code {
				kind = "c:"
			}
			got = append(got, kind+tc.in[b.start:b.end])
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("splitBlocks(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	spans := []span{{text: "ab"}, {text: "cd", draft: true}, {text: "ef"}}
	if got := spansIn(spans, 1, 5); len(got) != 3 || got[0].text != "b" || got[1].text != "cd" || !got[1].draft || got[2].text != "e" {
		t.Errorf("spansIn = %+v", got)
	}
}

// templateEngine is a gate engine whose model declares its own Jinja
// chat template.
type templateEngine struct {
	*gateEngine
	own string
}

func (e templateEngine) Info() ModelInfo {
	return ModelInfo{Name: "jinja", Format: "fake", MaxSeq: 128, OwnTemplate: tokenizer.JinjaTemplate{Source: e.own}}
}

func TestChatUsesTheModelsOwnTemplateAndFallsBack(t *testing.T) {
	g := newGateEngine()
	own := "{% for m in messages %}[{{ m.role }}]{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
	p, q, _ := newTestPanel(t, templateEngine{g, own}, Options{})
	if got := p.Chat.template.Text; !strings.Contains(got, "own chat template") {
		t.Errorf("header = %q, want it to say the model's own template is used", got)
	}
	finishedTurn(t, p, q, g, "hello")
	if c := g.runConfigs()[0].Prompt; c != "[user]hello\n[assistant]" {
		t.Errorf("prompt = %q, want the model's template applied", c)
	}

	g2 := newGateEngine()
	bad := "{{ raise_exception('only user/assistant roles') }}"
	p2, q2, _ := newTestPanel(t, templateEngine{g2, bad}, Options{})
	finishedTurn(t, p2, q2, g2, "hello")
	if c := g2.runConfigs()[0]; c.Prompt != "hello" || c.Template != "" {
		t.Errorf("a failing template ran prompt %q template %q, want the raw prompt", c.Prompt, c.Template)
	}
	if got := p2.Chat.template.Text; !strings.HasPrefix(got, "Raw completion") || !strings.Contains(got, "only user/assistant roles") {
		t.Errorf("header after a failing template = %q, want raw completion and the reason", got)
	}
}

func TestPromptModeShowsRawWhenTheModelHasNoTemplate(t *testing.T) {
	p, _, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "plain", MaxSeq: 64}, 0), Options{})
	if !p.Controls.mode.Disabled() || !strings.HasPrefix(p.Controls.mode.Selected, "Raw completion") {
		t.Errorf("prompt choice = %q (disabled %v), want raw completion, disabled", p.Controls.mode.Selected, p.Controls.mode.Disabled())
	}
	if got := p.Chat.template.Text; !strings.Contains(got, "no chat template") {
		t.Errorf("header = %q", got)
	}
	if s := p.Controls.Settings(); s.Mode != ModeChat {
		t.Errorf("the saved mode changed to %q; showing raw must not change the setting", s.Mode)
	}
}

func TestAutorunPromptEntersHistory(t *testing.T) {
	p, q, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "fake"}, 0), Options{Autorun: "from the command line", MaxTokens: 5})
	q.until(t, "the autorun to end", func() bool { return len(p.Runs.Runs()) == 1 })
	if h := p.Chat.HistoryPrompts(); len(h) != 1 || h[0] != "from the command line" {
		t.Errorf("history after --autorun = %q", h)
	}
	if h := p.app.Preferences().StringList(prefHistory); len(h) != 1 {
		t.Errorf("saved history after --autorun = %q", h)
	}
}

func TestEscStopsTheRun(t *testing.T) {
	g := newGateEngine()
	p, q, _ := newTestPanel(t, g, Options{})
	p.Send("long")
	q.until(t, "the run to start", func() bool { return len(g.runConfigs()) == 1 })
	p.Chat.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	q.until(t, "the stopped run to end", func() bool { return len(p.Runs.Runs()) == 1 })
	if r := p.Runs.Runs()[0]; r.Stats.StopReason != "cancelled" {
		t.Errorf("stop reason after Esc = %q, want cancelled", r.Stats.StopReason)
	}
}

func TestThemeToggleIsSaved(t *testing.T) {
	p, _, _ := newTestPanel(t, newGateEngine(), Options{})
	var sel *widget.Select
	walkObjects(p.Content, func(o fyne.CanvasObject) {
		if s, ok := o.(*widget.Select); ok && s.Options[0] == themeChoices[0] {
			sel = s
		}
	})
	if sel == nil {
		t.Fatal("no theme choice in the window")
	}
	sel.SetSelected("Light")
	bg := p.app.Settings().Theme().Color(theme.ColorNameBackground, theme.VariantDark)
	if r, _, _, _ := bg.RGBA(); r < 0x8000 {
		t.Errorf("Light theme background %v is dark", bg)
	}
	if got := p.app.Preferences().String(prefTheme); got != "Light" {
		t.Errorf("saved theme = %q", got)
	}
	sel.SetSelected("Dark")
	bg = p.app.Settings().Theme().Color(theme.ColorNameBackground, theme.VariantLight)
	if r, _, _, _ := bg.RGBA(); r > 0x8000 {
		t.Errorf("Dark theme background %v is light", bg)
	}
}
