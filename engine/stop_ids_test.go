package engine

import (
	"slices"
	"strings"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/tokenizer"
)

func TestStopIDs(t *testing.T) {
	pieces := []string{"<unk>", "<s>", "</s>", "a", "<|eot_id|>", "<|im_end|>", "<|eom_id|>", "b"}
	tok, err := tokenizer.New(tokenizer.Vocab{Model: "llama", Tokens: pieces, Scores: make([]float32, len(pieces)),
		Types: []int32{2, 3, 3, 1, 3, 3, 3, 1}, BOS: 1, EOS: 2, UNK: 0})
	if err != nil {
		t.Fatal(err)
	}
	llama31 := "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{{ m.content }}<|eot_id|>{% endfor %}"
	for _, tc := range []struct {
		name    string
		meta    map[string]string
		format  string
		want    []int32
		wantErr string
	}{
		{"tokenizer EOS only", map[string]string{}, "", []int32{2}, ""},
		{"generation_config ids", map[string]string{loader.MetaEOSIDs: "2,6"}, "", []int32{2, 6}, ""},
		{"own template's end of turn", map[string]string{"chat_template": llama31}, "", []int32{2, 4}, ""},
		{"chatml by markers", map[string]string{"chat_template": "{{ '<|im_start|>' + m.content + '<|im_end|>' }}"}, "", []int32{2, 5}, ""},
		{"the run's chat format", map[string]string{}, "chatml", []int32{2, 5}, ""},
		{"all together, no duplicates", map[string]string{"chat_template": llama31, loader.MetaEOSIDs: "4,6,2"}, "", []int32{2, 4, 6}, ""},
		{"id outside the vocabulary", map[string]string{loader.MetaEOSIDs: "8", "path": "m"}, "", nil, "eos_token_id 8 is outside the vocabulary of 8 tokens"},
	} {
		got, err := stopIDs(tok, tc.meta, tc.format)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, %v; want an error saying %q", tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
