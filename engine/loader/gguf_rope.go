package loader

import (
	"fmt"
	"math"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
)

// ggufScaling reads ARCH.rope.scaling.* into cfg.RopeScaling as llama.cpp
// applies it:
//   - type linear: factor;
//   - type yarn: factor, original_context_length (absent: the trained
//     context, llama.cpp's n_ctx_orig_yarn), yarn_beta_fast and
//     yarn_beta_slow (32 and 1), and yarn_attn_factor, which llama.cpp
//     multiplies by YaRN's own 0.1·ln(factor) + 1 (ggml's rope_yarn).
//
// yarn_ext_factor other than 1 and yarn_log_multiplier other than 0
// (DeepSeek's) are refused by ggufChecks. Other types read as none
// (ggufChecks refuses them).
func ggufScaling(f *gguf.File, arch string, cfg *model.Config, flt func(string, float32, func(float64) error) float32) []error {
	typ, _ := f.String(arch + ".rope.scaling.type")
	if typ != "linear" && typ != "yarn" {
		return nil
	}
	any := func(float64) error { return nil }
	factor := flt("rope.scaling.factor", 0, any)
	switch {
	case factor == 0:
		return []error{fmt.Errorf("%s.rope.scaling.type %s without a %s.rope.scaling.factor", arch, typ, arch)}
	case cfg.RopeScaling.Type != model.RopeScaleNone:
		return []error{fmt.Errorf("%s.rope.scaling.type %s together with %s: only one RoPE scaling is implemented at a time", arch, typ, model.NameRopeFreqs)}
	}
	s := model.RopeScaling{Type: model.RopeScaleLinear, Factor: factor}
	if typ == "yarn" {
		key := arch + ".rope.scaling.original_context_length"
		orig := cfg.MaxSeq
		if v, stated := f.Get(key); stated {
			n, ok := f.Uint(key)
			if !ok || n > math.MaxInt32 {
				return []error{fmt.Errorf("%s = %v is not a non-negative integer", key, v)}
			}
			orig = int(n)
		}
		attn := flt("rope.scaling.yarn_attn_factor", 1, any)
		s = model.RopeScaling{Type: model.RopeScaleYaRN, Factor: factor, OrigContext: orig,
			BetaFast:   flt("rope.scaling.yarn_beta_fast", model.YaRNBetaFast, any),
			BetaSlow:   flt("rope.scaling.yarn_beta_slow", model.YaRNBetaSlow, any),
			AttnFactor: attn * model.YaRNAttentionFactor(float64(factor), 0, 0, 0)}
	}
	if err := s.Check(); err != nil {
		key := ".rope.scaling.factor"
		if typ == "yarn" {
			key = ".rope.scaling"
		}
		return []error{fmt.Errorf("%s%s: %w", arch, key, err)}
	}
	cfg.RopeScaling = s
	return nil
}
