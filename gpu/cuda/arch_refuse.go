package cuda

// Which extensions of the Llama block the GPU path runs, decided on the
// host (no cuda build tag, so the test runs everywhere).

import (
	"fmt"
	"strings"

	"rigscope/engine/model"
)

// gpuMissing names each extension cfg uses that the GPU does not
// implement at tp ranks: the config's Extensions less the ones arch.go
// runs (RoPE scaling of every kind, q/k/v biases, q/k head norms, sliding
// windows, Gemma 3's block), mixtures of experts (moe.go: softmax or
// sigmoid scores, the correction bias, grouped choice, shared experts,
// dense first layers) and latent attention (mla.go), each within its
// kernels' limits. Gemma 3's final logit soft-capping stays refused.
func gpuMissing(cfg model.Config, tp int) []string {
	c := cfg
	c.RopeScaling = model.RopeScaling{}
	c.QKVBias, c.QKNorm, c.SlidingWindow = false, false, 0
	var miss []string
	if m := cfg.MoE; m.Enabled() {
		c.MoE = model.MoE{}
		for _, s := range moeMissing(cfg) {
			miss = append(miss, "mixture of experts ("+m.String()+"): "+s)
		}
	}
	if a := cfg.MLA; a.Enabled() {
		c.MLA = model.MLA{}
		for _, s := range mlaMissing(cfg) {
			miss = append(miss, "multi-head latent attention ("+a.String()+"): "+s)
		}
	}
	if g := cfg.Gemma; g.On {
		c.Gemma = model.Gemma3{}
		if g.FinalSoftcap > 0 {
			miss = append(miss, fmt.Sprintf("Gemma 3's final logit soft-capping %g", g.FinalSoftcap))
		}
	}
	return append(c.Extensions(), miss...)
}

// checkImplemented refuses, by name, a model whose config uses an
// extension of the Llama block that the kernels here do not implement at
// tp ranks, rather than running it wrong.
func checkImplemented(cfg model.Config, tp int) error {
	if ext := gpuMissing(cfg, tp); len(ext) > 0 {
		return fmt.Errorf("cuda: the GPU path does not implement %s, which this %s model uses; run it with --device cpu", strings.Join(ext, ", "), cfg.Arch)
	}
	return nil
}

// Limits of the kernels (moe.cu's MOE_MAXE, MOE_MAXK, MOE_MAXDIM, MOE_MAXG).
const (
	moeMaxExperts  = 512
	moeMaxPerToken = 16
	moeMaxDim      = 8192
	moeMaxGroups   = 64
)

// moeMissing names what the GPU's MoE kernels do not implement in m
// (nil: all of it).
func moeMissing(cfg model.Config) []string {
	m := cfg.MoE
	var miss []string
	if m.Scoring != model.ScoreSoftmax && m.Scoring != model.ScoreSigmoid {
		miss = append(miss, fmt.Sprintf("%s router scores", m.Scoring))
	}
	if m.Groups > moeMaxGroups {
		miss = append(miss, fmt.Sprintf("grouped expert choice with %d groups (at most %d)", m.Groups, moeMaxGroups))
	}
	if m.Experts > moeMaxExperts {
		miss = append(miss, fmt.Sprintf("%d experts (at most %d)", m.Experts, moeMaxExperts))
	}
	if m.PerToken > moeMaxPerToken {
		miss = append(miss, fmt.Sprintf("%d experts per token (at most %d)", m.PerToken, moeMaxPerToken))
	}
	if cfg.Dim > moeMaxDim {
		miss = append(miss, fmt.Sprintf("hidden size %d (the router kernel holds at most %d)", cfg.Dim, moeMaxDim))
	}
	return miss
}

// Limits of the kernels (mla.cu's MLA_MAXW, MLA_MAXQK).
const (
	mlaMaxWidth = 1088
	mlaMaxQK    = 512
)

// mlaMissing names what the GPU's latent attention kernels do not
// implement in cfg (nil: all of it).
func mlaMissing(cfg model.Config) []string {
	a := cfg.MLA
	var miss []string
	if a.KVRank+a.RopeDim > mlaMaxWidth {
		miss = append(miss, fmt.Sprintf("a latent of %d + %d floats per token (at most %d)", a.KVRank, a.RopeDim, mlaMaxWidth))
	}
	if a.QKDim() > mlaMaxQK {
		miss = append(miss, fmt.Sprintf("query heads of %d dims (at most %d)", a.QKDim(), mlaMaxQK))
	}
	if a.RopeDim%2 != 0 {
		miss = append(miss, fmt.Sprintf("an odd rope dim %d", a.RopeDim))
	}
	return miss
}
