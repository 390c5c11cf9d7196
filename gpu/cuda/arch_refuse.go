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
// windows, Gemma 3's block). Mixtures of experts, latent attention and
// Gemma 3's final logit soft-capping stay refused.
func gpuMissing(cfg model.Config, tp int) []string {
	c := cfg
	c.RopeScaling = model.RopeScaling{}
	c.QKVBias, c.QKNorm, c.SlidingWindow = false, false, 0
	var miss []string
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
