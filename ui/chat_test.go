//go:build ci

package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
)

func chatTokens() []engine.Token {
	return []engine.Token{
		{Text: "The "}, {Text: "quick ", FromDraft: true}, {Text: "brown ", FromDraft: true},
		{Text: "fox "}, {Text: "jumps.", FromDraft: true},
	}
}

func TestChatGolden(t *testing.T) {
	test.NewTempApp(t)
	v := NewChatView(true)
	v.SetTemplateInfo("Chat template: ChatML (declared by the model)")
	w := test.NewTempWindow(t, v.Root)
	w.Resize(fyne.NewSize(640, 360))
	v.BeginTurn("hello", "ring TP=1")
	v.AppendTokens(chatTokens())
	v.FinishTurn(fixedRecord(1, "ring", 101.5))
	test.AssertRendersToMarkup(t, "chat.xml", w.Canvas())
}

// segments returns answer 0's segments as "text|draft" strings.
func segments(v *ChatView) []string {
	var out []string
	for _, o := range v.turns[0].answer.Objects {
		for _, s := range o.(*lazyBlock).rt.Segments {
			ts := s.(*widget.TextSegment)
			out = append(out, ts.Text+"|"+string(ts.Style.ColorName))
		}
	}
	return out
}

func TestChatMarksDraftTokens(t *testing.T) {
	test.NewTempApp(t)
	v := NewChatView(true)
	v.BeginTurn("q", "")
	v.AppendTokens(chatTokens()[:2])
	v.AppendTokens(chatTokens()[2:])
	p := string(theme.ColorNamePrimary)
	f := string(theme.ColorNameForeground)
	want := []string{"The |" + f, "quick brown |" + p, "fox |" + f, "jumps.|" + p}
	if got := segments(v); strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("segments after streaming = %q, want %q", got, want)
	}
	v.SetMarkDrafts(false)
	if got := segments(v); strings.Join(got, ";") != strings.ReplaceAll("The |F;quick brown |F;fox |F;jumps.|F", "F", f) {
		t.Errorf("segments with marking off = %q, want no colour", got)
	}
	if got := v.AnswerText(0); got != "The quick brown fox jumps." {
		t.Errorf("AnswerText(0) = %q", got)
	}
}

func TestChatLongAnswerSplitsIntoBlocks(t *testing.T) {
	test.NewTempApp(t)
	v := NewChatView(true)
	v.BeginTurn("q", "")
	var toks []engine.Token
	for i := range 2000 {
		toks = append(toks, engine.Token{Text: "word\n", FromDraft: i%2 == 0})
	}
	v.AppendTokens(toks)
	blocks := len(v.turns[0].answer.Objects)
	if blocks < 4 {
		t.Errorf("a %d-byte answer sits in %d blocks, want it split near every %d bytes", 2000*5, blocks, blocks)
	}
	if got := v.AnswerText(0); len(got) != 10000 {
		t.Errorf("answer holds %d bytes, want 10000", len(got))
	}
}

func TestChatPromptHistory(t *testing.T) {
	test.NewTempApp(t)
	v := NewChatView(true)
	var sent []string
	v.OnSend = func(p string) { sent = append(sent, p) }
	for _, p := range []string{"first", "second"} {
		test.Type(v.entry, p)
		v.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	}
	if strings.Join(sent, ",") != "first,second" {
		t.Fatalf("sent = %q, want first,second", sent)
	}
	for _, step := range []struct {
		key  fyne.KeyName
		want string
	}{{fyne.KeyUp, "second"}, {fyne.KeyUp, "first"}, {fyne.KeyUp, "first"}, {fyne.KeyDown, "second"}, {fyne.KeyDown, ""}} {
		v.entry.TypedKey(&fyne.KeyEvent{Name: step.key})
		if v.entry.Text != step.want {
			t.Errorf("after %s the entry holds %q, want %q", step.key, v.entry.Text, step.want)
		}
	}
}

func TestStatsLine(t *testing.T) {
	rec := fixedRecord(1, "ring", 101.5)
	want := "101.5 tok/s · 64 tokens · 12 ms to first token · stop: max_tokens · 55% of drafts accepted · mean accept len 3.20 · pays 1.42x (1.31–1.55)"
	if got := StatsLine(rec); got != want {
		t.Errorf("StatsLine = %q, want %q", got, want)
	}
	rec.Config.Drafter.Kind = DrafterNone
	rec.Err = "boom"
	if got := StatsLine(rec); strings.Contains(got, "accept") || !strings.HasSuffix(got, "error: boom") {
		t.Errorf("StatsLine without drafter, with error = %q", got)
	}
}
