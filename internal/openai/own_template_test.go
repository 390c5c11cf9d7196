package openai

import (
	"fmt"
	"strings"
	"testing"

	"rigscope/engine/tokenizer"
)

// TestOwnChatTemplate: the model's own Jinja template renders the chat (it
// writes BOS itself, so Encode adds none); one that fails refuses the
// request with the template's reason and the ways around it.
func TestOwnChatTemplate(t *testing.T) {
	const mistral = "{{ bos_token }}{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('roles must alternate') }}{% endif %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]{% else %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}"
	for _, tc := range []struct {
		name, body string
		status     int
		want       string // the rendered prompt, or part of the error message
	}{
		{"renders", `{"messages":[{"role":"user","content":"Hi"}]}`, 200, "<s>[INST] Hi [/INST]"},
		{"raise_exception", `{"messages":[{"role":"system","content":"x"},{"role":"user","content":"Hi"}]}`, 400,
			`chat template failed: it raised \"roles must alternate\"; send the text to /v1/completions`},
	} {
		f := &fakeEngine{script: tokens("ok")}
		opts := testOptions()
		opts.OwnTemplate = tokenizer.JinjaTemplate{Source: mistral, BOS: "<s>", EOS: "</s>"}
		w, _ := do(t, newTestServer(t, f, opts), "POST", "/v1/chat/completions", tc.body)
		if w.Code != tc.status {
			t.Errorf("%s: status %d %s, want %d", tc.name, w.Code, w.Body, tc.status)
			continue
		}
		if tc.status != 200 {
			if !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("%s: body %s, want it to say %s", tc.name, w.Body, tc.want)
			}
			continue
		}
		want := byteTok{}.Encode(tc.want, false)
		if fmt.Sprint(f.cfgs[0].PromptIDs) != fmt.Sprint(want) {
			t.Errorf("%s: prompt %v, want %q without an added BOS: %v", tc.name, f.cfgs[0].PromptIDs, tc.want, want)
		}
	}
}
