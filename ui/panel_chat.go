package ui

import (
	"errors"
	"fmt"

	"rigscope/engine"
	"rigscope/engine/tokenizer"
)

// tokenizing is what the panel needs to count and encode a rendered
// conversation itself; *engine.Engine has it (the main package's adapter
// embeds it). Without it the engine encodes the prompt text.
type tokenizing interface {
	Tokenizer() (tokenizer.Tokenizer, error)
}

// ctxSized reports the KV cache positions of the loaded engine.
type ctxSized interface{ CtxLen() int }

// promptPlan is how the next prompt reaches the model.
type promptPlan struct {
	text     string  // what the model reads
	ids      []int32 // the text encoded when the panel encoded it (the model's own template writes BOS itself)
	template string  // RunConfig.Template: the built-in format, "" for raw or the model's own
	note     string  // what the chat header says
	warn     bool    // the note reports a failed template
}

// chatFormat names the format a chat-mode prompt is rendered in: the
// model's own Jinja template first, else the built-in one it is detected
// as; ok false when the model declares neither.
func (p *Panel) chatFormat() (label string, ok bool) {
	if p.info.OwnTemplate.Source != "" {
		return "the model's own chat template", true
	}
	if t, found := DetectTemplate(p.info.ChatTemplate); found {
		return "chat template " + t.Label + " (declared by the model)", true
	}
	return "", false
}

// plan renders msgs (the conversation ending with the new prompt) as the
// settings say: the model's chat template in chat mode, or the prompt alone
// as a raw completion. A template that fails falls back to raw completion,
// and the note says so.
func (p *Panel) plan(msgs []Message) (promptPlan, error) {
	last := ""
	if n := len(msgs); n > 0 {
		last = msgs[n-1].Content
	}
	raw := promptPlan{text: last, note: "Raw completion: the prompt alone, no chat template"}
	if p.Controls.Settings().Mode == ModeRaw {
		return raw, nil
	}
	label, ok := p.chatFormat()
	if !ok {
		raw.note = "Raw completion: the model declares no chat template (the prompt alone, no conversation)"
		return raw, nil
	}
	builtin := ""
	if t, found := DetectTemplate(p.info.ChatTemplate); found {
		builtin = t.Name
	}
	text, err := tokenizer.FormatChat(p.info.OwnTemplate, builtin, msgs, true)
	if errors.Is(err, tokenizer.ErrTemplate) {
		raw.note = fmt.Sprintf("Raw completion: %v", err)
		raw.warn = true
		return raw, nil
	}
	if err != nil {
		return promptPlan{}, err
	}
	pl := promptPlan{text: text, template: builtin, note: "Chat: " + label}
	if own := p.info.OwnTemplate.Source != ""; own && p.session != nil {
		if tk, ok := p.session.Engine().(tokenizing); ok {
			if tok, err := tk.Tokenizer(); err == nil && tok != nil {
				pl.ids = tok.Encode(text, false) // the template wrote BOS itself
			}
		}
	}
	return pl, nil
}

// countTokens is the number of tokens text encodes to, if the engine can
// tell.
func (p *Panel) countTokens(pl promptPlan) (int, bool) {
	if pl.ids != nil {
		return len(pl.ids), true
	}
	if p.session == nil {
		return 0, false
	}
	tk, ok := p.session.Engine().(tokenizing)
	if !ok {
		return 0, false
	}
	tok, err := tk.Tokenizer()
	if err != nil || tok == nil {
		return 0, false
	}
	return len(tok.Encode(pl.text, true)), true
}

// ctxLen is the context the engine holds (its KV cache), else the model's.
func (p *Panel) ctxLen() int {
	if p.session != nil {
		if c, ok := p.session.Engine().(ctxSized); ok && c.CtxLen() > 0 {
			return c.CtxLen()
		}
	}
	return p.info.MaxSeq
}

// updateChatInfo refreshes the chat header (the prompt format) and the
// context line (what the conversation plus the prompt being typed uses).
func (p *Panel) updateChatInfo() {
	if p.Chat == nil || p.Controls == nil {
		return
	}
	_, chatOK := p.chatFormat()
	p.Controls.SetChatAvailable(p.session == nil || chatOK)
	if p.session == nil {
		p.Chat.SetTemplateInfo("")
		p.Chat.SetContextInfo("")
		return
	}
	pl, err := p.plan(p.Chat.Conversation(p.Chat.Draft()))
	if err != nil {
		p.Chat.SetTemplateInfo("Chat: " + err.Error())
		return
	}
	p.Chat.SetTemplateInfo(pl.note)
	n, ok := p.countTokens(pl)
	ctx := p.ctxLen()
	switch {
	case !ok:
		p.Chat.SetContextInfo(fmt.Sprintf("context size %d tokens (this model has no tokenizer to count the prompt)", ctx))
	case ctx > 0:
		left := ctx - n
		msg := fmt.Sprintf("Context: %d of %d tokens used (%.0f%%)", n, ctx, 100*float64(n)/float64(ctx))
		if mt := p.Controls.Settings().MaxTokens; left < mt {
			msg += fmt.Sprintf(" · only %d left for the answer (max tokens %d)", max(left, 0), mt)
		}
		p.Chat.SetContextInfo(msg)
	default:
		p.Chat.SetContextInfo(fmt.Sprintf("Context: %d tokens", n))
	}
}

// Regenerate runs the last prompt again in place of its answer.
func (p *Panel) Regenerate() {
	if p.session == nil {
		return
	}
	if _, running := p.session.Running(); running {
		return
	}
	if prompt, ok := p.Chat.PopLast(); ok {
		p.Send(prompt)
	}
}

// runConfigFor freezes the settings for prompt, rendered with the
// conversation so far.
func (p *Panel) runConfigFor(prompt string) (engine.RunConfig, promptPlan, error) {
	s := p.Controls.Settings()
	if err := s.Validate(); err != nil {
		return engine.RunConfig{}, promptPlan{}, err
	}
	pl, err := p.plan(p.Chat.Conversation(prompt))
	if err != nil {
		return engine.RunConfig{}, promptPlan{}, err
	}
	cfg := s.RunConfig(pl.text, pl.template)
	cfg.PromptIDs = pl.ids
	return cfg, pl, nil
}
