//go:build ci

package ui

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

// llama2cFile writes a llama2.c checkpoint header for a tiny model and pads
// the file to the size its weights need.
func llama2cFile(t *testing.T, dir string, truncate bool) string {
	dim, hidden, layers, heads, kv, vocab, seq := 8, 16, 1, 2, 2, 32, 16
	hdr := make([]byte, 28)
	for i, v := range []int{dim, hidden, layers, heads, kv, vocab, seq} {
		binary.LittleEndian.PutUint32(hdr[4*i:], uint32(int32(v)))
	}
	want := 28 + 4*(vocab*dim+layers*(2*dim+dim*dim*2+dim*dim*2+3*dim*hidden))
	if truncate {
		want -= 100
	}
	p := filepath.Join(dir, "stories.bin")
	if err := os.WriteFile(p, append(hdr, make([]byte, want-28)...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPickerRefusesWithMessage(t *testing.T) {
	test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	var picked string
	p := NewPicker(w, func(path, _ string) { picked = path })
	var refused error
	p.Refused = func(err error) { refused = err }
	bad := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(bad, []byte("hello, this is definitely not a model file"), 0o644)
	if p.Choose(bad) || picked != "" {
		t.Errorf("Choose(%s) accepted a text file", bad)
	}
	if refused == nil || !strings.Contains(refused.Error(), "not GGUF") {
		t.Errorf("Choose(%s) refusal = %v, want one explaining it is not GGUF", bad, refused)
	}
	good := llama2cFile(t, t.TempDir(), false)
	if !p.Choose(good) || picked != good {
		t.Errorf("Choose(%s) = refused (%v), want accepted", good, refused)
	}
}
