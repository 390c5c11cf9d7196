// Package mmap maps model files read-only into memory for the loaders.
package mmap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the whole file at path read-only (MAP_SHARED, PROT_READ). An
// empty file gives an empty slice (mmap refuses length 0), which the
// parsers then report as too short. Release the mapping with Unmap.
func Map(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	size := st.Size()
	if size == 0 {
		return []byte{}, nil
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("%s: file too large to map (%d bytes)", path, size)
	}
	data, err := unix.Mmap(int(fh.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return data, nil
}

// Unmap releases a mapping returned by Map.
func Unmap(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	return unix.Munmap(data)
}
