//go:build cuda

package cuda

import (
	"strings"
	"testing"

	"rigscope/engine/model"
)

// The GPU refuses, by name, every extension of the Llama block it does
// not implement, and accepts plain Llama.
func TestCheckImplemented(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  model.Config
		want string // "" = accepted
	}{
		{"plain llama", model.Config{Arch: "llama"}, ""},
		{"llama3 scaling", model.Config{Arch: "llama", RopeScaling: model.RopeScaling{Type: model.RopeScaleLlama3, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8192}}, "RoPE scaling llama3 (factor 8"},
		{"rope_freqs", model.Config{Arch: "llama", RopeScaling: model.RopeScaling{Type: model.RopeScaleFreqs}}, "RoPE scaling rope_freqs tensor"},
		{"qwen2", model.Config{Arch: "qwen2", QKVBias: true}, "q/k/v projection biases, which this qwen2 model uses"},
		{"qwen3", model.Config{Arch: "qwen3", QKNorm: true}, "q/k head norms"},
		{"mistral", model.Config{Arch: "mistral", SlidingWindow: 48}, "sliding-window attention (window 48)"},
		{"gemma3", model.Config{Arch: "gemma3", QKNorm: true, SlidingWindow: 48, Gemma: model.Gemma3{On: true, QueryScale: 32, Layers: "LLLG", LocalRopeTheta: 1e4}}, "Gemma 3 block"},
		{"yarn", model.Config{Arch: "qwen3", RopeScaling: model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 32768, BetaFast: 32, BetaSlow: 1, AttnFactor: 1.138629}}, "RoPE scaling yarn (factor 4"},
		{"mixtral", model.Config{Arch: "mixtral", MoE: model.MoE{Experts: 8, PerToken: 2, FFN: 14336, NormTopK: true}}, "mixture of experts (8 experts, top 2, softmax scores)"},
		{"deepseek3", model.Config{Arch: "deepseek3", MLA: model.MLA{QRank: 1536, KVRank: 512, NopeDim: 128, RopeDim: 64, VDim: 128}}, "multi-head latent attention (q rank 1536, kv rank 512"},
	} {
		err := checkImplemented(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--device cpu")):
			t.Errorf("%s: error %v; want one naming %q and --device cpu", tc.name, err, tc.want)
		}
	}
}
