package cuda

import (
	"strings"
	"testing"

	"rigscope/engine/model"
)

// The GPU runs plain Llama and the architectures' extensions (RoPE
// scaling of every kind, q/k/v biases, q/k head norms, sliding windows,
// Gemma 3, softmax- and sigmoid-routed experts with DeepSeek-V3's bias,
// groups and shared experts, latent attention) and refuses, by name, the
// rest: soft-capping, shapes beyond its kernels' limits, naming only what
// it lacks.
func TestCheckImplemented(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  model.Config
		tp   int
		want string // "" = accepted
		not  string // must not be named
	}{
		{"plain llama", model.Config{Arch: "llama"}, 1, "", ""},
		{"llama3 scaling", model.Config{Arch: "llama", RopeScaling: model.RopeScaling{Type: model.RopeScaleLlama3, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8192}}, 1, "", ""},
		{"rope_freqs", model.Config{Arch: "llama", RopeScaling: model.RopeScaling{Type: model.RopeScaleFreqs}}, 1, "", ""},
		{"linear", model.Config{Arch: "llama", RopeScaling: model.RopeScaling{Type: model.RopeScaleLinear, Factor: 4}}, 1, "", ""},
		{"yarn", model.Config{Arch: "qwen3", RopeScaling: model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 32768, BetaFast: 32, BetaSlow: 1, AttnFactor: 1.138629}}, 1, "", ""},
		{"qwen2", model.Config{Arch: "qwen2", QKVBias: true}, 1, "", ""},
		{"qwen3", model.Config{Arch: "qwen3", QKNorm: true}, 1, "", ""},
		{"mistral", model.Config{Arch: "mistral", SlidingWindow: 48}, 1, "", ""},
		{"gemma3", model.Config{Arch: "gemma3", QKNorm: true, SlidingWindow: 48, Gemma: model.Gemma3{On: true, QueryScale: 32, Layers: "LLLG", LocalRopeTheta: 1e4}}, 1, "", ""},
		{"gemma3 tp 2", model.Config{Arch: "gemma3", QKNorm: true, SlidingWindow: 48, Gemma: model.Gemma3{On: true, QueryScale: 32, Layers: "LLLG", LocalRopeTheta: 1e4}}, 2, "", ""},
		{"gemma2-like softcap", model.Config{Arch: "gemma3", QKNorm: true, SlidingWindow: 48, Gemma: model.Gemma3{On: true, QueryScale: 32, Layers: "LLLG", LocalRopeTheta: 1e4, FinalSoftcap: 30}}, 1, "final logit soft-capping 30", "Gemma 3 block"},
		{"mixtral", model.Config{Arch: "mixtral", SlidingWindow: 4096, MoE: model.MoE{Experts: 8, PerToken: 2, FFN: 14336, NormTopK: true}}, 1, "", ""},
		{"mixtral tp 2", model.Config{Arch: "mixtral", MoE: model.MoE{Experts: 8, PerToken: 2, FFN: 14336, NormTopK: true}}, 2, "", ""},
		{"qwen3moe", model.Config{Arch: "qwen3moe", QKNorm: true, MoE: model.MoE{Experts: 128, PerToken: 8, FFN: 768, NormTopK: true}}, 1, "", ""},
		{"deepseek3 router", model.Config{Arch: "deepseek3", MoE: model.MoE{Experts: 256, PerToken: 8, FFN: 2048, Scoring: model.ScoreSigmoid, ScoreBias: true, Groups: 8, TopKGroups: 4, SharedFFN: 2048, NormTopK: true}}, 1, "", ""},
		{"deepseek3 shared expert", model.Config{Arch: "deepseek3", MoE: model.MoE{Experts: 64, PerToken: 6, FFN: 1408, SharedFFN: 2816}}, 2, "", ""},
		{"too many groups", model.Config{Arch: "deepseek3", MoE: model.MoE{Experts: 256, PerToken: 8, FFN: 2048, Scoring: model.ScoreSigmoid, Groups: 128, TopKGroups: 4}}, 1, "128 groups (at most 64)", "router scores"},
		{"too many experts", model.Config{Arch: "qwen3moe", MoE: model.MoE{Experts: 1024, PerToken: 8, FFN: 768}}, 1, "1024 experts (at most 512)", ""},
		{"too wide for the router", model.Config{Arch: "qwen3moe", Dim: 16384, MoE: model.MoE{Experts: 128, PerToken: 8, FFN: 768}}, 1, "hidden size 16384 (the router kernel holds at most 8192)", ""},
		{"too many per token", model.Config{Arch: "qwen3moe", MoE: model.MoE{Experts: 128, PerToken: 32, FFN: 768}}, 1, "32 experts per token (at most 16)", ""},
		{"deepseek3", model.Config{Arch: "deepseek3", MLA: model.MLA{QRank: 1536, KVRank: 512, NopeDim: 128, RopeDim: 64, VDim: 128}}, 1, "", ""},
		{"deepseek3 tp 4", model.Config{Arch: "deepseek3", MLA: model.MLA{QRank: 1536, KVRank: 512, NopeDim: 128, RopeDim: 64, VDim: 128}}, 4, "", ""},
		{"latent too wide", model.Config{Arch: "deepseek3", MLA: model.MLA{QRank: 1536, KVRank: 2048, NopeDim: 128, RopeDim: 64, VDim: 128}}, 1, "a latent of 2048 + 64 floats per token (at most 1088)", ""},
	} {
		err := checkImplemented(tc.cfg, tc.tp)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--device cpu")):
			t.Errorf("%s: error %v; want one naming %q and --device cpu", tc.name, err, tc.want)
		case tc.not != "" && err != nil && strings.Contains(err.Error(), tc.not):
			t.Errorf("%s: error %v names %q, which the GPU implements", tc.name, err, tc.not)
		}
	}
}
