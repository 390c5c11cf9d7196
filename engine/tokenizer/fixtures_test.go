package tokenizer

import (
	"path/filepath"
	"testing"

	"rigscope/internal/fixtures"
)

// referencePrompt is one prompt of models/reference-public.json.
type referencePrompt struct {
	Text string  `json:"prompt_text"`
	IDs  []int32 `json:"prompt_ids"`
}

// loadReference reads the untruncated prompts (those starting with BOS=1).
func loadReference(t *testing.T) []referencePrompt {
	t.Helper()
	var ref struct {
		Prompts []referencePrompt `json:"prompts"`
	}
	fixtures.ReadJSON(t, "reference-public.json", &ref)
	var out []referencePrompt
	for _, p := range ref.Prompts {
		if len(p.IDs) > 0 && p.IDs[0] == 1 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("reference-public.json: no untruncated prompts")
	}
	return out
}

// gocoderSources loads the gocoder tokenizer from every file form.
func gocoderSources(t *testing.T) map[string]Tokenizer {
	t.Helper()
	hfDir := fixtures.Path(t, "gocoder-14m-hf")
	out := map[string]Tokenizer{}
	var err error
	if out["hf-tokenizer.json"], err = LoadHF(hfDir); err != nil {
		t.Fatalf("LoadHF(%q): %v", hfDir, err)
	}
	model := filepath.Join(hfDir, "tokenizer.model")
	if out["hf-tokenizer.model"], err = LoadSentencePieceModel(model); err != nil {
		t.Fatalf("LoadSentencePieceModel(%q): %v", model, err)
	}
	bin := fixtures.Path(t, "gocoder-draft-1m.tokenizer.bin")
	if out["llama2c-tokenizer.bin"], err = LoadLlama2C(bin, 4096); err != nil {
		t.Fatalf("LoadLlama2C(%q, 4096): %v", bin, err)
	}
	return out
}

// awkwardTexts must survive decode(encode(x)).
var awkwardTexts = []string{
	"",
	" ",
	"   ",
	" leading space",
	"trailing space ",
	"tabs\tand\t\ttabs",
	"crlf\r\nline\rcr\n",
	"\n\n\nnewlines\n",
	"runs     of      spaces",
	"non-ASCII: héllo wörld, naïve café, Ελληνικά, русский, 日本語, 한국어",
	"emoji 🦙🚀 😶‍🌫️ ✅ and 👍🏽",
	"func main() {\n\tfmt.Println(\"héllo, 世界\")\n}\n",
	"mixed\t \t \n \r\n  end",
	"\x00control\x01\x7f",
}

func TestReferencePromptsEncode(t *testing.T) {
	prompts := loadReference(t)
	for name, tk := range gocoderSources(t) {
		t.Run(name, func(t *testing.T) {
			pass := 0
			for i, p := range prompts {
				got := tk.Encode(p.Text, true)
				if !equalIDs(got, p.IDs) {
					t.Errorf("%s: Encode(prompt %d, true): first difference at %d\n got %v\nwant %v", name, i, firstDiff(got, p.IDs), head(got), head(p.IDs))
					continue
				}
				pass++
			}
			t.Logf("%s: %d/%d untruncated reference prompts encode exactly", name, pass, len(prompts))
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for name, tk := range gocoderSources(t) {
		for _, x := range awkwardTexts {
			for _, special := range []bool{false, true} {
				ids := tk.Encode(x, special)
				if got := tk.Decode(ids); got != x {
					t.Errorf("%s: Decode(Encode(%q, %v)) = %q (ids %v)", name, x, special, got, ids)
				}
			}
		}
	}
}

func TestSourcesAgree(t *testing.T) {
	src := gocoderSources(t)
	ref := src["hf-tokenizer.model"]
	for name, tk := range src {
		if tk.VocabSize() != ref.VocabSize() || tk.BOS() != 1 || tk.EOS() != 2 {
			t.Errorf("%s: VocabSize %d BOS %d EOS %d, want %d 1 2", name, tk.VocabSize(), tk.BOS(), tk.EOS(), ref.VocabSize())
		}
		for _, x := range awkwardTexts {
			if a, b := tk.Encode(x, true), ref.Encode(x, true); !equalIDs(a, b) {
				t.Errorf("%s: Encode(%q) = %v, tokenizer.model gives %v", name, x, a, b)
			}
		}
	}
}

func TestLlama2Tokenizer(t *testing.T) {
	dir := fixtures.Path(t, "llama2-tokenizer")
	model, err := LoadSentencePieceModel(filepath.Join(dir, "tokenizer.model"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := LoadLlama2C(filepath.Join(dir, "tokenizer.bin"), 32000)
	if err != nil {
		t.Fatal(err)
	}
	for name, tk := range map[string]Tokenizer{"tokenizer.model": model, "tokenizer.bin": bin} {
		if tk.VocabSize() != 32000 || tk.BOS() != 1 || tk.EOS() != 2 {
			t.Errorf("%s: VocabSize %d BOS %d EOS %d, want 32000 1 2", name, tk.VocabSize(), tk.BOS(), tk.EOS())
		}
		for _, x := range awkwardTexts {
			ids := tk.Encode(x, true)
			if got := tk.Decode(ids); got != x {
				t.Errorf("llama2 %s: Decode(Encode(%q)) = %q (ids %v)", name, x, got, ids)
			}
		}
	}
	// Known Llama 2 encodings (sentencepiece, add_bos).
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"Hello world", []int32{1, 15043, 3186}},
		{" Hello world", []int32{1, 29871, 15043, 3186}},
	} {
		for name, tk := range map[string]Tokenizer{"tokenizer.model": model, "tokenizer.bin": bin} {
			if got := tk.Encode(c.text, true); !equalIDs(got, c.want) {
				t.Errorf("llama2 %s: Encode(%q, true) = %v, want %v", name, c.text, got, c.want)
			}
		}
	}
	for _, x := range awkwardTexts {
		if a, b := model.Encode(x, true), bin.Encode(x, true); !equalIDs(a, b) {
			t.Errorf("llama2: Encode(%q): tokenizer.model %v, tokenizer.bin %v", x, a, b)
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func head(a []int32) []int32 {
	if len(a) > 24 {
		return a[:24]
	}
	return a
}

func BenchmarkEncodeGocoder(b *testing.B) {
	hfDir := fixtures.Path(b, "gocoder-14m-hf")
	tk, err := LoadHF(hfDir)
	if err != nil {
		b.Fatal(err)
	}
	var ref struct {
		Prompts []referencePrompt `json:"prompts"`
	}
	fixtures.ReadJSON(b, "reference-public.json", &ref)
	var sb []byte
	for _, p := range ref.Prompts {
		sb = append(sb, p.Text...)
	}
	text := string(sb)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.Encode(text, true)
	}
}
