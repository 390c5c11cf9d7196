package modelpath

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"rigscope/internal/fixtures"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gguf := func(v uint32) []byte {
		b := []byte("GGUF\x00\x00\x00\x00")
		binary.LittleEndian.PutUint32(b[4:], v)
		return append(b, make([]byte, 32)...)
	}
	hf := filepath.Join(dir, "hf")
	os.MkdirAll(hf, 0o755)
	os.WriteFile(filepath.Join(hf, "config.json"), []byte(`{"model_type":"llama"}`), 0o644)
	os.WriteFile(filepath.Join(hf, "model.safetensors"), []byte("x"), 0o644)
	noTok := filepath.Join(dir, "hf-notok")
	os.MkdirAll(noTok, 0o755)
	os.WriteFile(filepath.Join(noTok, "config.json"), []byte(`{"model_type":"llama"}`), 0o644)
	os.WriteFile(filepath.Join(noTok, "model.safetensors"), []byte("x"), 0o644)
	bert := filepath.Join(dir, "hf-bert")
	os.MkdirAll(bert, 0o755)
	os.WriteFile(filepath.Join(bert, "config.json"), []byte(`{"model_type":"bert"}`), 0o644)
	os.WriteFile(filepath.Join(bert, "model.safetensors"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(bert, "tokenizer.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(hf, "tokenizer.json"), []byte("{}"), 0o644)
	fifo := filepath.Join(dir, "pipe.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.gguf")
	os.Symlink("/dev/zero", zero)

	for _, tc := range []struct {
		path   string
		format string // "" = refused
		reason string // a substring of the refusal
	}{
		{write("m.gguf", gguf(3)), FormatGGUF, ""},
		{write("old.gguf", gguf(1)), "", "GGUF version 1"},
		{write("short.gguf", []byte("GGUF\x03")), "", "ends inside its header"},
		{write("old.bin", []byte("ggjt\x01\x00\x00\x00 lots of bytes here to be read")), "", "convert it to GGUF"},
		{write("notes.txt", []byte("just some text, not a model at all, no")), "", "not a model rigscope can open"},
		{write("empty.bin", nil), "", "not a model rigscope can open"},
		{fixtures.Llama2C(t, dir, false), FormatLlama2C, ""},
		{write("w.safetensors", []byte("x")), "", "choose its folder"},
		{hf, FormatHF, ""},
		{noTok, "", "no tokenizer.json"},
		{bert, "", "not a Llama-family"},
		{dir + "/missing.gguf", "", "no such file"},
		{fifo, "", "is a FIFO"},
		{zero, "", "is a character device"},
	} {
		format, err := Check(tc.path)
		if tc.format != "" {
			if err != nil || format != tc.format {
				t.Errorf("Check(%s) = %q, %v; want %q", filepath.Base(tc.path), format, err, tc.format)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Check(%s) = %q, %v; want a refusal mentioning %q", filepath.Base(tc.path), format, err, tc.reason)
		}
	}
	trunc := t.TempDir()
	if _, err := Check(fixtures.Llama2C(t, trunc, true)); err == nil {
		t.Errorf("Check(truncated llama2.c) = nil, want a refusal")
	}
}

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
		Check(p) // must not panic
	})
}
