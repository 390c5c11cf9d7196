package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	withFIFO := filepath.Join(dir, "model")
	os.Mkdir(withFIFO, 0o700)
	os.WriteFile(filepath.Join(withFIFO, "config.json"), []byte("{}"), 0o600)
	syscall.Mkfifo(filepath.Join(withFIFO, "tokenizer.json"), 0o600)
	clean := filepath.Join(dir, "clean")
	os.Mkdir(clean, 0o700)
	os.WriteFile(filepath.Join(clean, "config.json"), []byte("{}"), 0o600)
	os.Mkdir(filepath.Join(clean, "sub"), 0o700)

	for _, tc := range []struct {
		name, path, want string
		limit            int64
	}{
		{"fifo", fifo, "FIFO", 0},
		{"devzero link", zero, "character device", 0},
		{"devzero", "/dev/zero", "character device", 0},
		{"proc", "/proc/self/status", "pseudo-file", 0},
		{"directory", dir, "a directory", 0},
		{"too big", big, "more than the 10", 10},
		{"missing", filepath.Join(dir, "nope"), "no such file", 0},
	} {
		if _, err := ReadFile(tc.path, "--x", max(tc.limit, 1<<20)); tc.limit == 0 && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: ReadFile(%s) = %v; want %q", tc.name, tc.path, err, tc.want)
		}
		if _, err := CheckFile(tc.path, "--x", tc.limit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckFile(%s) = %v; want %q", tc.name, tc.path, err, tc.want)
		}
	}
	if err := CheckPath(withFIFO, "model", nil); err == nil || !strings.Contains(err.Error(), "tokenizer.json is a FIFO") {
		t.Errorf("CheckPath(folder with a FIFO) = %v", err)
	}
	if err := CheckPath(clean, "model", map[string]int64{"*.json": 1}); err == nil || !strings.Contains(err.Error(), "config.json is 2 bytes") {
		t.Errorf("CheckPath(folder, *.json limit 1) = %v", err)
	}
	if err := CheckPath(clean, "model", nil); err != nil {
		t.Errorf("CheckPath(clean folder) = %v", err)
	}
	if shm, err := os.CreateTemp("/dev/shm", "safefile"); err == nil { // tmpfs: real files
		shm.Close()
		defer os.Remove(shm.Name())
		if _, err := CheckFile(shm.Name(), "--x", 0); err != nil {
			t.Errorf("CheckFile(%s) = %v; a regular file under /dev/shm is fine", shm.Name(), err)
		}
	}
	if b, err := ReadFile(ok, "--x", 10); err != nil || string(b) != "{}" {
		t.Errorf("ReadFile(ok) = %q, %v", b, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "nope"), "--x", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v; want fs.ErrNotExist", err)
	}
}
