package gguf

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

// Open drops the pages of the metadata it has copied out of the mapping.
// What it reads and every tensor's bytes must still be the file's, as
// Parse of the file read into memory gives them, and the metadata pages
// must have left the resident set.
func TestOpenReleasesMetadataPages(t *testing.T) {
	vocab := make([]string, 20000) // about 200 KB of metadata
	for i := range vocab {
		vocab[i] = fmt.Sprintf("token-%05d", i)
	}
	synth := filepath.Join(t.TempDir(), "big-header.gguf")
	kv := []KV{{"general.architecture", "llama"}, {"tokenizer.ggml.tokens", vocab}}
	if err := os.WriteFile(synth, writeBytes(t, kv, []*tensor.Tensor{f32Tensor("x", 4, 8), q80Tensor("q", 4, 64)}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		checkRSS   bool // the data region is small enough to bound the mapping's RSS
	}{
		{"synthetic", synth, true},
		{"gocoder-14m", "", false},
		{"gocoder-draft-1m", "", false},
	} {
		path := tc.path
		if path == "" {
			path = fixtures.Path(t, tc.name+map[string]string{"gocoder-14m": ".Q8_0.gguf", "gocoder-draft-1m": ".F16.gguf"}[tc.name])
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Parse(raw)
		if err != nil {
			t.Fatalf("%s: Parse: %v", tc.name, err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatalf("%s: Open: %v", tc.name, err)
		}
		if tc.checkRSS {
			rss, err := mappingRSS(f.data)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if limit := len(f.data) - int(f.DataOffset) + 2*os.Getpagesize(); rss > limit {
				t.Errorf("%s: %d bytes of the mapping resident after Open, want at most %d (metadata %d bytes released)", tc.name, rss, limit, f.DataOffset)
			}
		}
		if !reflect.DeepEqual(f.KV, want.KV) || !reflect.DeepEqual(f.Tensors, want.Tensors) {
			t.Errorf("%s: metadata of Open differs from Parse", tc.name)
		}
		for _, ti := range f.Tensors {
			got, err := f.Tensor(ti.Name)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			w, err := want.Tensor(ti.Name)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !bytes.Equal(got.Data, w.Data) {
				t.Errorf("%s: tensor %q bytes differ from the file's", tc.name, ti.Name)
			}
		}
		if err := f.Close(); err != nil {
			t.Errorf("%s: Close: %v", tc.name, err)
		}
	}
}

// mappingRSS is the resident size of the mapping that starts at b's first
// byte, from /proc/self/smaps.
func mappingRSS(b []byte) (int, error) {
	fh, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	start := strconv.FormatUint(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), 16)
	sc := bufio.NewScanner(fh)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if r, _, ok := strings.Cut(line, "-"); ok && !strings.Contains(r, ":") && !strings.Contains(r, " ") {
			in = strings.TrimLeft(r, "0") == start
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no mapping at %s in /proc/self/smaps", start)
}
