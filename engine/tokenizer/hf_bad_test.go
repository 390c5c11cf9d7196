package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Tokenizer files that would tokenize wrongly, or could not be read
// safely, are refused by name.
func TestLoadHFRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(dir string) error
		want string
	}{
		{"BPE without merges", func(d string) error {
			return os.WriteFile(filepath.Join(d, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1}}}`), 0o600)
		}, "BPE model without merges"},
		{"BPE with empty merges", func(d string) error {
			return os.WriteFile(filepath.Join(d, "tokenizer.json"), []byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}}`), 0o600)
		}, "BPE model without merges"},
		{"no vocabulary", func(d string) error {
			return os.WriteFile(filepath.Join(d, "tokenizer.json"), []byte(`{"model":{"type":"BPE","merges":["a b"]}}`), 0o600)
		}, "empty vocabulary"},
		{"tokenizer.json FIFO", func(d string) error { return syscall.Mkfifo(filepath.Join(d, "tokenizer.json"), 0o600) }, "is a FIFO"},
		{"tokenizer_config.json -> /dev/zero", func(d string) error {
			return os.Symlink("/dev/zero", filepath.Join(d, "tokenizer_config.json"))
		}, "character device"},
		{"tokenizer.model FIFO", func(d string) error { return syscall.Mkfifo(filepath.Join(d, "tokenizer.model"), 0o600) }, "is a FIFO"},
	} {
		dir := t.TempDir()
		if err := tc.make(dir); err != nil {
			t.Fatal(err)
		}
		_, err := LoadHF(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadHF = %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := LoadLlama2C("/dev/zero", 0); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("LoadLlama2C(/dev/zero) = %v", err)
	}
	if _, err := LoadHF(t.TempDir()); err == nil || !strings.Contains(err.Error(), "neither tokenizer.json nor tokenizer.model") {
		t.Errorf("LoadHF(empty dir) = %v", err)
	}
}
