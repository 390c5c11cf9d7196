package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Released pages read back as the file's bytes: the mapping stays valid.
func TestReleaseKeepsContents(t *testing.T) {
	ps := os.Getpagesize()
	want := make([]byte, 5*ps+123)
	for i := range want {
		want[i] = byte(i*31 + i>>9)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(data)
	for _, tc := range []struct {
		name   string
		lo, hi int
	}{
		{"everything", 0, len(data)},
		{"unaligned middle", 100, 3*ps + 7},
		{"less than a page", 10, 20},
		{"empty", ps, ps},
		{"tail", 2 * ps, len(data)},
	} {
		if !bytes.Equal(data, want) { // fault every page in first
			t.Fatalf("%s: mapping differs from the file before Release", tc.name)
		}
		if err := Release(data[tc.lo:tc.hi]); err != nil {
			t.Fatalf("%s: Release: %v", tc.name, err)
		}
		if !bytes.Equal(data, want) {
			t.Errorf("%s: mapping differs from the file after Release", tc.name)
		}
	}
}
