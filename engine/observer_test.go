package engine

import "testing"

func TestServedName(t *testing.T) {
	for _, c := range []struct{ path, format, want string }{
		{"synthetic:tiny?seed=5", "synthetic", "synthetic:tiny?seed=5"},
		{"../shared/models/gocoder-14m-hf/", "hf", "gocoder-14m-hf"},
		{"/models/llama-8b.Q4_K_M.gguf", "gguf", "llama-8b.Q4_K_M.gguf"},
		{"stories260K.bin", "llama2c", "stories260K.bin"},
	} {
		if got := (ModelInfo{Path: c.path, Format: c.format}).ServedName(); got != c.want {
			t.Errorf("ServedName(%q, %s) = %q, want %q", c.path, c.format, got, c.want)
		}
	}
}
