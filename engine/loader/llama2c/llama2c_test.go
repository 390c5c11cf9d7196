package llama2c

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

var tiny = Header{Dim: 8, HiddenDim: 12, Layers: 2, Heads: 2, KVHeads: 1, VocabSize: 5, SeqLen: 4}

func writeTiny(t testing.TB, h Header) []byte {
	t.Helper()
	f, err := fromHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, h, f); err != nil {
		t.Fatalf("Write(%+v): %v", h, err)
	}
	return buf.Bytes()
}

// fromHeader returns a source of F32 tensors of the right shapes whose
// elements are the tensor's index in file order times 1000 plus position.
func fromHeader(h Header) (func(string) (*tensor.Tensor, error), error) {
	shapes := map[string][]int{}
	order := map[string]int{}
	i := 0
	for _, s := range h.sections() {
		for l := range max(s.layers, 1) {
			name := globalNames[s.name]
			if s.layers > 0 {
				name = model.LayerName(l, canonical[s.name])
			}
			shapes[name] = s.shape
			order[name] = i
			i++
		}
	}
	return func(name string) (*tensor.Tensor, error) {
		shape := shapes[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]byte, 4*n)
		for j := range n {
			binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(float32(order[name]*1000+j)))
		}
		return &tensor.Tensor{Name: name, DType: tensor.F32, Shape: shape, Data: data}, nil
	}, nil
}

func TestRoundTrip(t *testing.T) {
	for _, h := range []Header{tiny, {8, 12, 2, 2, 1, -5, 4}} {
		data := writeTiny(t, h)
		if !Sniff(data, int64(len(data))) {
			t.Errorf("Sniff(Write(%+v)) = false", h)
		}
		f, err := Parse(data)
		if err != nil {
			t.Fatalf("Parse(Write(%+v)): %v", h, err)
		}
		src, _ := fromHeader(h)
		for _, name := range f.Names() {
			got, err := f.Tensor(name)
			if err != nil {
				t.Fatalf("Tensor(%q): %v", name, err)
			}
			want, _ := src(name)
			if !bytes.Equal(got.Data, want.Data) || got.ExpectShape(want.Shape...) != nil {
				t.Errorf("header %+v: Tensor(%q) = %v, differs from what was written (%v)", h, name, got.Shape, want.Shape)
			}
		}
		_, hasOut := f.tensors[model.NameOutput]
		if cfg := h.Config(); cfg.TiedEmbed == hasOut || cfg.Vocab != 5 || cfg.HeadDim != 4 || cfg.RopeLayout != model.RopeInterleaved {
			t.Errorf("header %+v: config %+v, output.weight present %v", h, cfg, hasOut)
		}
		if wk, _ := f.Tensor(model.LayerName(1, "attn_k")); wk.ExpectShape(4, 8) != nil {
			t.Errorf("attn_k shape %v, want [4 8]", wk.Shape)
		}
	}
}

func TestBadInput(t *testing.T) {
	good := writeTiny(t, tiny)
	set := func(i int, v int32) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		return b
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"truncated", good[:len(good)-4], "truncated"},
		{"zero dim", set(0, 0), "non-positive"},
		{"negative layers", set(2, -1), "non-positive"},
		{"heads do not divide dim", set(3, 3), "not divisible"},
		{"bad gqa", set(4, 3), "not divisible"},
		{"huge", set(5, math.MaxInt32), "implies"},
		{"min vocab", set(5, math.MinInt32), "out of range"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.data)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "<memory>") {
			t.Errorf("%s: Parse(%d bytes) error = %v, want one containing %q and the file name", tt.name, len(tt.data), err, tt.want)
		}
	}
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file string
		want model.Config
	}{
		{"gocoder-draft-1m.llama2c.bin", model.Config{Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 384, Vocab: 4096, MaxSeq: 0, NormEps: 1e-5, RopeTheta: 10000, TiedEmbed: true}},
		{"stories260K/stories260K.bin", model.Config{Arch: "llama", Dim: 64, Layers: 5, Heads: 8, KVHeads: 4, HeadDim: 8, FFN: 172, Vocab: 512, MaxSeq: 0, NormEps: 1e-5, RopeTheta: 10000, TiedEmbed: true}},
	}
	for _, tt := range tests {
		path := fixtures.Path(t, tt.file)
		f, err := Open(path)
		if err != nil {
			t.Errorf("Open(%q): %v", path, err)
			continue
		}
		got := f.Header.Config()
		got.MaxSeq = 0 // checked by the loader test against each file's own value
		if got != tt.want {
			t.Errorf("Open(%q).Header.Config() = %+v, want %+v", path, got, tt.want)
		}
		f.Close()
	}
}
