package ui

import "strings"

// ChatTemplate formats a conversation into the prompt text a model was
// trained on. Name is the stored identifier (RunConfig.Template), Label what
// the panel shows.
type ChatTemplate struct {
	Name  string
	Label string
	// Format renders msgs and opens the assistant's turn. The tokenizer adds
	// BOS itself, so templates do not include it.
	Format func(msgs []Message) string
}

// Message is one turn of a conversation.
type Message struct {
	Role    string // system | user | assistant
	Content string
}

// The chat templates the panel knows.
var (
	TemplateLlama3 = ChatTemplate{Name: "llama3", Label: "Llama 3", Format: formatLlama3}
	TemplateChatML = ChatTemplate{Name: "chatml", Label: "ChatML", Format: formatChatML}
	TemplateLlama2 = ChatTemplate{Name: "llama2", Label: "Llama 2", Format: formatLlama2}
)

// DetectTemplate recognizes the template a model declares from its name
// ("llama3", "chatml", "llama2", as engine.ModelInfo reports it) or its raw
// template text (GGUF tokenizer.chat_template, or chat_template in
// tokenizer_config.json) by the markers each format uses. ok is false when
// the model declares none or one the panel does not know.
func DetectTemplate(raw string) (ChatTemplate, bool) {
	switch {
	case raw == "":
		return ChatTemplate{}, false
	case raw == TemplateLlama3.Name:
		return TemplateLlama3, true
	case raw == TemplateChatML.Name:
		return TemplateChatML, true
	case raw == TemplateLlama2.Name:
		return TemplateLlama2, true
	case strings.Contains(raw, "<|start_header_id|>"):
		return TemplateLlama3, true
	case strings.Contains(raw, "<|im_start|>"):
		return TemplateChatML, true
	case strings.Contains(raw, "[INST]"):
		return TemplateLlama2, true
	}
	return ChatTemplate{}, false
}

func formatLlama3(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n")
		b.WriteString(strings.TrimSpace(m.Content) + "<|eot_id|>")
	}
	b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	return b.String()
}

func formatChatML(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	b.WriteString("<|im_start|>assistant\n")
	return b.String()
}

// formatLlama2 follows Meta's reference: the system prompt sits inside the
// first [INST] block, each exchange closes with </s> and the next opens with <s>.
func formatLlama2(msgs []Message) string {
	var b strings.Builder
	system := ""
	first := true
	for _, m := range msgs {
		switch m.Role {
		case "system":
			system = m.Content
		case "user":
			if !first {
				b.WriteString("<s>")
			}
			b.WriteString("[INST] ")
			if system != "" {
				b.WriteString("<<SYS>>\n" + system + "\n<</SYS>>\n\n")
				system = ""
			}
			b.WriteString(strings.TrimSpace(m.Content) + " [/INST]")
			first = false
		case "assistant":
			b.WriteString(" " + strings.TrimSpace(m.Content) + " </s>")
		}
	}
	return b.String()
}
