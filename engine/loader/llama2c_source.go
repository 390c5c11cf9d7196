package loader

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"rigscope/engine/loader/llama2c"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
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
	if err := unsupported.Refuse(path, llama2cRope(cfg, f.Tensor)); err != nil {
		f.Close()
		return nil, fmt.Errorf("loader: %w", err)
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

// llama2cRope checks the RoPE tables a llama2.c checkpoint carries
// (freq_cis_real and _imag: cos and sin of pos * theta^(-2i/head_dim)),
// which nothing reads, against the ones the engine computes (cfg's base),
// at the second and the last position: a table of another base or a
// scaling would otherwise be dropped silently.
func llama2cRope(cfg model.Config, lookup func(string) (*tensor.Tensor, error)) []unsupported.Item {
	const tol = 1e-3 // float32 angles up to the last position
	for _, name := range []string{"freq_cis_real", "freq_cis_imag"} {
		t, err := lookup(name)
		half := cfg.HeadDim / 2
		if err != nil || t.DType != tensor.F32 || t.ExpectShape(cfg.MaxSeq, half) != nil {
			continue // the format fixes their shape; nothing to compare
		}
		for _, p := range []int{1, cfg.MaxSeq - 1} {
			for i := range half {
				a := float64(p) * math.Pow(float64(cfg.RopeTheta), -float64(2*i)/float64(cfg.HeadDim))
				want := math.Cos(a)
				if name == "freq_cis_imag" {
					want = math.Sin(a)
				}
				if got := float64(floatAt(t, p*half+i)); !(math.Abs(got-want) <= tol) {
					return []unsupported.Item{{Kind: unsupported.RopeScaling, Field: fmt.Sprintf("%s[%d][%d]", name, p, i),
						Value: fmt.Sprintf("%.6g, where RoPE of base %g gives %.6g", got, cfg.RopeTheta, want), Supported: fmt.Sprintf("llama2.c's plain RoPE tables (base %g)", cfg.RopeTheta)}}
				}
			}
		}
	}
	return nil
}
