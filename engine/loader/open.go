package loader

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"rigscope/engine/loader/llama2c"
)

// Options tune Open.
type Options struct {
	// TokenizerPath is a tokenizer file for formats that carry none
	// (llama2.c checkpoints: a llama2.c tokenizer.bin).
	TokenizerPath string
}

// OpenSynthetic opens "synthetic:..." specs. The synthetic package cannot
// be imported here (it would be a cycle for nothing), so the engine sets
// this hook.
var OpenSynthetic func(spec string) (Source, error)

// Formats lists what Open accepts, for error messages.
const Formats = `a GGUF file (.gguf), a Hugging Face directory (config.json + model.safetensors[.index.json]), a llama2.c checkpoint (version 0), or "synthetic:PRESET"`

// Open opens a model, sniffing the format from the path:
//   - "synthetic:..." goes to OpenSynthetic;
//   - a directory holding config.json is a Hugging Face model;
//   - a file starting with "GGUF" is GGUF;
//   - a file whose first 28 bytes are a llama2.c header consistent with the
//     file's size is a llama2.c checkpoint.
func Open(path string, opts Options) (Source, error) {
	if strings.HasPrefix(path, "synthetic:") {
		if OpenSynthetic == nil {
			return nil, fmt.Errorf("loader: %s: synthetic models are not available (loader.OpenSynthetic is not set; import rigscope/engine)", path)
		}
		return OpenSynthetic(path)
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("loader: %s: no such file or directory; want %s", path, Formats)
		}
		return nil, fmt.Errorf("loader: %w", err)
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
			return nil, fmt.Errorf("loader: %s: a directory without config.json is not a model; want %s", path, Formats)
		}
		return openHF(path)
	}
	head, err := readHead(path, llama2c.HeaderBytes)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	switch {
	case strings.HasPrefix(string(head), "GGUF"):
		return openGGUF(path)
	case llama2c.Sniff(head, st.Size()):
		return openLlama2C(path, opts)
	}
	return nil, fmt.Errorf("loader: %s: unknown model format (%d bytes, starts % x); want %s", path, st.Size(), head[:min(len(head), 8)], Formats)
}

// readHead returns up to n bytes from the start of the file.
func readHead(path string, n int) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	buf := make([]byte, n)
	m, err := io.ReadFull(fh, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return buf[:m], nil
}
