package loader

import (
	"strings"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

// TestArchConfigs: each architecture's extensions are read from both
// formats, and the HF and GGUF copies of a model agree on everything but
// the Q/K row layout (llama.cpp permutes llama's rows) and how the RoPE
// scaling is stated.
func TestArchConfigs(t *testing.T) {
	llama3 := model.RopeScaling{Type: model.RopeScaleLlama3, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 64}
	for _, tc := range []struct {
		hf, gguf string
		want     model.Config // the extension fields
		layout   model.RopeLayout
	}{
		{"arch/tiny-llama31-hf", "arch/tiny-llama31.F16.gguf", model.Config{Arch: "llama", RopeScaling: llama3}, model.RopeInterleaved},
		{"arch/tiny-qwen2-hf", "arch/tiny-qwen2.F16.gguf", model.Config{Arch: "qwen2", QKVBias: true}, model.RopeHalf},
		{"arch/tiny-qwen3-hf", "arch/tiny-qwen3.F16.gguf", model.Config{Arch: "qwen3", QKNorm: true}, model.RopeHalf},
		{"arch/tiny-mistral-hf", "", model.Config{Arch: "mistral", SlidingWindow: 48}, model.RopeHalf},
	} {
		src, err := Open(fixtures.Path(t, tc.hf), Options{})
		if err != nil {
			t.Fatal(err)
		}
		hc := src.Config()
		src.Close()
		got := model.Config{Arch: hc.Arch, RopeScaling: hc.RopeScaling, QKVBias: hc.QKVBias, QKNorm: hc.QKNorm, SlidingWindow: hc.SlidingWindow}
		if got != tc.want || hc.RopeLayout != model.RopeHalf {
			t.Errorf("%s: extensions %+v, layout %v; want %+v, rotate-half", tc.hf, got, hc.RopeLayout, tc.want)
		}
		if tc.gguf == "" {
			continue
		}
		src, err = Open(fixtures.Path(t, tc.gguf), Options{})
		if err != nil {
			t.Fatal(err)
		}
		gc := src.Config()
		src.Close()
		if gc.RopeLayout != tc.layout {
			t.Errorf("%s: layout %v, want %v", tc.gguf, gc.RopeLayout, tc.layout)
		}
		if hc.RopeScaling.Type == model.RopeScaleLlama3 && gc.RopeScaling.Type != model.RopeScaleFreqs {
			t.Errorf("%s: scaling %v, want the rope_freqs tensor", tc.gguf, gc.RopeScaling)
		}
		gc.RopeLayout, gc.RopeScaling, gc.MaxSeq = hc.RopeLayout, hc.RopeScaling, hc.MaxSeq
		if gc != hc {
			t.Errorf("%s: config %+v; %s has %+v", tc.gguf, gc, tc.hf, hc)
		}
	}
}

// TestGGUFLinearScaling: rope.scaling.type linear reads its factor; one
// without a factor, below 1, or with rope_freqs.weight as well is refused
// naming the key.
func TestGGUFLinearScaling(t *testing.T) {
	linear := func(extra ...gguf.KV) []gguf.KV { return append(withKV("llama.rope.scaling.type", "linear"), extra...) }
	factor := func(v float32) gguf.KV { return gguf.KV{Key: "llama.rope.scaling.factor", Value: v} }
	freqs := append(tinyTensors(tinyCfg), &tensor.Tensor{Name: model.NameRopeFreqs, DType: tensor.F32, Shape: []int{2}, Data: make([]byte, 8)})
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		kv      []gguf.KV
		tensors []*tensor.Tensor
		want    string // error substring; "" = linear factor 4
	}{
		{"linear 4", linear(factor(4)), nil, ""},
		{"no factor", linear(), nil, "llama.rope.scaling.type linear without a llama.rope.scaling.factor"},
		{"factor 0.5", linear(factor(0.5)), nil, "llama.rope.scaling.factor: RoPE scaling factor 0.5 is not between 1 and 1e6"},
		{"with rope_freqs", linear(factor(4)), freqs, "only one RoPE scaling"},
	} {
		if tc.tensors == nil {
			tc.tensors = tinyTensors(tinyCfg)
		}
		path := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf", ggufBytes(t, tc.kv, tc.tensors))
		src, err := Open(path, Options{})
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v; want one containing %q", tc.name, err, tc.want)
			}
			if err == nil {
				src.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if s := src.Config().RopeScaling; s != (model.RopeScaling{Type: model.RopeScaleLinear, Factor: 4}) {
			t.Errorf("%s: scaling %v, want linear (factor 4)", tc.name, s)
		}
		src.Close()
	}
}

// TestHFTransformers4Scaling: a config.json as transformers 4 writes Llama
// 3.1's (rope_theta and rope_scaling at the top level) loads with its
// scaling, as transformers 5's rope_parameters does.
func TestHFTransformers4Scaling(t *testing.T) {
	hfCfg := tinyCfg
	hfCfg.RopeLayout = model.RopeHalf
	const params = `"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8,"rope_type":"llama3"`
	want := model.RopeScaling{Type: model.RopeScaleLlama3, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8}
	for _, spelling := range []string{
		`"rope_theta":500000.0,"rope_scaling":{` + params + `}`,
		`"rope_parameters":{"rope_theta":500000.0,` + params + `}`,
	} {
		dir := writeHFDir(t, hfCfg, strings.Replace(tinyHFConfig, `"rope_theta":10000.0`, spelling, 1), nil)
		src, err := Open(dir, Options{})
		if err != nil {
			t.Errorf("%s: %v", spelling, err)
			continue
		}
		if c := src.Config(); c.RopeScaling != want || c.RopeTheta != 500000 {
			t.Errorf("%s: scaling %v, theta %g; want %v, 500000", spelling, c.RopeScaling, c.RopeTheta, want)
		}
		src.Close()
	}
}
