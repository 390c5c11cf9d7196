package ui

import (
	"strings"

	"rigscope/engine/tokenizer"
)

// ChatTemplate is a chat format the panel can apply (the formatting itself
// is engine/tokenizer's ApplyTemplate). Name is the stored identifier
// (RunConfig.Template), Label what the panel shows.
type ChatTemplate struct {
	Name  string
	Label string
}

// Message is one turn of a conversation.
type Message = tokenizer.Message

// The chat templates the panel knows.
var (
	TemplateLlama3 = ChatTemplate{Name: tokenizer.TemplateLlama3, Label: "Llama 3"}
	TemplateChatML = ChatTemplate{Name: tokenizer.TemplateChatML, Label: "ChatML"}
	TemplateLlama2 = ChatTemplate{Name: tokenizer.TemplateLlama2, Label: "Llama 2"}
)

// Format renders msgs and opens the assistant's turn. The tokenizer adds
// BOS itself, so the text does not start with it.
func (t ChatTemplate) Format(msgs []Message) (string, error) {
	return tokenizer.ApplyTemplate(t.Name, msgs, true)
}

// DetectTemplate recognizes the template a model declares from its name
// ("llama3", "chatml", "llama2", as engine.ModelInfo reports it) or its raw
// template text (GGUF tokenizer.chat_template, or chat_template in
// tokenizer_config.json). ok is false when the model declares none or one
// the panel does not know.
func DetectTemplate(raw string) (ChatTemplate, bool) {
	name := strings.TrimSpace(raw)
	if name != tokenizer.TemplateLlama3 && name != tokenizer.TemplateChatML && name != tokenizer.TemplateLlama2 {
		name = tokenizer.DetectTemplate(raw, nil)
	}
	for _, t := range []ChatTemplate{TemplateLlama3, TemplateChatML, TemplateLlama2} {
		if t.Name == name {
			return t, true
		}
	}
	return ChatTemplate{}, false
}
