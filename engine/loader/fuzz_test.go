package loader

import (
	"math"
	"testing"
	"time"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// FuzzGGUFSource runs the whole GGUF path (parse, config from metadata,
// weight validation, tokenizer from metadata) on arbitrary bytes, seeded
// with a tiny valid model. It must never panic, and a source it accepts must
// hand out every expected tensor.
func FuzzGGUFSource(f *testing.F) {
	t := &testing.T{}
	f.Add(ggufBytes(t, tinyKV("llama"), tinyTensors(tinyCfg)))
	f.Add(ggufBytes(t, tinyKV("llama")[:5], tinyTensors(tinyCfg)[:3]))
	// Stated values the loader must refuse, and features it does not
	// implement (a mutation of one is a near miss worth exploring).
	f.Add(ggufBytes(t, withKV("llama.rope.freq_base", float32(math.NaN())), tinyTensors(tinyCfg)))
	f.Add(ggufBytes(t, withKV("llama.attention.layer_norm_rms_epsilon", float32(-1)), tinyTensors(tinyCfg)))
	f.Add(ggufBytes(t, withKV("llama.context_length", uint32(0)), tinyTensors(tinyCfg)))
	f.Add(ggufBytes(t, withKV("llama.rope.scaling.type", "yarn"), tinyTensors(tinyCfg)))
	f.Add(ggufBytes(t, withKV("llama.expert_count", uint32(8)), tinyTensors(tinyCfg)))
	yarn := append(withKV("llama.rope.scaling.type", "yarn"), gguf.KV{Key: "llama.rope.scaling.factor", Value: float32(4)},
		gguf.KV{Key: "llama.rope.scaling.original_context_length", Value: uint32(8)}, gguf.KV{Key: "llama.rope.scaling.yarn_beta_fast", Value: float32(32)})
	f.Add(ggufBytes(t, yarn, tinyTensors(tinyCfg)))
	rope := &tensor.Tensor{Name: "rope_freqs.weight", DType: tensor.F32, Shape: []int{2}, Data: make([]byte, 8)}
	f.Add(ggufBytes(t, tinyKV("llama"), append(tinyTensors(tinyCfg), rope)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tm := time.AfterFunc(10*time.Second, func() { panic("FuzzGGUFSource: one input ran over 10 s (hang?)") })
		defer tm.Stop()
		gf, err := gguf.Parse(data)
		if err != nil {
			return
		}
		src, err := ggufSource(gf)
		if err != nil {
			return
		}
		c := src.Config()
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted a config that does not validate: %v", err)
		}
		if model.CheckRopeTheta(float64(c.RopeTheta)) != nil || model.CheckNormEps(float64(c.NormEps)) != nil || model.CheckContext(c.MaxSeq) != nil {
			t.Fatalf("accepted a config with theta %g, eps %g, context %d", c.RopeTheta, c.NormEps, c.MaxSeq)
		}
		for name := range ExpectedShapes(src.Config()) {
			if _, err := src.Tensor(name); err != nil {
				t.Fatalf("accepted source lacks %q: %v", name, err)
			}
		}
		if tok, err := src.Tokenizer(); err == nil {
			tok.Decode(tok.Encode("a b", true))
		}
	})
}
