package quant

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// WriteFile writes the model spec (see Open) to path as a GGUF file of type
// ft, through path+".tmp" renamed into place when complete, and returns its
// size. An existing path is refused unless overwrite.
func WriteFile(spec string, ft FileType, path string, overwrite bool) (int64, error) {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return 0, fmt.Errorf("quant: %s is a directory; --out wants a file name", path)
		}
		if !overwrite {
			return 0, fmt.Errorf("quant: %s exists; remove it or pass --force", path)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("quant: %w", err)
	}
	src, err := Open(spec)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	tmp := path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("quant: %w", err)
	}
	err = WriteGGUF(fh, src, ft)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("quant: writing %s as %s: %w", spec, ft, err)
	}
	st, err := os.Stat(tmp)
	if err != nil {
		return 0, fmt.Errorf("quant: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("quant: %w", err)
	}
	return st.Size(), nil
}
