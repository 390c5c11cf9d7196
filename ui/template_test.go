//go:build ci

package ui

import "testing"

func TestDetectTemplate(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string // template name, "" = none
	}{
		{"", ""},
		{"llama3", "llama3"},
		{"chatml", "chatml"},
		{"{% for message in messages %}{{'<|start_header_id|>' + message['role'] + '<|end_header_id|>'}}", "llama3"},
		{"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n'}}", "chatml"},
		{"{{ bos_token + '[INST] ' + content + ' [/INST]' }}", "llama2"},
		{"{{ messages }}", ""},
	} {
		got, ok := DetectTemplate(tc.raw)
		if got.Name != tc.want || ok != (tc.want != "") {
			t.Errorf("DetectTemplate(%q) = %q, %v; want %q", tc.raw, got.Name, ok, tc.want)
		}
	}
}

func TestTemplateFormat(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello."}, {Role: "user", Content: "Bye"}}
	for _, tc := range []struct {
		t    ChatTemplate
		want string
	}{
		{TemplateLlama3, "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
			"<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>" +
			"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{TemplateChatML, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n" +
			"<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
		{TemplateLlama2, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Bye [/INST]"},
	} {
		if got, err := tc.t.Format(msgs); err != nil || got != tc.want {
			t.Errorf("%s.Format(%v) =\n%q\nwant\n%q", tc.t.Name, msgs, got, tc.want)
		}
	}
}
