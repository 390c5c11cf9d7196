package loader

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"rigscope/engine/loader/safetensors"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// hfRedundant drops from unread the tensors that restate what the engine
// computes anyway, so that old or tied checkpoints still load:
//   - a rotary_emb.inv_freq buffer (older transformers saved one per layer)
//     equal to the frequencies the engine computes, 1/theta^(2i/head_dim)
//     divided by the config's scaling, within its dtype's rounding (one
//     that differs encodes another scaling and stays unread);
//   - lm_head.weight in a tied model when it is byte-equal to
//     embed_tokens.weight (transformers ties them; a differing one stays
//     unread, as the model would be ambiguous).
func hfRedundant(cfg model.Config, m *safetensors.Model, unread []string) []string {
	out := unread[:0:0]
	for _, n := range unread {
		if !(strings.HasSuffix(n, ".rotary_emb.inv_freq") && sameInvFreq(cfg, m, n)) && !(n == "lm_head.weight" && cfg.TiedEmbed && sameBytes(m, n, "model.embed_tokens.weight")) {
			out = append(out, n)
		}
	}
	return out
}

func sameInvFreq(cfg model.Config, m *safetensors.Model, name string) bool {
	t, err := m.Tensor(name)
	half := cfg.HeadDim / 2
	if err != nil || t.ExpectShape(half) != nil {
		return false
	}
	tol := 1e-5
	if t.DType != tensor.F32 {
		tol = 1e-2
	}
	div := cfg.RopeScaling.Divisors(cfg.RopeTheta, cfg.HeadDim) // nil: plain
	for i := range half {
		want := math.Pow(float64(cfg.RopeTheta), -float64(2*i)/float64(cfg.HeadDim))
		if div != nil {
			want /= float64(div[i])
		}
		if got := float64(floatAt(t, i)); math.Abs(got-want) > tol*want {
			return false
		}
	}
	return true
}

func sameBytes(m *safetensors.Model, a, b string) bool {
	ia, da, err1 := m.Raw(a)
	ib, db, err2 := m.Raw(b)
	return err1 == nil && err2 == nil && ia.FileDType == ib.FileDType && slices.Equal(ia.Shape, ib.Shape) && bytes.Equal(da, db)
}
