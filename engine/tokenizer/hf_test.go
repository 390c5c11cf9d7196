package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// writeByteLevelHF writes a tiny Llama 3 style tokenizer.json (Split regex
// + ByteLevel without regex, ignore_merges, BOS through TemplateProcessing).
func writeByteLevelHF(t *testing.T, dir string, mergesAsPairs bool) {
	t.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[byteUnicode[b]] = b
	}
	vocab["he"], vocab["Ġt"], vocab["Ġthe"], vocab["llo"] = 256, 257, 258, 259
	var merges any = []string{"h e", "Ġ t", "Ġt he"}
	if mergesAsPairs {
		merges = [][2]string{{"h", "e"}, {"Ġ", "t"}, {"Ġt", "he"}}
	}
	j := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 260, "content": "<|begin_of_text|>", "special": true},
			{"id": 261, "content": "<|eot_id|>", "special": true},
		},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": reLlama3[0]}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing", "single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>", "type_id": 0}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": true},
	}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `{"bos_token": "<|begin_of_text|>", "eos_token": {"content": "<|eot_id|>"}}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadHFByteLevel(t *testing.T) {
	for _, pairs := range []bool{false, true} {
		dir := t.TempDir()
		writeByteLevelHF(t, dir, pairs)
		tk, err := LoadHF(dir)
		if err != nil {
			t.Fatalf("LoadHF(byte-level, pairs=%v): %v", pairs, err)
		}
		if tk.BOS() != 260 || tk.EOS() != 261 {
			t.Errorf("BOS %d EOS %d, want 260 261", tk.BOS(), tk.EOS())
		}
		// "hello" is split by the regex as one word; ignore_merges keeps
		// no whole-word token here, so it merges to he + l + l + o.
		got := tk.Encode("hello the<|eot_id|>", true)
		want := []int32{260, 256, 'l', 'l', 'o', 258, 261}
		if !equalIDs(got, want) {
			t.Errorf("Encode(%q, true) = %v, want %v", "hello the<|eot_id|>", got, want)
		}
		if got := tk.Encode("llo", false); !equalIDs(got, []int32{259}) {
			t.Errorf("Encode(llo) = %v, want [259] (ignore_merges keeps a whole-word token)", got)
		}
		for _, x := range awkwardTexts {
			if back := tk.Decode(tk.Encode(x, true)); back != x {
				t.Errorf("byte-level HF: Decode(Encode(%q)) = %q", x, back)
			}
		}
	}
}

func TestLoadHFFallsBackToTokenizerModel(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.model"), writeSPModel(tinySPM()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"add_bos_token": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := LoadHF(dir)
	if err != nil {
		t.Fatalf("LoadHF(dir with tokenizer.model): %v", err)
	}
	if got := tk.Encode("hello", true); !equalIDs(got, ids(tk, "▁hello")) {
		t.Errorf("Encode(hello, true) with add_bos_token false = %v, want [▁hello]", got)
	}
	if _, err := LoadHF(t.TempDir()); err == nil {
		t.Error("LoadHF(empty dir) succeeded, want an error")
	}
}
