package ui

// This file has no build tag: the fuzzer needs no window, so plain
// `go test` and bench/fuzz.sh run it (the other ui tests need -tags ci).

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzCheckModelPath(f *testing.F) {
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Add(make([]byte, 28))
	f.Add([]byte("ggjt"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.bin")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		CheckModelPath(p) // must not panic
	})
}
