package synthetic

import (
	"os"
	"path/filepath"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/tokenizer/ggufvocab"
)

// TestWriteGGUF exports a small preset and reads it back: same shapes, same
// bytes, and a vocabulary that round-trips.
func TestWriteGGUF(t *testing.T) {
	for _, spec := range []string{"tiny", "tiny?dtype=q8_0", "tiny?dtype=f16"} {
		src, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.WriteGGUF(f); err != nil {
			t.Fatalf("Open(%q).WriteGGUF: %v", spec, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		g, err := gguf.Open(path)
		if err != nil {
			t.Fatalf("%s: gguf.Open of the export: %v", spec, err)
		}
		for _, ti := range g.Tensors {
			want, err := src.Tensor(ti.Name)
			if err != nil {
				t.Fatalf("%s: export has %q, source has not: %v", spec, ti.Name, err)
			}
			got, err := g.Tensor(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			if got.DType != want.DType || string(got.Data) != string(want.Data) {
				t.Errorf("%s: tensor %q differs after the round trip (%v vs %v)", spec, ti.Name, got.DType, want.DType)
			}
		}
		v, err := ggufvocab.VocabFromGGUF(g)
		if err != nil {
			t.Fatalf("%s: vocabulary of the export: %v", spec, err)
		}
		if len(v.Tokens) != src.cfg.Vocab || v.BOS != 1 || !v.AddBOS {
			t.Errorf("%s: exported vocab has %d tokens, BOS %d, AddBOS %v", spec, len(v.Tokens), v.BOS, v.AddBOS)
		}
		g.Close()
	}
}
