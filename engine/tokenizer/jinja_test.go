package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The conversations the templates are rendered with. The wanted texts are
// what Python jinja2 3.1.6 renders in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks).
var (
	convMulti = []Message{
		{Role: "system", Content: " Be brief. "}, {Role: "user", Content: "Hi there "},
		{Role: "assistant", Content: " Hello!"}, {Role: "user", Content: "2+2?"},
	}
	convSingle = []Message{{Role: "user", Content: "Hi"}}
	convAlt    = []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello!"}, {Role: "user", Content: "2+2?"}}
)

func loadTemplate(t testing.TB, name, bos, eos string) JinjaTemplate {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "templates", name))
	if err != nil {
		t.Fatal(err)
	}
	return JinjaTemplate{Source: string(b), BOS: bos, EOS: eos}
}

func TestJinjaTemplateRender(t *testing.T) {
	const llamaSys = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
	const qwenDefault = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
	for _, tc := range []struct {
		file, bos, eos string
		msgs           []Message
		addGen         bool
		want           string
	}{
		{"llama3.1.jinja", "<|begin_of_text|>", "<|eot_id|>", convMulti, true,
			llamaSys + "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3.1.jinja", "<|begin_of_text|>", "<|eot_id|>", convSingle, false,
			llamaSys + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"},
		{"qwen2.5.jinja", "", "<|im_end|>", convMulti, true,
			"<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\nHi there <|im_end|>\n<|im_start|>assistant\n Hello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"},
		{"qwen2.5.jinja", "", "<|im_end|>", convSingle, false,
			qwenDefault + "<|im_start|>user\nHi<|im_end|>\n"},
		{"qwen2.5.jinja", "", "<|im_end|>", convAlt, true,
			qwenDefault + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"},
		{"mistral-instruct.jinja", "<s>", "</s>", convAlt, true,
			"<s>[INST] Hi [/INST]Hello!</s>[INST] 2+2? [/INST]"},
		{"mistral-instruct.jinja", "<s>", "</s>", convSingle, false, "<s>[INST] Hi [/INST]"},
		{"namespace-strip.jinja", "", "", convMulti, true,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"},
		{"namespace-strip.jinja", "", "", convAlt, false,
			"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"},
	} {
		got, err := loadTemplate(t, tc.file, tc.bos, tc.eos).Render(tc.msgs, tc.addGen)
		if err != nil {
			t.Errorf("%s (%d messages, gen %v): %v", tc.file, len(tc.msgs), tc.addGen, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s (%d messages, gen %v):\n got %q\nwant %q", tc.file, len(tc.msgs), tc.addGen, got, tc.want)
		}
	}
}

func TestJinjaTemplateFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		tmpl JinjaTemplate
		msgs []Message
		want string
	}{
		{"raise_exception", loadTemplate(t, "mistral-instruct.jinja", "<s>", "</s>"), convMulti,
			`it raised "Conversation roles must alternate user/assistant/user/assistant/..."`},
		{"parse error", JinjaTemplate{Source: "{% for m in messages %}{{ m.content }}"}, convSingle, "parse"},
		{"unknown filter", JinjaTemplate{Source: "{{ messages | no_such_filter }}"}, convSingle, "no_such_filter"},
	} {
		got, err := tc.tmpl.Render(tc.msgs, true)
		if err == nil {
			t.Errorf("%s: rendered %q, want an error", tc.name, got)
			continue
		}
		if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want ErrTemplate saying %q", tc.name, err, tc.want)
		}
	}
}

func TestJinjaTurnEndPieces(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"llama3.1.jinja", "<|eot_id|>"},
		{"qwen2.5.jinja", "<|im_end|>"},
		{"mistral-instruct.jinja", ""},
	} {
		got := strings.Join(loadTemplate(t, tc.file, "", "").TurnEndPieces(), ",")
		if got != tc.want {
			t.Errorf("%s: turn ends %q, want %q", tc.file, got, tc.want)
		}
	}
}

// FuzzJinjaTemplateRender renders the real templates with arbitrary message
// text and roles: it must return text or an ErrTemplate error, never panic,
// and a rendered chat contains each message's content.
func FuzzJinjaTemplateRender(f *testing.F) {
	tmpls := []JinjaTemplate{
		loadTemplate(f, "llama3.1.jinja", "<|begin_of_text|>", "<|eot_id|>"),
		loadTemplate(f, "qwen2.5.jinja", "", "<|im_end|>"),
		loadTemplate(f, "mistral-instruct.jinja", "<s>", "</s>"),
		loadTemplate(f, "namespace-strip.jinja", "", ""),
	}
	f.Add("user", "Hi", "assistant", "{{ 1 }}{% if %}")
	f.Add("system", "", "tool", "\x00\xff</s>")
	f.Fuzz(func(t *testing.T, role1, content1, role2, content2 string) {
		msgs := []Message{{Role: role1, Content: content1}, {Role: role2, Content: content2}}
		for _, j := range tmpls {
			text, err := j.Render(msgs, true)
			if err != nil && !errors.Is(err, ErrTemplate) {
				t.Fatalf("error %v does not wrap ErrTemplate", err)
			}
			if err == nil && role1 == "user" && !strings.Contains(text, strings.TrimSpace(strings.ToValidUTF8(content1, "\uFFFD"))) {
				t.Fatalf("rendered %q lacks the user's content %q", text, content1)
			}
		}
	})
}

func TestFormatChat(t *testing.T) {
	own := loadTemplate(t, "mistral-instruct.jinja", "<s>", "</s>")
	for _, tc := range []struct {
		name    string
		own     JinjaTemplate
		builtin string
		msgs    []Message
		want    string
		wantErr error
	}{
		{"own template wins", own, TemplateChatML, convSingle, "<s>[INST] Hi [/INST]", nil},
		{"no template: built-in", JinjaTemplate{}, TemplateChatML, convSingle, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", nil},
		{"own template fails: no built-in guess", own, TemplateChatML, convMulti, "", ErrTemplate},
	} {
		got, err := FormatChat(tc.own, tc.builtin, tc.msgs, true)
		if got != tc.want || !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
