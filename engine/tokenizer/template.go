package tokenizer

import (
	"fmt"
	"strings"
)

// Message is one chat turn.
type Message struct {
	Role    string // "system", "user", "assistant" (llama3/chatml accept others, e.g. "tool")
	Content string
}

// Chat template names ApplyTemplate knows.
const (
	TemplateLlama3 = "llama3"
	TemplateChatML = "chatml"
	TemplateLlama2 = "llama2"
)

// DetectTemplate names the chat format of a model from its Jinja chat
// template (tokenizer.chat_template / tokenizer_config.json) by markers it
// contains; with no template it looks for the marker tokens in t's
// vocabulary (t may be nil). It returns "" when it cannot tell.
func DetectTemplate(chatTemplateJinja string, t Tokenizer) string {
	switch {
	case strings.Contains(chatTemplateJinja, "<|start_header_id|>"):
		return TemplateLlama3
	case strings.Contains(chatTemplateJinja, "<|im_start|>"):
		return TemplateChatML
	case strings.Contains(chatTemplateJinja, "[INST]"):
		return TemplateLlama2
	case chatTemplateJinja != "" || t == nil:
		return ""
	}
	switch {
	case hasPiece(t, "<|start_header_id|>"):
		return TemplateLlama3
	case hasPiece(t, "<|im_start|>"):
		return TemplateChatML
	}
	return ""
}

func hasPiece(t Tokenizer, piece string) bool {
	if tt, ok := t.(*tok); ok {
		_, found := tt.ids[piece]
		return found
	}
	for i := 0; i < t.VocabSize(); i++ {
		if t.Piece(int32(i)) == piece {
			return true
		}
	}
	return false
}

// ApplyTemplate renders msgs in the named chat format, as llama.cpp's
// llama_chat_apply_template does: the text does not start with BOS (encode
// it with addSpecial to get one). With addGenerationPrompt the text ends
// with the header of an assistant turn (llama2 prompts always end ready for
// the assistant).
func ApplyTemplate(name string, msgs []Message, addGenerationPrompt bool) (string, error) {
	for i, m := range msgs {
		if m.Role == "" {
			return "", fmt.Errorf("tokenizer: chat template %s: message %d has no role", name, i)
		}
	}
	var sb strings.Builder
	switch name {
	case TemplateLlama3:
		for _, m := range msgs {
			sb.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
		}
		if addGenerationPrompt {
			sb.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
	case TemplateChatML:
		for _, m := range msgs {
			sb.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
		if addGenerationPrompt {
			sb.WriteString("<|im_start|>assistant\n")
		}
	case TemplateLlama2:
		return applyLlama2(msgs)
	default:
		return "", fmt.Errorf("tokenizer: unknown chat template %q (want llama3, chatml or llama2)", name)
	}
	return sb.String(), nil
}

// applyLlama2 writes Meta's Llama 2 chat format: a system message goes
// inside the first [INST] block; each assistant reply ends with </s> and
// the next user turn starts with <s>.
func applyLlama2(msgs []Message) (string, error) {
	var sb strings.Builder
	system := ""
	first := true
	for i, m := range msgs {
		switch m.Role {
		case "system":
			if i != 0 {
				return "", fmt.Errorf("tokenizer: chat template llama2: system message at %d, only the first may be one", i)
			}
			system = strings.TrimSpace(m.Content)
		case "user":
			if !first {
				sb.WriteString("<s>")
			}
			sb.WriteString("[INST] ")
			if system != "" {
				sb.WriteString("<<SYS>>\n" + system + "\n<</SYS>>\n\n")
				system = ""
			}
			sb.WriteString(strings.TrimSpace(m.Content) + " [/INST]")
			first = false
		case "assistant":
			sb.WriteString(" " + strings.TrimSpace(m.Content) + " </s>")
		default:
			return "", fmt.Errorf("tokenizer: chat template llama2: message %d: role %q (want system, user or assistant)", i, m.Role)
		}
	}
	return sb.String(), nil
}
