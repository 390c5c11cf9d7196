package loader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"rigscope/engine/loader/llama2c"
	"rigscope/engine/tokenizer"
)

func openLlama2C(path string, opts Options) (Source, error) {
	if opts.TokenizerPath != "" {
		if _, err := os.Stat(opts.TokenizerPath); err != nil {
			return nil, fmt.Errorf("loader: %s: tokenizer: %w", path, err)
		}
	}
	f, err := llama2c.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	cfg := f.Header.Config()
	if err := cfg.Validate(); err != nil {
		f.Close()
		return nil, fmt.Errorf("loader: %s: %w", path, err)
	}
	if _, err := validateWeights(path, cfg, f.Tensor); err != nil {
		f.Close()
		return nil, err
	}
	tokPath := opts.TokenizerPath
	if tokPath == "" {
		tokPath = findLlama2CTokenizer(path)
	}
	meta := map[string]string{"format": "llama2c", "path": path, "dtype": "F32", "architecture": "llama"}
	if tokPath != "" {
		meta["tokenizer"] = tokPath
	}
	return &fileSource{
		path: path, cfg: cfg, meta: meta, lookup: f.Tensor, closer: f.Close,
		newTok: func() (tokenizer.Tokenizer, error) {
			if tokPath == "" {
				return nil, fmt.Errorf("loader: %s: a llama2.c checkpoint has no tokenizer and none was found beside it (tokenizer.bin or %s); pass --tokenizer PATH or use --prompt-ids", path, strings.Join(stemTokenizerNames(path), " or "))
			}
			t, err := tokenizer.LoadLlama2C(tokPath, cfg.Vocab)
			if err != nil {
				return nil, fmt.Errorf("loader: %s: %w", path, err)
			}
			return t, nil
		},
	}, nil
}

// findLlama2CTokenizer looks beside the checkpoint for tokenizer.bin, then
// <stem>.tokenizer.bin (gocoder-draft-1m.llama2c.bin pairs with
// gocoder-draft-1m.tokenizer.bin), and returns "" when neither exists.
func findLlama2CTokenizer(path string) string {
	cands := append([]string{filepath.Join(filepath.Dir(path), "tokenizer.bin")}, stemTokenizerNames(path)...)
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c
		}
	}
	return ""
}

// stemTokenizerNames returns <stem>.tokenizer.bin candidates: the name
// without ".bin", then also without its last remaining extension.
func stemTokenizerNames(path string) []string {
	dir, base := filepath.Split(path)
	stem := strings.TrimSuffix(base, ".bin")
	out := []string{filepath.Join(dir, stem+".tokenizer.bin")}
	if ext := filepath.Ext(stem); ext != "" {
		out = append(out, filepath.Join(dir, strings.TrimSuffix(stem, ext)+".tokenizer.bin"))
	}
	return out
}
