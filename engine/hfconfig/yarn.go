package hfconfig

import (
	"fmt"
	"math"

	"rigscope/engine/model"
)

// yarnParams are the fields of a YaRN rope_parameters / rope_scaling
// beyond factor and original_max_position_embeddings.
type yarnParams struct {
	BetaFast        *float64 `json:"beta_fast"`
	BetaSlow        *float64 `json:"beta_slow"`
	MScale          *float64 `json:"mscale"`
	MScaleAllDim    *float64 `json:"mscale_all_dim"`
	AttentionFactor *float64 `json:"attention_factor"`
	Truncate        *bool    `json:"truncate"`
}

// yarn reads a YaRN scaling as transformers 5 does
// (_compute_yarn_parameters after standardize_rope_params):
//   - factor as stated (transformers 4.4x instead replaced it by
//     max_position_embeddings / original_max_position_embeddings when the
//     latter was stated; transformers 5, vLLM and llama.cpp use the stated
//     factor); absent, that ratio;
//   - original_max_position_embeddings from the scaling object, else the
//     top level, else max_position_embeddings (both stated must agree);
//   - beta_fast / beta_slow 32 / 1 when absent or 0;
//   - the attention factor: attention_factor, else from mscale and
//     mscale_all_dim, else 0.1·ln(factor)+1 (model.YaRNAttentionFactor);
//   - truncate true unless stated false.
func (rp *ropeParams) yarn(field string, f *Fields) (model.RopeScaling, error) {
	s := model.RopeScaling{Type: model.RopeScaleYaRN, BetaFast: model.YaRNBetaFast, BetaSlow: model.YaRNBetaSlow}
	fail := func(format string, a ...any) (model.RopeScaling, error) {
		return model.RopeScaling{}, fmt.Errorf("%s: yarn RoPE scaling: %s", field, fmt.Sprintf(format, a...))
	}
	var orig float64
	switch {
	case rp.OrigContext != nil && f.OrigMaxPos != nil && *rp.OrigContext != *f.OrigMaxPos:
		return fail("original_max_position_embeddings %g and the top-level original_max_position_embeddings %g disagree", *rp.OrigContext, *f.OrigMaxPos)
	case rp.OrigContext != nil:
		orig = *rp.OrigContext
	case f.OrigMaxPos != nil:
		orig = *f.OrigMaxPos
	case f.MaxPos != nil:
		orig = float64(*f.MaxPos)
	default:
		return fail("no original_max_position_embeddings and no max_position_embeddings to take it from")
	}
	if orig != math.Trunc(orig) || orig < 1 || orig > model.MaxContext {
		return fail("original_max_position_embeddings %g is not a whole number of positions between 1 and %d", orig, model.MaxContext)
	}
	s.OrigContext = int(orig)
	factor := 0.0
	switch {
	case rp.Factor != nil:
		factor = *rp.Factor
	case f.MaxPos != nil:
		factor = float64(*f.MaxPos) / orig
	default:
		return fail("no factor and no max_position_embeddings to derive it from")
	}
	s.Factor = float32(factor)
	if v := rp.BetaFast; v != nil && *v != 0 {
		s.BetaFast = float32(*v)
	}
	if v := rp.BetaSlow; v != nil && *v != 0 {
		s.BetaSlow = float32(*v)
	}
	val := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	if rp.AttentionFactor != nil && !(*rp.AttentionFactor > 0) {
		return fail("attention_factor %g is not above 0", *rp.AttentionFactor)
	}
	if rp.MScale != nil && !(*rp.MScale >= 0) || rp.MScaleAllDim != nil && !(*rp.MScaleAllDim >= 0) {
		return fail("mscale %g and mscale_all_dim %g must not be negative", val(rp.MScale), val(rp.MScaleAllDim))
	}
	s.AttnFactor = model.YaRNAttentionFactor(factor, val(rp.AttentionFactor), val(rp.MScale), val(rp.MScaleAllDim))
	s.MScaleAllDim = float32(val(rp.MScaleAllDim))
	s.NoTruncate = rp.Truncate != nil && !*rp.Truncate
	return s, nil
}
