package cuda

// Which extensions of the Llama block the GPU path runs, decided on the
// host (no cuda build tag, so the test runs everywhere).

import (
	"fmt"
	"strings"

	"rigscope/engine/model"
)

// gpuMissing names each extension cfg uses that the GPU does not
// implement: the config's Extensions less the ones arch.go runs (RoPE
// scaling of every kind, q/k/v biases, q/k head norms, sliding windows).
// Gemma 3's block, mixtures of experts and latent attention stay refused.
func gpuMissing(cfg model.Config) []string {
	c := cfg
	c.RopeScaling = model.RopeScaling{}
	c.QKVBias, c.QKNorm, c.SlidingWindow = false, false, 0
	return c.Extensions()
}

// checkImplemented refuses, by name, a model whose config uses an
// extension of the Llama block that the kernels here do not implement,
// rather than running it wrong.
func checkImplemented(cfg model.Config) error {
	if ext := gpuMissing(cfg); len(ext) > 0 {
		return fmt.Errorf("cuda: the GPU path does not implement %s, which this %s model uses; run it with --device cpu", strings.Join(ext, ", "), cfg.Arch)
	}
	return nil
}
