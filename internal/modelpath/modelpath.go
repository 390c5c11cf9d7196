// Package modelpath is the one place that decides whether a path may be
// opened as a model: Regular refuses what is not a regular file or a folder
// of them (safefile) before anything reads it, and Check, for the model
// picker, also tells the format from the headers and says in words why a
// file is not a model.
package modelpath

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"rigscope/engine/spec/eagle3"
	"rigscope/internal/safefile"
)

// modelFileLimits bound the files of a model folder that are read whole.
var modelFileLimits = map[string]int64{
	"config.json":     safefile.JSONLimit,
	"*.json":          safefile.TokenizerLimit, // tokenizer.json is the big one
	"tokenizer.model": safefile.TokenizerLimit,
	"tokenizer.bin":   safefile.TokenizerLimit,
	"*.jinja":         safefile.JSONLimit,
}

// Regular refuses a model, draft or head path that is not a regular
// file or a folder of regular files (a FIFO, a device, a /proc entry, a
// link to one), or whose config and tokenizer files are larger than their
// formats allow. It reads nothing. "synthetic:..." passes.
func Regular(path, what string) error {
	if strings.HasPrefix(path, "synthetic:") {
		return nil
	}
	return safefile.CheckPath(path, what, modelFileLimits)
}

// Model formats Check tells apart.
const (
	FormatGGUF    = "gguf"
	FormatHF      = "safetensors" // a Hugging Face directory
	FormatEagle3  = "eagle3"      // an EAGLE-3 head directory (a drafter only)
	FormatLlama2C = "llama2c"
)

// Check says whether path is a model the engine can open and, if
// not, why, in words meant for the user. It reads only headers.
func Check(path string) (format string, err error) {
	if err := Regular(path, "model"); err != nil {
		return "", err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if fi.IsDir() {
		if eagle3.IsHead(path) {
			return FormatEagle3, nil
		}
		return FormatHF, checkHFDir(path)
	}
	if strings.EqualFold(filepath.Ext(path), ".safetensors") || filepath.Base(path) == "config.json" {
		return "", fmt.Errorf("%s is one file of a Hugging Face model: choose its folder (the one with config.json) instead", filepath.Base(path))
	}
	f, err := safefile.Open(path, "model", 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var head [28]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if n >= 4 && string(head[:4]) == "GGUF" {
		if n < 8 {
			return "", fmt.Errorf("%s: GGUF file ends inside its header", filepath.Base(path))
		}
		if v := binary.LittleEndian.Uint32(head[4:8]); v < 2 || v > 3 {
			return "", fmt.Errorf("%s: GGUF version %d is not supported (want 2 or 3)", filepath.Base(path), v)
		}
		return FormatGGUF, nil
	}
	if n >= 4 && (string(head[:4]) == "ggjt" || string(head[:4]) == "tjgg" || string(head[:4]) == "ggml" || string(head[:4]) == "lmgg") {
		return "", fmt.Errorf("%s: an old GGML/GGJT file; convert it to GGUF with llama.cpp's convert tools", filepath.Base(path))
	}
	if n == len(head) {
		if err := checkLlama2C(head, fi.Size()); err == nil {
			return FormatLlama2C, nil
		}
	}
	return "", fmt.Errorf("%s is not a model rigscope can open: not GGUF (no \"GGUF\" magic), not a llama2.c checkpoint (header does not describe a model of this file's size), and not a Hugging Face folder", filepath.Base(path))
}

// checkLlama2C validates a llama2.c header: seven int32s dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size (negative = unshared
// classifier), seq_len; the file must hold at least the weights they imply.
func checkLlama2C(head [28]byte, size int64) error {
	var h [7]int64
	for i := range h {
		h[i] = int64(int32(binary.LittleEndian.Uint32(head[4*i:])))
	}
	dim, hidden, layers, heads, kvHeads, vocab, seq := h[0], h[1], h[2], h[3], h[4], h[5], h[6]
	if vocab < 0 {
		vocab = -vocab
	}
	switch {
	case dim <= 0 || dim > 1<<16, hidden <= 0 || hidden > 1<<18, layers <= 0 || layers > 1024,
		heads <= 0 || dim%heads != 0, kvHeads <= 0 || heads%kvHeads != 0,
		vocab <= 0 || vocab > 1<<20, seq <= 0 || seq > 1<<20:
		return errors.New("implausible llama2.c header")
	}
	// token embedding plus per layer: attention and FFN weights (float32).
	kvDim := dim * kvHeads / heads
	want := 28 + 4*(vocab*dim+layers*(2*dim+dim*dim*2+dim*kvDim*2+3*dim*hidden))
	if size < want {
		return fmt.Errorf("llama2.c header wants %d bytes, file has %d", want, size)
	}
	return nil
}

func checkHFDir(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return fmt.Errorf("%s has no config.json, so it is not a Hugging Face model folder", filepath.Base(dir))
	}
	var cfg struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s/config.json: %w", filepath.Base(dir), err)
	}
	weights, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(weights) == 0 {
		return fmt.Errorf("%s has no .safetensors weights (PyTorch .bin checkpoints are not supported)", filepath.Base(dir))
	}
	tok := false
	for _, name := range []string{"tokenizer.json", "tokenizer.model"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			tok = true
		}
	}
	if !tok {
		return fmt.Errorf("%s has no tokenizer.json or tokenizer.model", filepath.Base(dir))
	}
	switch cfg.ModelType {
	case "llama", "mistral", "qwen2", "":
		return nil
	}
	return fmt.Errorf("%s: model_type %q is not a Llama-family model", filepath.Base(dir), cfg.ModelType)
}
