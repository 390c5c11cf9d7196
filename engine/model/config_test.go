package model

import (
	"math"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	good := Config{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 100}
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"zero floats get defaults", func(c *Config) {}, ""},
		{"stated floats kept", func(c *Config) { c.MaxSeq, c.NormEps, c.RopeTheta = 8192, 1e-6, 5e5 }, ""},
		{"dim 0", func(c *Config) { c.Dim = 0 }, "hidden size 0 is not between 1 and 1048576"},
		{"layers negative", func(c *Config) { c.Layers = -1 }, "layers -1 is not between 1 and 4096"},
		{"vocab huge", func(c *Config) { c.Vocab = 1 << 25 }, "vocab size 33554432 is not between 1 and 16777216"},
		{"head dim huge", func(c *Config) { c.HeadDim = 1 << 13 }, "head dim 8192 is not between 1 and 4096"},
		{"kv heads not dividing", func(c *Config) { c.KVHeads = 3 }, "4 attention heads are not divisible by 3 kv heads"},
		{"odd head dim", func(c *Config) { c.HeadDim = 15 }, "head dim 15 is odd"},
		{"context negative", func(c *Config) { c.MaxSeq = -1 }, "context length -1"},
		{"context huge", func(c *Config) { c.MaxSeq = 1 << 25 }, "context length 33554432"},
		{"eps NaN", func(c *Config) { c.NormEps = float32(math.NaN()) }, "norm epsilon NaN"},
		{"eps negative", func(c *Config) { c.NormEps = -1e-5 }, "norm epsilon -1e-05"},
		{"eps Inf", func(c *Config) { c.NormEps = float32(math.Inf(1)) }, "norm epsilon +Inf"},
		{"theta NaN", func(c *Config) { c.RopeTheta = float32(math.NaN()) }, "RoPE base NaN"},
		{"theta negative", func(c *Config) { c.RopeTheta = -1 }, "RoPE base -1"},
		{"theta 1", func(c *Config) { c.RopeTheta = 1 }, "RoPE base 1 is not"},
	}
	for _, tt := range tests {
		c := good
		tt.edit(&c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate: %v", tt.name, err)
		case tt.want == "" && (c.MaxSeq <= 0 || c.NormEps <= 0 || c.RopeTheta <= 1):
			t.Errorf("%s: Validate left %+v", tt.name, c)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
