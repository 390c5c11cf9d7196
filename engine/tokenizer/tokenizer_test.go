package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// tinySPM is a small SentencePiece vocabulary with byte fallback.
func tinySPM() Vocab {
	v := Vocab{Model: "llama", UNK: 0, BOS: 1, EOS: 2, AddBOS: true, AddSpacePrefix: true}
	add := func(p string, score float32, typ int32) {
		v.Tokens = append(v.Tokens, p)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	add("<unk>", 0, TypeUnknown)
	add("<s>", 0, TypeControl)
	add("</s>", 0, TypeControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, TypeByte)
	}
	// Merged pieces score higher the earlier they were learned.
	for i, p := range []string{"▁▁", "he", "ll", "▁he", "llo", "▁hello", "▁w", "or", "▁wor", "ld", "▁world"} {
		add(p, -float32(i), TypeNormal)
	}
	for _, p := range []string{"▁", "h", "e", "l", "o", "w", "r", "d", "é"} {
		add(p, -100, TypeNormal)
	}
	return v
}

// tinyByteBPE is a small GPT-2 style byte-level vocabulary.
func tinyByteBPE() Vocab {
	v := Vocab{Model: "gpt2", Pre: "gpt-2", BOS: -1, EOS: -1, UNK: -1}
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, byteUnicode[b])
	}
	v.Tokens = append(v.Tokens, "he", "Ġt", "Ġthe", "<|endoftext|>")
	v.Types = make([]int32, len(v.Tokens))
	for i := range v.Types {
		v.Types[i] = TypeNormal
	}
	v.Types[len(v.Types)-1] = TypeControl
	v.EOS = int32(len(v.Tokens) - 1)
	v.Merges = []string{"h e", "Ġ t", "Ġt he"}
	return v
}

func mustNew(t testing.TB, v Vocab) Tokenizer {
	t.Helper()
	tk, err := New(v)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tk
}

func ids(tk Tokenizer, pieces ...string) []int32 {
	tt := tk.(*tok)
	out := make([]int32, len(pieces))
	for i, p := range pieces {
		id, ok := tt.ids[p]
		if !ok {
			panic("no piece " + p)
		}
		out[i] = id
	}
	return out
}

func TestEncodeSPM(t *testing.T) {
	tk := mustNew(t, tinySPM())
	for _, c := range []struct {
		text    string
		special bool
		want    []string
	}{
		{"hello world", true, []string{"<s>", "▁hello", "▁world"}},
		{"hello world", false, []string{"▁hello", "▁world"}},
		{"", true, []string{"<s>"}},
		{"", false, nil},
		{" hello", false, []string{"▁▁", "he", "llo"}},
		{"hello\n", false, []string{"▁hello", "<0x0A>"}},
		{"hé", false, []string{"▁", "h", "é"}},
		{"h😀", false, []string{"▁", "h", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"}},
		{"hello</s>world", false, []string{"▁hello", "</s>", "▁world"}},
	} {
		got := tk.Encode(c.text, c.special)
		want := ids(tk, c.want...)
		if !equalIDs(got, want) {
			t.Errorf("Encode(%q, %v) = %v, want %v (%q)", c.text, c.special, got, want, c.want)
		}
	}
}

func TestEncodeByteBPE(t *testing.T) {
	tk := mustNew(t, tinyByteBPE())
	for _, c := range []struct {
		text string
		want []string
	}{
		{"he the", []string{"he", "Ġthe"}},
		{" the<|endoftext|>", []string{"Ġthe", "<|endoftext|>"}},
		{"t\n", []string{"t", "Ċ"}},
	} {
		got := tk.Encode(c.text, true)
		want := ids(tk, c.want...)
		if !equalIDs(got, want) {
			t.Errorf("Encode(%q, true) = %v, want %v (%q)", c.text, got, want, c.want)
		}
	}
}

func TestRoundTripSmallVocabs(t *testing.T) {
	for name, v := range map[string]Vocab{"spm": tinySPM(), "bytebpe": tinyByteBPE()} {
		tk := mustNew(t, v)
		for _, x := range awkwardTexts {
			if got := tk.Decode(tk.Encode(x, true)); got != x {
				t.Errorf("%s: Decode(Encode(%q)) = %q", name, x, got)
			}
		}
	}
}

func TestNewRejectsBadVocab(t *testing.T) {
	good := tinySPM()
	for _, c := range []struct {
		name string
		edit func(v *Vocab)
	}{
		{"empty", func(v *Vocab) { v.Tokens = nil; v.Scores = nil; v.Types = nil }},
		{"scores length", func(v *Vocab) { v.Scores = v.Scores[:3] }},
		{"types length", func(v *Vocab) { v.Types = append(v.Types, 1) }},
		{"unknown model", func(v *Vocab) { v.Model = "wordpiece" }},
		{"no model", func(v *Vocab) { v.Model = "" }},
		{"bos out of range", func(v *Vocab) { v.BOS = int32(len(v.Tokens)) }},
		{"add bos without bos", func(v *Vocab) { v.BOS = -1 }},
		{"gpt2 without merges", func(v *Vocab) { v.Model = "gpt2" }},
		{"unknown pre", func(v *Vocab) { v.Model = "gpt2"; v.Merges = []string{"a b"}; v.Pre = "klingon" }},
		{"merge without space", func(v *Vocab) { v.Model = "gpt2"; v.Merges = []string{"ab"} }},
	} {
		v := good
		v.Tokens = append([]string(nil), good.Tokens...)
		v.Scores = append([]float32(nil), good.Scores...)
		v.Types = append([]int32(nil), good.Types...)
		c.edit(&v)
		if _, err := New(v); !errors.Is(err, ErrBadVocab) {
			t.Errorf("New(%s) error = %v, want ErrBadVocab", c.name, err)
		}
	}
}

func TestStreamDecoder(t *testing.T) {
	tk := mustNew(t, tinySPM())
	for _, text := range []string{"hello world", "h😀é\n", " hello", "", "é😀😀 world\t"} {
		ids := tk.Encode(text, true)
		d := NewStreamDecoder(tk)
		var sb strings.Builder
		for _, id := range ids {
			s := d.Next(id)
			if strings.ContainsRune(s, '\uFFFD') {
				t.Errorf("stream of %q: chunk %q holds a broken UTF-8 sequence", text, s)
			}
			sb.WriteString(s)
		}
		sb.WriteString(d.Flush())
		if got := sb.String(); got != text || got != tk.Decode(ids) {
			t.Errorf("stream of Encode(%q) = %q, Decode gives %q", text, got, tk.Decode(ids))
		}
	}
	// A sequence that never completes is flushed as is.
	d := NewStreamDecoder(tk)
	if s := d.Next(ids(tk, "<0xF0>")[0]); s != "" {
		t.Errorf("Next(<0xF0>) = %q, want it held back", s)
	}
	if s := d.Next(ids(tk, "h")[0]); s != "\xf0h" {
		t.Errorf("Next(h) after <0xF0> = %q, want %q", s, "\xf0h")
	}
}

func TestTemplates(t *testing.T) {
	msgs := []Message{{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}}
	for _, c := range []struct {
		name string
		gen  bool
		want string
	}{
		{TemplateLlama3, true, "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{TemplateChatML, true, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
		{TemplateChatML, false, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"},
		{TemplateLlama2, true, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Bye [/INST]"},
	} {
		got, err := ApplyTemplate(c.name, msgs, c.gen)
		if err != nil || got != c.want {
			t.Errorf("ApplyTemplate(%q, msgs, %v) = %q, %v\nwant %q", c.name, c.gen, got, err, c.want)
		}
	}
	if _, err := ApplyTemplate("vicuna", msgs, true); err == nil {
		t.Error("ApplyTemplate(vicuna) succeeded, want an error")
	}
	if _, err := ApplyTemplate(TemplateLlama2, []Message{{"tool", "x"}}, true); err == nil {
		t.Error("ApplyTemplate(llama2, tool role) succeeded, want an error")
	}
	for _, c := range []struct {
		jinja string
		want  string
	}{
		{"{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>", TemplateLlama3},
		{"{{'<|im_start|>' + message['role'] + '\n'}}", TemplateChatML},
		{"{{ bos_token + '[INST] ' + content + ' [/INST]' }}", TemplateLlama2},
		{"{{ messages }}", ""},
	} {
		if got := DetectTemplate(c.jinja, nil); got != c.want {
			t.Errorf("DetectTemplate(%q, nil) = %q, want %q", c.jinja, got, c.want)
		}
	}
	v := tinyByteBPE()
	v.Tokens = append(v.Tokens, "<|im_start|>")
	v.Types = append(v.Types, TypeControl)
	if got := DetectTemplate("", mustNew(t, v)); got != TemplateChatML {
		t.Errorf("DetectTemplate(\"\", vocab with <|im_start|>) = %q, want chatml", got)
	}
}

// writeSPModel encodes v as a SentencePiece ModelProto.
func writeSPModel(v Vocab) []byte {
	var out []byte
	for i, p := range v.Tokens {
		var m []byte
		m = appendBytesField(m, 1, []byte(p))
		m = binary.AppendUvarint(m, 2<<3|5)
		m = binary.LittleEndian.AppendUint32(m, math.Float32bits(v.Scores[i]))
		m = binary.AppendUvarint(m, 3<<3|0)
		m = binary.AppendUvarint(m, uint64(v.Types[i]))
		out = appendBytesField(out, 1, m)
	}
	var ts []byte
	for _, f := range []struct {
		n  uint64
		id int32
	}{{40, v.UNK}, {41, v.BOS}, {42, v.EOS}} {
		ts = binary.AppendUvarint(ts, f.n<<3)
		ts = binary.AppendUvarint(ts, uint64(int64(f.id)))
	}
	out = appendBytesField(out, 2, ts)
	var ns []byte
	ns = appendBytesField(ns, 1, []byte("identity"))
	ns = binary.AppendUvarint(ns, 3<<3)
	if v.AddSpacePrefix {
		ns = append(ns, 1)
	} else {
		ns = append(ns, 0)
	}
	return appendBytesField(out, 3, ns)
}

func appendBytesField(b []byte, field uint64, p []byte) []byte {
	b = binary.AppendUvarint(b, field<<3|2)
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// writeLlama2C encodes v as llama2.c's tokenizer.bin, as its export does.
func writeLlama2C(v Vocab) []byte {
	out := binary.LittleEndian.AppendUint32(nil, 16)
	for i, p := range v.Tokens {
		switch i {
		case 1:
			p = "\n<s>\n"
		case 2:
			p = "\n</s>\n"
		default:
			p = strings.ReplaceAll(p, "▁", " ")
		}
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v.Scores[i]))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

func TestSentencePieceModelRoundTrip(t *testing.T) {
	v := tinySPM()
	got, err := ParseSentencePieceModel(writeSPModel(v))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tokens) != len(v.Tokens) || got.BOS != 1 || got.EOS != 2 || got.UNK != 0 || !got.AddSpacePrefix {
		t.Fatalf("ParseSentencePieceModel: %d tokens BOS %d EOS %d UNK %d prefix %v", len(got.Tokens), got.BOS, got.EOS, got.UNK, got.AddSpacePrefix)
	}
	for i := range v.Tokens {
		if got.Tokens[i] != v.Tokens[i] || got.Scores[i] != v.Scores[i] || got.Types[i] != v.Types[i] {
			t.Fatalf("piece %d = %q %v %d, want %q %v %d", i, got.Tokens[i], got.Scores[i], got.Types[i], v.Tokens[i], v.Scores[i], v.Types[i])
		}
	}
	l2, err := ParseLlama2C(writeLlama2C(v), len(v.Tokens))
	if err != nil {
		t.Fatal(err)
	}
	a, b := mustNew(t, v), mustNew(t, l2)
	for _, x := range awkwardTexts {
		if ea, eb := a.Encode(x, true), b.Encode(x, true); !equalIDs(ea, eb) {
			t.Errorf("Encode(%q): vocab %v, tokenizer.bin %v", x, ea, eb)
		}
	}
	for _, bad := range [][]byte{nil, {1, 2}, writeLlama2C(v)[:40]} {
		if _, err := ParseLlama2C(bad, len(v.Tokens)); err == nil {
			t.Errorf("ParseLlama2C(%d bytes) succeeded, want an error", len(bad))
		}
	}
	for _, bad := range [][]byte{nil, {0x0a, 0x05, 1}, {0x0b}} {
		if _, err := ParseSentencePieceModel(bad); err == nil {
			t.Errorf("ParseSentencePieceModel(%x) succeeded, want an error", bad)
		}
	}
}

func FuzzSentencePieceModel(f *testing.F) {
	f.Add(writeSPModel(tinySPM()))
	f.Add([]byte{0x0a, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseSentencePieceModel(data)
		if err != nil {
			return
		}
		tk, err := New(v)
		if err != nil {
			return
		}
		tk.Decode(tk.Encode("hello wörld 😀", true))
	})
}

func FuzzLlama2C(f *testing.F) {
	f.Add(writeLlama2C(tinySPM()), 0)
	f.Add(writeLlama2C(tinySPM()), 10)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n > 1<<16 {
			return
		}
		v, err := ParseLlama2C(data, n)
		if err != nil {
			return
		}
		tk, err := New(v)
		if err != nil {
			return
		}
		tk.Decode(tk.Encode("hello wörld 😀", true))
	})
}

func FuzzRoundTrip(f *testing.F) {
	for _, x := range awkwardTexts {
		f.Add(x)
	}
	f.Add("\xff\xfe broken \xe2\x82")
	spm := mustNew(f, tinySPM())
	bbpe := mustNew(f, tinyByteBPE())
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "▁") || strings.Contains(s, "<s>") || strings.Contains(s, "</s>") ||
			strings.Contains(s, "<unk>") || strings.Contains(s, "<|endoftext|>") {
			return // these decode differently by design
		}
		for name, tk := range map[string]Tokenizer{"spm": spm, "bytebpe": bbpe} {
			ids := tk.Encode(s, true)
			if got := tk.Decode(ids); got != s {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", name, s, got)
			}
			d := NewStreamDecoder(tk)
			var sb strings.Builder
			for _, id := range ids {
				sb.WriteString(d.Next(id))
			}
			sb.WriteString(d.Flush())
			if sb.String() != s {
				t.Fatalf("%s: stream decode of %q = %q", name, s, sb.String())
			}
		}
	})
}

func BenchmarkEncodeSPM(b *testing.B) {
	tk := mustNew(b, tinySPM())
	text := strings.Repeat("hello world, héllo wörld 😀\n", 100)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.Encode(text, true)
	}
}
