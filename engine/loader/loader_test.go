package loader

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

var tinyCfg = model.Config{Arch: "llama", Dim: 8, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 4, FFN: 12, Vocab: 6,
	MaxSeq: 16, NormEps: 1e-5, RopeTheta: 10000, RopeLayout: model.RopeInterleaved}

// tinyTensors returns F32 weights for cfg under canonical names, sorted.
func tinyTensors(cfg model.Config) []*tensor.Tensor {
	shapes := ExpectedShapes(cfg)
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*tensor.Tensor
	for i, n := range names {
		t := &tensor.Tensor{Name: n, DType: tensor.F32, Shape: shapes[n]}
		t.Data = make([]byte, 4*t.Elems())
		for j := range t.Elems() {
			binary.LittleEndian.PutUint32(t.Data[4*j:], math.Float32bits(float32(i)+float32(j)/100))
		}
		out = append(out, t)
	}
	return out
}

func tinyKV(arch string) []gguf.KV {
	return []gguf.KV{
		{Key: "general.architecture", Value: arch},
		{Key: arch + ".embedding_length", Value: uint32(8)},
		{Key: arch + ".block_count", Value: uint32(2)},
		{Key: arch + ".attention.head_count", Value: uint32(2)},
		{Key: arch + ".attention.head_count_kv", Value: uint32(1)},
		{Key: arch + ".feed_forward_length", Value: uint32(12)},
		{Key: arch + ".context_length", Value: uint32(16)},
		{Key: arch + ".attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: arch + ".rope.freq_base", Value: float32(10000)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: []string{"<unk>", "<s>", "</s>", "▁a", "b", "▁"}},
		{Key: "tokenizer.ggml.scores", Value: []float32{0, 0, 0, -1, -2, -3}},
		{Key: "tokenizer.ggml.token_type", Value: []int32{2, 3, 3, 1, 1, 1}},
		{Key: "tokenizer.chat_template", Value: "{{ messages }}"},
	}
}

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ggufBytes(t *testing.T, kv []gguf.KV, tensors []*tensor.Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, tensors); err != nil {
		t.Fatalf("gguf.Write: %v", err)
	}
	return buf.Bytes()
}

func TestOpenTinyGGUF(t *testing.T) {
	path := writeFile(t, t.TempDir(), "tiny.gguf", ggufBytes(t, tinyKV("llama"), tinyTensors(tinyCfg)))
	src, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	defer src.Close()
	if got := src.Config(); got != tinyCfg {
		t.Errorf("Open(%q).Config() = %+v, want %+v", path, got, tinyCfg)
	}
	meta := src.Meta()
	if meta["format"] != "gguf" || meta["dtype"] != "F32" || meta["chat_template"] != "{{ messages }}" || meta["path"] != path {
		t.Errorf("Open(%q).Meta() = %v", path, meta)
	}
	tok, err := src.Tokenizer()
	if err != nil || tok.VocabSize() != 6 || tok.BOS() != 1 {
		t.Errorf("Open(%q).Tokenizer() = %v, %v", path, tok, err)
	}
	if _, err := src.Tensor("blk.9.attn_q.weight"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Tensor(missing) error = %v, want one naming the file", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := ggufBytes(t, tinyKV("llama"), tinyTensors(tinyCfg))

	wrongShape := tinyTensors(tinyCfg)
	for i, tt := range wrongShape {
		if tt.Name == "blk.1.attn_k.weight" {
			wrongShape[i] = &tensor.Tensor{Name: tt.Name, DType: tensor.F32, Shape: []int{8, 8}, Data: make([]byte, 256)}
		}
	}
	badMagic := append([]byte("GGUX"), good[4:]...)
	offsetPastEnd := append([]byte(nil), good...)
	absurd := append([]byte(nil), good...)
	binary.LittleEndian.PutUint64(absurd[8:], 1<<60)
	// The first tensor's offset is the last 8 bytes of its info; find it by
	// parsing and patching the region after the metadata.
	f, err := gguf.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	// Tensor infos end at most DataOffset; the first info's offset field is 0
	// and the second's is its size rounded to 32: patch the second to huge.
	second := f.Tensors[1].Offset
	var pat [8]byte
	binary.LittleEndian.PutUint64(pat[:], second)
	at := bytes.LastIndex(offsetPastEnd[:f.DataOffset], pat[:])
	binary.LittleEndian.PutUint64(offsetPastEnd[at:], 1<<30)

	noArchDir := filepath.Join(dir, "hf-bad")
	os.Mkdir(noArchDir, 0o755)
	writeFile(t, noArchDir, "config.json", []byte(`{"architectures":["GPT2LMHeadModel"]}`))
	emptyDir := filepath.Join(dir, "empty")
	os.Mkdir(emptyDir, 0o755)

	tests := []struct {
		name, path string
		want       []string
	}{
		{"nonexistent", filepath.Join(dir, "nope.gguf"), []string{"no such file", "GGUF", "llama2.c", "synthetic"}},
		{"unknown format", writeFile(t, dir, "junk.bin", []byte("hello world, this is not a model at all")), []string{"unknown model format", "GGUF"}},
		{"empty file", writeFile(t, dir, "empty.bin", nil), []string{"unknown model format"}},
		{"bad magic", writeFile(t, dir, "badmagic.gguf", badMagic), []string{"unknown model format"}},
		{"truncated gguf", writeFile(t, dir, "trunc.gguf", good[:len(good)-100]), []string{"exceeds the data region"}},
		{"truncated header", writeFile(t, dir, "trunc2.gguf", good[:40]), []string{"tensor count 21 is impossible"}},
		{"truncated metadata", writeFile(t, dir, "trunc3.gguf", good[:700]), []string{"truncated"}},
		{"offset past end", writeFile(t, dir, "off.gguf", offsetPastEnd), []string{"exceeds the data region"}},
		{"absurd tensor count", writeFile(t, dir, "absurd.gguf", absurd), []string{"tensor count", "impossible"}},
		{"wrong tensor shape", writeFile(t, dir, "shape.gguf", ggufBytes(t, tinyKV("llama"), wrongShape)), []string{`"blk.1.attn_k.weight"`, "[8 8]", "want [4 8]"}},
		{"unknown architecture", writeFile(t, dir, "arch.gguf", ggufBytes(t, tinyKV("gpt2"), tinyTensors(tinyCfg))), []string{`general.architecture = "gpt2" (supported: llama, qwen2, qwen3, gemma3)`}},
		{"missing metadata", writeFile(t, dir, "nometa.gguf", ggufBytes(t, tinyKV("llama")[:3], tinyTensors(tinyCfg))), []string{"missing llama.attention.head_count"}},
		{"hf unknown architecture", noArchDir, []string{`architectures = ["GPT2LMHeadModel"] (supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, Gemma3ForCausalLM)`}},
		{"directory without config", emptyDir, []string{"without config.json"}},
		{"synthetic without hook", "synthetic:tiny", []string{"not available"}},
	}
	saved := OpenSynthetic
	OpenSynthetic = nil
	defer func() { OpenSynthetic = saved }()
	for _, tt := range tests {
		src, err := Open(tt.path, Options{})
		if err == nil {
			src.Close()
			t.Errorf("%s: Open(%q) succeeded", tt.name, tt.path)
			continue
		}
		for _, w := range append(tt.want, tt.path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Open(%q) error = %q, want it to contain %q", tt.name, tt.path, err, w)
			}
		}
	}
}

func TestOpenSyntheticHook(t *testing.T) {
	saved := OpenSynthetic
	defer func() { OpenSynthetic = saved }()
	var got string
	OpenSynthetic = func(spec string) (Source, error) { got = spec; return nil, os.ErrInvalid }
	if _, err := Open("synthetic:tiny?seed=2", Options{}); err != os.ErrInvalid || got != "synthetic:tiny?seed=2" {
		t.Errorf(`Open("synthetic:tiny?seed=2") called the hook with %q and returned %v`, got, err)
	}
}

func TestStemTokenizerNames(t *testing.T) {
	got := stemTokenizerNames("/m/gocoder-draft-1m.llama2c.bin")
	want := []string{"/m/gocoder-draft-1m.llama2c.tokenizer.bin", "/m/gocoder-draft-1m.tokenizer.bin"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("stemTokenizerNames = %q, want %q", got, want)
	}
}

// readme lists the configs of /work/shared/models/README.md's table.
var (
	gocoder14m = model.Config{Arch: "llama", Dim: 512, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 64, FFN: 1024, Vocab: 4096,
		NormEps: 1e-5, RopeTheta: 10000}
	gocoder1m = model.Config{Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 384, Vocab: 4096,
		NormEps: 1e-5, RopeTheta: 10000, TiedEmbed: true}
)

func TestFixtureConfigs(t *testing.T) {
	with := func(c model.Config, layout model.RopeLayout) model.Config { c.RopeLayout = layout; return c }
	stories := model.Config{Arch: "llama", Dim: 64, Layers: 5, Heads: 8, KVHeads: 4, HeadDim: 8, FFN: 172, Vocab: 512,
		NormEps: 1e-5, RopeTheta: 10000, TiedEmbed: true}
	tests := []struct {
		file   string
		want   model.Config
		format string
		dtype  string
		tok    bool
	}{
		{"gocoder-14m-hf", with(gocoder14m, model.RopeHalf), "hf-safetensors", "BF16", true},
		{"gocoder-draft-1m-hf", with(gocoder1m, model.RopeHalf), "hf-safetensors", "BF16", true},
		{"gocoder-14m.Q8_0.gguf", gocoder14m, "gguf", "Q8_0", true},
		{"gocoder-draft-1m.F16.gguf", gocoder1m, "gguf", "F16", true},
		{"gocoder-draft-1m.llama2c.bin", gocoder1m, "llama2c", "F32", true},
		{"stories260K/stories260K.bin", stories, "llama2c", "F32", false},
	}
	for _, tt := range tests {
		path := fixtures.Path(t, tt.file)
		src, err := Open(path, Options{})
		if err != nil {
			t.Errorf("Open(%q): %v", path, err)
			continue
		}
		got := src.Config()
		if got.MaxSeq <= 0 {
			t.Errorf("Open(%q).Config().MaxSeq = %d", path, got.MaxSeq)
		}
		got.MaxSeq = 0
		if got != tt.want {
			t.Errorf("Open(%q).Config() = %+v\nwant %+v", path, got, tt.want)
		}
		if m := src.Meta(); m["format"] != tt.format || m["dtype"] != tt.dtype {
			t.Errorf("Open(%q).Meta() = %v, want format %s dtype %s", path, m, tt.format, tt.dtype)
		}
		tok, err := src.Tokenizer()
		switch {
		case tt.tok && (err != nil || tok.VocabSize() != tt.want.Vocab):
			t.Errorf("Open(%q).Tokenizer() = %v, %v; want a tokenizer of %d pieces", path, tok, err, tt.want.Vocab)
		case !tt.tok && (err == nil || !strings.Contains(err.Error(), "--tokenizer")):
			t.Errorf("Open(%q).Tokenizer() error = %v, want one mentioning --tokenizer", path, err)
		}
		src.Close()
	}
}
