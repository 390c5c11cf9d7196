package ggufvocab

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/tokenizer"
	"rigscope/internal/fixtures"
)

func load(t *testing.T, path string) tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("gguf.Open(%q): %v", path, err)
	}
	defer f.Close()
	v, err := VocabFromGGUF(f)
	if err != nil {
		t.Fatalf("VocabFromGGUF(%q): %v", path, err)
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		t.Fatalf("tokenizer.New(vocab of %q): %v", path, err)
	}
	return tk
}

func TestGocoderGGUFReferencePrompts(t *testing.T) {
	path := fixtures.Path(t, "gocoder-14m.Q8_0.gguf")
	tk := load(t, path)
	var ref struct {
		Prompts []struct {
			Text string  `json:"prompt_text"`
			IDs  []int32 `json:"prompt_ids"`
		} `json:"prompts"`
	}
	fixtures.ReadJSON(t, "reference-public.json", &ref)
	pass, total := 0, 0
	for i, p := range ref.Prompts {
		if len(p.IDs) == 0 || p.IDs[0] != 1 {
			continue
		}
		total++
		if got := tk.Encode(p.Text, true); !equal(got, p.IDs) {
			t.Errorf("gguf: Encode(prompt %d, true) = %v..., want %v...", i, head(got), head(p.IDs))
			continue
		}
		pass++
	}
	t.Logf("gocoder-14m.Q8_0.gguf: %d/%d untruncated reference prompts encode exactly", pass, total)
	for _, x := range []string{"", " ", " leading", "tabs\t\t", "crlf\r\n", "runs    of   spaces", "héllo 世界 🦙🚀", "\n\n"} {
		if got := tk.Decode(tk.Encode(x, true)); got != x {
			t.Errorf("gguf: Decode(Encode(%q)) = %q", x, got)
		}
	}
}

// TestVocabVectors reproduces llama.cpp's tokenizer test vectors
// (models/vocab/*.gguf with .inp/.out), as tests/test-tokenizer-0 reads them.
func TestVocabVectors(t *testing.T) {
	dir := fixtures.Path(t, "vocab")
	files, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vocab files in %s (%v)", dir, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			inp, err := os.ReadFile(path + ".inp")
			if err != nil {
				t.Fatal(err)
			}
			outp, err := os.ReadFile(path + ".out")
			if err != nil {
				t.Fatal(err)
			}
			texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
			lines := strings.Split(strings.TrimRight(string(outp), "\n"), "\n")
			if len(texts) == len(lines)+1 && texts[len(texts)-1] == "" {
				texts = texts[:len(texts)-1]
			}
			if len(texts) != len(lines) {
				t.Fatalf("%s: %d inputs, %d output lines", name, len(texts), len(lines))
			}
			tk := load(t, path)
			pass := 0
			for i, text := range texts {
				want, err := parseIDs(lines[i])
				if err != nil {
					t.Fatalf("%s.out line %d: %v", name, i+1, err)
				}
				got := tk.Encode(text, false)
				if back := tk.Decode(got); back != text {
					t.Errorf("%s: Decode(Encode(%q)) = %q", name, text, back)
				}
				if !equal(got, want) {
					t.Errorf("%s: Encode(%q, false)\n got %v\nwant %v", name, text, got, want)
					continue
				}
				pass++
			}
			t.Logf("%s: %d/%d test vectors reproduced", name, pass, len(texts))
		})
	}
}

func parseIDs(line string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Fields(line) {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, err
		}
		out = append(out, int32(n))
	}
	return out, nil
}

func equal(a, b []int32) bool {
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

func head(a []int32) []int32 {
	if len(a) > 24 {
		return a[:24]
	}
	return a
}

func BenchmarkEncodeGPT2(b *testing.B) {
	path := fixtures.Path(b, "vocab/ggml-vocab-gpt-2.gguf")
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	v, err := VocabFromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		b.Fatal(err)
	}
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat(string(inp), 4)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.Encode(text, false)
	}
}
