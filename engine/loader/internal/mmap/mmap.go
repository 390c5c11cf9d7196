// Package mmap maps model files read-only into memory for the loaders.
package mmap

import (
	"fmt"
	"os"
	"unsafe"

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

// Release tells the kernel that the whole pages inside b, a part of a
// mapping returned by Map, will not be read again for now (MADV_DONTNEED):
// they leave the process's resident set. The mapping stays valid: a later
// read faults the page back in from the file, with the same bytes. Partial
// pages at either end of b are kept.
func Release(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := int((ps - start%ps) % ps)                // first page boundary in b
	hi := len(b) - int((start+uintptr(len(b)))%ps) // last page boundary in b
	if hi <= lo {
		return nil
	}
	if err := unix.Madvise(b[lo:hi], unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("madvise: %w", err)
	}
	return nil
}
