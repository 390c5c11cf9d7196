package synthetic

import "rigscope/engine/model"

// moePresets are mixture-of-experts and latent-attention shapes: two tiny
// ones for tests, and real models' dimensions for timing.
var moePresets = map[string]model.Config{
	// Mixtral-like: 4 experts, top 2.
	"tiny-moe": {Arch: "mixtral", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 96, Vocab: 512, MaxSeq: 32768,
		NormEps: 1e-5, RopeTheta: 1e6, MoE: model.MoE{Experts: 4, PerToken: 2, FFN: 96, NormTopK: true}},
	// DeepSeek-V3-like: latent attention, 1 dense layer, then 8 experts in
	// 2 groups (top 2 of 1 group) with a shared expert.
	"tiny-mla": {Arch: "deepseek3", Dim: 64, Layers: 3, Heads: 4, KVHeads: 4, HeadDim: 8, FFN: 128, Vocab: 512, MaxSeq: 32768,
		NormEps: 1e-6, RopeTheta: 10000,
		MLA: model.MLA{QRank: 32, KVRank: 32, NopeDim: 16, RopeDim: 8, VDim: 16},
		MoE: model.MoE{Experts: 8, PerToken: 2, FFN: 32, Scoring: model.ScoreSigmoid, NormTopK: true, ScoreBias: true,
			Groups: 2, TopKGroups: 1, RoutedScale: 2.5, SharedFFN: 32, FirstDense: 1}},
	// Mixtral-8x7B-v0.1 in full (46.7B parameters: 93 GB in bf16, one
	// 141 GB GPU; 12.9B active per token).
	"mixtral-8x7b": {Arch: "mixtral", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 32000,
		MaxSeq: 32768, NormEps: 1e-5, RopeTheta: 1e6, MoE: model.MoE{Experts: 8, PerToken: 2, FFN: 14336, NormTopK: true}},
	// Qwen3-30B-A3B in full (30.5B parameters, 61 GB in bf16; 128
	// experts, top 8, 3.3B active).
	"qwen3-30b-a3b": {Arch: "qwen3moe", Dim: 2048, Layers: 48, Heads: 32, KVHeads: 4, HeadDim: 128, FFN: 6144, Vocab: 151936,
		MaxSeq: 40960, NormEps: 1e-6, RopeTheta: 1e6, RopeLayout: model.RopeHalf, QKNorm: true,
		MoE: model.MoE{Experts: 128, PerToken: 8, FFN: 768, NormTopK: true}},
	// DeepSeek-V3's dimensions with 4 layers: 1 dense, then 3 MoE layers
	// (the real model has 3 dense and 58 MoE; one dense layer keeps most
	// of the 4 for the layer kind decode time is spent in). 256 experts,
	// top 8 of 4 of 8 groups, 1 shared; latent attention with q rank
	// 1536, kv rank 512, qk 128+64, v 128. About 71 GB in bf16. Plain
	// RoPE over its original 4096 positions (the real config's YaRN
	// changes the tables and the softmax scale, not what a step reads).
	"deepseek-v3": {Arch: "deepseek3", Dim: 7168, Layers: 4, Heads: 128, KVHeads: 128, HeadDim: 64, FFN: 18432, Vocab: 129280,
		MaxSeq: 4096, NormEps: 1e-6, RopeTheta: 10000,
		MLA: model.MLA{QRank: 1536, KVRank: 512, NopeDim: 128, RopeDim: 64, VDim: 128},
		MoE: model.MoE{Experts: 256, PerToken: 8, FFN: 2048, Scoring: model.ScoreSigmoid, NormTopK: true, ScoreBias: true,
			Groups: 8, TopKGroups: 4, RoutedScale: 2.5, SharedFFN: 2048, FirstDense: 1}},
}
