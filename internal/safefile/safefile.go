// Package safefile is the one place that decides whether a path the user
// names (a model, a tokenizer, a draft model, a cache) may be read: it must
// be a regular file, or a folder of regular files, not a FIFO, a device, a
// socket or a /proc or /sys entry, and no larger than its format allows.
// Nothing here blocks: paths are checked with stat before they are opened,
// and files are opened with O_NONBLOCK and checked again with fstat.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Size limits for the files rigscope reads whole, from their formats.
const (
	// TokenizerLimit bounds tokenizer.json, tokenizer.model and llama2.c
	// tokenizer.bin files (the largest real ones are about 35 MB).
	TokenizerLimit = 256 << 20
	// JSONLimit bounds config files (config.json, tokenizer_config.json,
	// safetensors indexes, caches).
	JSONLimit = 64 << 20
)

// kind names what a non-regular file is, for messages.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file"
}

// pseudo says whether path lies on a kernel pseudo file system (/proc,
// /sys), whose "regular" files report size 0 and can be endless. (Devices
// are refused by their mode; /dev/shm holds real files.)
func pseudo(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for _, root := range []string{"/proc", "/sys"} {
		if abs == root || strings.HasPrefix(abs, root+"/") {
			return true
		}
	}
	return false
}

// Error says why a path was refused.
type Error struct {
	What, Path, Why string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s is %s; give a regular file", e.What, e.Path, e.Why)
}

// CheckFile refuses path unless it is a regular file (symbolic links are
// followed) of at most limit bytes (0: any size). what names the path in
// the message ("--tokenizer", "model"). It does not open the file.
func CheckFile(path, what string, limit int64) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s %s: no such file", what, path)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return fi, check(path, what, fi, limit)
}

func check(path, what string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return &Error{what, path, kind(fi.Mode())}
	}
	if pseudo(path) {
		return &Error{what, path, "a kernel pseudo-file (/proc or /sys)"}
	}
	if limit > 0 && fi.Size() > limit {
		return fmt.Errorf("%s %s is %d bytes, more than the %d this kind of file can be; it is not one", what, path, fi.Size(), limit)
	}
	return nil
}

// CheckPath accepts a regular file or a folder whose entries (one level;
// sub-folders are not entered) are regular files or folders. Folder
// entries named in limits (by base name, or "*.ext") are also held to
// their size.
func CheckPath(path, what string, limits map[string]int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s %s: no such file or directory", what, path)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if !fi.IsDir() {
		return check(path, what, fi, limitFor(filepath.Base(path), limits))
	}
	if pseudo(path) {
		return &Error{what, path, "a kernel pseudo-file folder (/proc or /sys)"}
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		efi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a dangling link: never read
				continue
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		if efi.IsDir() {
			continue
		}
		if err := check(p, what+" file", efi, limitFor(e.Name(), limits)); err != nil {
			return err
		}
	}
	return nil
}

func limitFor(name string, limits map[string]int64) int64 {
	if n, ok := limits[name]; ok {
		return n
	}
	return limits["*"+filepath.Ext(name)]
}

// Open opens a regular file for reading without blocking (O_NONBLOCK, so a
// FIFO swapped in after a check cannot hang the open) and checks it again
// with fstat.
func Open(path, what string, limit int64) (*os.File, error) {
	if _, err := CheckFile(path, what, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(path, what, fi, limit)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// missing is a file that does not exist (it wraps fs.ErrNotExist).
type missing struct{ msg string }

func (m missing) Error() string { return m.msg }
func (m missing) Unwrap() error { return fs.ErrNotExist }

// ReadFile reads a whole regular file of at most limit bytes. A missing
// file's error wraps fs.ErrNotExist.
func ReadFile(path, what string, limit int64) ([]byte, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, missing{what + " " + path + ": no such file"}
	}
	f, err := Open(path, what, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read one byte past the limit: a file that grew since fstat is caught.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %s grew past %d bytes while being read", what, path, limit)
	}
	return data, nil
}
