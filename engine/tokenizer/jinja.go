package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// ErrTemplate marks a model's own chat template that does not parse or
// render; callers fall back to raw completion and show the message.
var ErrTemplate = errors.New("the model's chat template failed")

// JinjaTemplate is a model's own chat template (tokenizer_config.json's
// chat_template, chat_template.jinja or GGUF tokenizer.chat_template) with
// the special-token strings it refers to as bos_token and eos_token.
type JinjaTemplate struct {
	Source string
	BOS    string // the BOS piece ("" when the model has none)
	EOS    string // the EOS piece ("" when the model has none)
}

// Render renders msgs through the template as Hugging Face's
// apply_chat_template does (messages, add_generation_prompt, bos_token,
// eos_token, raise_exception). The text may start with BOS when the
// template writes it: encode it without addSpecial then. Any failure,
// including the template calling raise_exception, wraps ErrTemplate.
func (j JinjaTemplate) Render(msgs []Message, addGenerationPrompt bool) (text string, err error) {
	defer func() { // the library must not take the process down on a template's bug
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("tokenizer: %w: rendering panicked: %v", ErrTemplate, r)
		}
	}()
	// The template is the only source: an in-memory loader, so {% include %}
	// cannot reach the filesystem.
	loader, err := loaders.NewMemoryLoader(map[string]string{"/chat_template": j.Source})
	if err != nil {
		return "", fmt.Errorf("tokenizer: %w: %v", ErrTemplate, err)
	}
	tpl, err := exec.NewTemplate("/chat_template", hfJinjaConfig(), loader, gonja.DefaultEnvironment)
	if err != nil {
		return "", fmt.Errorf("tokenizer: %w: parse: %v", ErrTemplate, err)
	}
	messages := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		// Python strings, which templates are written for, hold only valid
		// UTF-8: a bad byte becomes U+FFFD here, not somewhere in the library.
		messages[i] = map[string]any{"role": strings.ToValidUTF8(m.Role, "\uFFFD"), "content": strings.ToValidUTF8(m.Content, "\uFFFD")}
	}
	var raised string
	ctx := exec.NewContext(map[string]any{
		"messages":              messages,
		"add_generation_prompt": addGenerationPrompt,
		"bos_token":             j.BOS,
		"eos_token":             j.EOS,
		"raise_exception": func(msg string) (string, error) {
			raised = msg
			return "", errors.New(msg)
		},
	})
	out, err := tpl.ExecuteToString(ctx)
	switch {
	case raised != "":
		return "", fmt.Errorf("tokenizer: %w: it raised %q", ErrTemplate, raised)
	case err != nil:
		return "", fmt.Errorf("tokenizer: %w: render: %v", ErrTemplate, err)
	}
	return out, nil
}

// hfJinjaConfig is the Jinja environment transformers renders chat
// templates in: trim_blocks and lstrip_blocks on.
func hfJinjaConfig() *config.Config {
	c := config.New()
	c.TrimBlocks = true
	c.LeftStripBlocks = true
	return c
}

// TurnEndPieces lists the end-of-turn tokens among pieces that appear in
// the template's text (e.g. <|eot_id|>, <|im_end|>, <end_of_turn>): they
// end generation as EOS does.
func (j JinjaTemplate) TurnEndPieces() []string {
	var found []string
	for _, p := range turnEndPieces {
		if strings.Contains(j.Source, p) {
			found = append(found, p)
		}
	}
	return found
}

// turnEndPieces are the end-of-turn markers of the chat formats in use.
var turnEndPieces = []string{"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<|endoftext|>", "<｜end▁of▁sentence｜>"}

// FormatChat renders msgs for a model: through its own template when it
// declares one (own.Source != ""), else in the built-in format named
// builtin (llama3, chatml or llama2, see ApplyTemplate). An error from the
// model's own template wraps ErrTemplate: the caller then runs the text as
// a raw completion and shows the error, it does not guess another format.
func FormatChat(own JinjaTemplate, builtin string, msgs []Message, addGenerationPrompt bool) (string, error) {
	if own.Source != "" {
		return own.Render(msgs, addGenerationPrompt)
	}
	return ApplyTemplate(builtin, msgs, addGenerationPrompt)
}

// PieceIDs returns the ids of t whose vocabulary entry is one of pieces,
// in vocabulary order.
func PieceIDs(t Tokenizer, pieces []string) []int32 {
	var ids []int32
	if tt, ok := t.(*tok); ok {
		for _, p := range pieces {
			if id, found := tt.ids[p]; found {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	for i := range t.VocabSize() {
		if slices.Contains(pieces, t.Piece(int32(i))) {
			ids = append(ids, int32(i))
		}
	}
	return ids
}

// BuiltinTurnEnd is the end-of-turn piece of a built-in format ("" for
// llama2, whose turns end with EOS).
func BuiltinTurnEnd(name string) string {
	return map[string]string{TemplateLlama3: "<|eot_id|>", TemplateChatML: "<|im_end|>"}[name]
}
