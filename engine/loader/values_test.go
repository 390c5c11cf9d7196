package loader

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// withKV returns tinyKV("llama") with key set to v (appended when absent;
// removed when v is nil).
func withKV(key string, v any) []gguf.KV {
	kv := tinyKV("llama")
	for i, e := range kv {
		if e.Key == key {
			if v == nil {
				return append(kv[:i], kv[i+1:]...)
			}
			kv[i].Value = v
			return kv
		}
	}
	return append(kv, gguf.KV{Key: key, Value: v})
}

// TestGGUFValues: every float and size a GGUF file states is checked, by
// key and value, before anything is sized by it; an absent one gets the
// default.
func TestGGUFValues(t *testing.T) {
	tests := []struct {
		name string
		kv   []gguf.KV
		want string // "" = opens
	}{
		{"theta absent: default", withKV("llama.rope.freq_base", nil), ""},
		{"eps absent: default", withKV("llama.attention.layer_norm_rms_epsilon", nil), ""},
		{"context absent: default", withKV("llama.context_length", nil), ""},
		{"theta NaN", withKV("llama.rope.freq_base", float32(math.NaN())), "llama.rope.freq_base: RoPE base NaN"},
		{"theta +Inf", withKV("llama.rope.freq_base", float32(math.Inf(1))), "llama.rope.freq_base: RoPE base +Inf"},
		{"theta 0", withKV("llama.rope.freq_base", float32(0)), "llama.rope.freq_base: RoPE base 0 is not"},
		{"theta negative", withKV("llama.rope.freq_base", float32(-10000)), "RoPE base -10000"},
		{"theta a string", withKV("llama.rope.freq_base", "10000"), "llama.rope.freq_base = 10000 (string) is not a number"},
		{"eps NaN", withKV("llama.attention.layer_norm_rms_epsilon", float32(math.NaN())), "llama.attention.layer_norm_rms_epsilon: norm epsilon NaN"},
		{"eps negative", withKV("llama.attention.layer_norm_rms_epsilon", float32(-1e-5)), "norm epsilon -1e-05"},
		{"eps 1e39 (float64)", withKV("llama.attention.layer_norm_rms_epsilon", 1e39), "norm epsilon 1e+39"},
		{"eps 0", withKV("llama.attention.layer_norm_rms_epsilon", float32(0)), "norm epsilon 0 is not"},
		{"eps 1e-50 (float64, 0 as a float32)", withKV("llama.attention.layer_norm_rms_epsilon", 1e-50), "norm epsilon 1e-50 is not"},
		{"context 0", withKV("llama.context_length", uint32(0)), "llama.context_length: context length 0"},
		{"context huge", withKV("llama.context_length", uint64(1<<40)), "llama.context_length = 1099511627776 (uint64) is not a non-negative integer"},
		{"context 2^30", withKV("llama.context_length", uint32(1<<30)), "context length 1073741824 is not between 1 and 16777216"},
		{"context negative", withKV("llama.context_length", int32(-1)), "llama.context_length = -1 (int32) is not a non-negative integer"},
		{"kv heads 0", withKV("llama.attention.head_count_kv", uint32(0)), "llama.attention.head_count_kv 0 is not between 1 and 4096"},
		{"kv heads not dividing", withKV("llama.attention.head_count_kv", uint32(3)), "2 llama.attention.head_count are not divisible by 3 llama.attention.head_count_kv"},
		{"heads not dividing hidden", withKV("llama.attention.head_count", uint32(3)), "llama.embedding_length 8 is not divisible by llama.attention.head_count 3"},
		{"layers 0", withKV("llama.block_count", uint32(0)), "llama.block_count 0 is not between 1"},
		{"layers huge", withKV("llama.block_count", uint32(1<<20)), "llama.block_count 1048576 is not between 1 and 4096"},
		{"hidden huge", withKV("llama.embedding_length", uint32(1<<30)), "llama.embedding_length 1073741824 is not between 1 and 1048576"},
		{"vocab_size disagrees", withKV("llama.vocab_size", uint32(7)), "llama.vocab_size = 7, but token_embd.weight has 6 rows"},
		{"vocab_size agrees", withKV("llama.vocab_size", uint32(6)), ""},
		{"odd key_length", withKV("llama.attention.key_length", uint32(3)), "llama.attention.key_length 3 is odd"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".gguf", ggufBytes(t, tt.kv, tinyTensors(tinyCfg)))
		src, err := Open(path, Options{})
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: Open: %v", tt.name, err)
				continue
			}
			if c := src.Config(); c.RopeTheta != 10000 || c.NormEps != 1e-5 || c.MaxSeq <= 0 {
				t.Errorf("%s: config %+v, want theta 10000, eps 1e-5 and a context", tt.name, c)
			}
			src.Close()
			continue
		}
		if err == nil {
			src.Close()
			t.Errorf("%s: Open succeeded; want an error containing %q", tt.name, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q; want one line containing %q and the file", tt.name, err, tt.want)
		}
	}
}

// TestGGUFUnsupported: metadata and tensors that ask for what the engine
// does not implement are refused by key or tensor name.
func TestGGUFUnsupported(t *testing.T) {
	extra := func(name string, shape ...int) []*tensor.Tensor {
		ts := tinyTensors(tinyCfg)
		w := &tensor.Tensor{Name: name, DType: tensor.F32, Shape: shape}
		w.Data = make([]byte, 4*w.Elems())
		return append(ts, w)
	}
	tests := []struct {
		name    string
		kv      []gguf.KV
		tensors []*tensor.Tensor
		kind    unsupported.Kind
		want    string // "" = opens
	}{
		{"scaling none", withKV("llama.rope.scaling.type", "none"), nil, 0, ""},
		{"rope dims = head dim", withKV("llama.rope.dimension_count", uint32(4)), nil, 0, ""},
		{"expert_count 0", withKV("llama.expert_count", uint32(0)), nil, 0, ""},
		{"linear scaling", append(withKV("llama.rope.scaling.type", "linear"), gguf.KV{Key: "llama.rope.scaling.factor", Value: float32(4)}), nil, 0, ""},
		{"longrope scaling", withKV("llama.rope.scaling.type", "longrope"), nil, unsupported.RopeScaling, `llama.rope.scaling.type = "longrope" (supported: plain RoPE, linear or yarn scaling`},
		{"scaling factor without a type", withKV("llama.rope.scaling.factor", float32(8)), nil, unsupported.RopeScaling, "llama.rope.scaling.factor = 8"},
		{"partial rotary", withKV("llama.rope.dimension_count", uint32(2)), nil, unsupported.AttentionShape, "llama.rope.dimension_count = 2"},
		{"value length", withKV("llama.attention.value_length", uint32(8)), nil, unsupported.AttentionShape, "llama.attention.value_length = 8"},
		{"sliding window", withKV("llama.attention.sliding_window", uint32(4096)), nil, unsupported.SlidingWindow, "llama.attention.sliding_window = 4096"},
		{"experts on qwen3", append(tinyKV("qwen3"), gguf.KV{Key: "qwen3.expert_count", Value: uint32(8)}), nil, unsupported.Experts, "qwen3.expert_count = 8"},
		{"unknown key", withKV("llama.logit_scale", float32(0.5)), nil, unsupported.UnreadMetadata, "1 key (llama.logit_scale)"},
		{"architecture", tinyKV("gemma2"), nil, unsupported.Architecture, `general.architecture = "gemma2" (supported: llama, qwen2, qwen3, gemma3)`},
		{"rope_freqs read (llama)", nil, extra("rope_freqs.weight", 2), 0, ""},
		{"bias", nil, extra("blk.0.attn_q.bias", 8), unsupported.Bias, "1 tensor (blk.0.attn_q.bias)"},
		{"q norm", nil, extra("blk.1.attn_q_norm.weight", 4), unsupported.QKNorm, "blk.1.attn_q_norm.weight"},
		{"router", nil, extra("blk.0.ffn_gate_inp.weight", 4, 8), unsupported.Experts, "blk.0.ffn_gate_inp.weight"},
		{"unread", nil, extra("blk.0.post_ffw_norm.weight", 8), unsupported.UnreadTensor, "1 tensor (blk.0.post_ffw_norm.weight)"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		if tt.kv == nil {
			tt.kv = tinyKV("llama")
		}
		if tt.tensors == nil {
			tt.tensors = tinyTensors(tinyCfg)
		}
		path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".gguf", ggufBytes(t, tt.kv, tt.tensors))
		src, err := Open(path, Options{})
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: Open: %v", tt.name, err)
			} else {
				src.Close()
			}
			continue
		}
		if err == nil {
			src.Close()
			t.Errorf("%s: Open succeeded; want a refusal containing %q", tt.name, tt.want)
			continue
		}
		ref, ok := unsupported.As(err)
		if !ok || !ref.Has(tt.kind) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q; want a %v refusal containing %q and the file", tt.name, err, tt.kind, tt.want)
		}
	}
}

// TestHFValues: config.json's stated floats and sizes, and unread tensors.
func TestHFValues(t *testing.T) {
	hfCfg := tinyCfg
	hfCfg.RopeLayout = model.RopeHalf
	tests := []struct {
		name   string
		config string
		edit   func(map[string]*tensor.Tensor)
		want   string
	}{
		{"theta 0", strings.Replace(tinyHFConfig, `"rope_theta":10000.0`, `"rope_theta":0`, 1), nil, "config.json: rope_theta: RoPE base 0 is not"},
		{"theta in rope_parameters negative", strings.Replace(tinyHFConfig, `"rope_theta":10000.0`, `"rope_parameters":{"rope_theta":-1}`, 1), nil, "rope_parameters.rope_theta: RoPE base -1"},
		{"eps 1e39", strings.Replace(tinyHFConfig, `"rms_norm_eps":1e-5`, `"rms_norm_eps":1e39`, 1), nil, "rms_norm_eps: norm epsilon 1e+39"},
		{"eps negative", strings.Replace(tinyHFConfig, `"rms_norm_eps":1e-5`, `"rms_norm_eps":-1e-5`, 1), nil, "rms_norm_eps: norm epsilon -1e-05"},
		{"context 0", strings.Replace(tinyHFConfig, `"max_position_embeddings":16`, `"max_position_embeddings":0`, 1), nil, "max_position_embeddings: context length 0"},
		{"vocab 0", strings.Replace(tinyHFConfig, `"vocab_size":6`, `"vocab_size":0`, 1), nil, "vocab_size 0 is not between 1"},
		{"heads not dividing hidden", strings.Replace(tinyHFConfig, `"num_attention_heads":2`, `"num_attention_heads":3`, 1), nil, "hidden_size 8 is not divisible by num_attention_heads 3"},
		{"layers huge", strings.Replace(tinyHFConfig, `"num_hidden_layers":2`, `"num_hidden_layers":100000`, 1), nil, "num_hidden_layers 100000 is not between 1 and 4096"},
		{"dynamic rope_scaling (transformers 4)", strings.Replace(tinyHFConfig, `"rope_theta":10000.0`, `"rope_theta":500000.0,"rope_scaling":{"factor":4.0,"rope_type":"dynamic"}`, 1), nil, "rope_scaling.rope_type = dynamic (factor 4) (supported: plain RoPE or linear, llama3, yarn)"},
		{"llama3 without its factors", strings.Replace(tinyHFConfig, `"rope_theta":10000.0`, `"rope_theta":500000.0,"rope_scaling":{"factor":8.0,"rope_type":"llama3"}`, 1), nil, "rope_scaling: llama3 RoPE scaling without [low_freq_factor high_freq_factor original_max_position_embeddings]"},
		{"llama3 ramp inverted", strings.Replace(tinyHFConfig, `"rope_theta":10000.0`, `"rope_parameters":{"rope_theta":5e5,"factor":8.0,"low_freq_factor":4.0,"high_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"}`, 1), nil, "rope_parameters: llama3 RoPE scaling low_freq_factor 4 and high_freq_factor 1: want 0 < low < high"},
		{"quantization_config", strings.Replace(tinyHFConfig, `"hidden_act"`, `"quantization_config":{"quant_method":"awq","bits":4},"hidden_act"`, 1), nil, "quantization_config = awq"},
		{"bias tensor", tinyHFConfig, func(m map[string]*tensor.Tensor) {
			m["model.layers.0.self_attn.q_proj.bias"] = &tensor.Tensor{Name: "model.layers.0.self_attn.q_proj.bias", DType: tensor.F32, Shape: []int{8}, Data: make([]byte, 32)}
		}, "biases: 1 tensor (model.layers.0.self_attn.q_proj.bias)"},
		{"unread tensor", tinyHFConfig, func(m map[string]*tensor.Tensor) {
			m["model.layers.1.extra_norm.weight"] = &tensor.Tensor{Name: "model.layers.1.extra_norm.weight", DType: tensor.F32, Shape: []int{8}, Data: make([]byte, 32)}
		}, "tensors nothing reads: 1 tensor (model.layers.1.extra_norm.weight)"},
	}
	for _, tt := range tests {
		dir := writeHFDir(t, hfCfg, tt.config, tt.edit)
		src, err := Open(dir, Options{})
		if err == nil {
			src.Close()
			t.Errorf("%s: Open(%q) succeeded; want an error containing %q", tt.name, dir, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q; want one line containing %q and the folder", tt.name, err, tt.want)
		}
	}
}

// TestNonFiniteWeights: NaN or Inf in a norm vector, or in the scale of a
// quantized block, refuses the file naming the tensor and the element or
// block.
func TestNonFiniteWeights(t *testing.T) {
	cfg := tinyCfg
	cfg.Dim, cfg.HeadDim, cfg.FFN = 32, 16, 32
	kv := tinyKV("llama")
	for i, e := range kv {
		switch e.Key {
		case "llama.embedding_length", "llama.feed_forward_length":
			kv[i].Value = uint32(32)
		}
	}
	// q80 returns cfg's tensors with blk.0.attn_q.weight as Q8_0, its block
	// 3's scale set to the f16 bits given (0: untouched).
	build := func(scale uint16, normElem float32) []*tensor.Tensor {
		ts := tinyTensors(cfg)
		for i, w := range ts {
			switch w.Name {
			case "blk.0.attn_q.weight":
				f := make([]float32, w.Elems())
				for j := range f {
					f[j] = float32(j%7) / 10
				}
				q := &tensor.Tensor{Name: w.Name, DType: tensor.Q8_0, Shape: w.Shape, Data: make([]byte, w.Elems()/32*34)}
				tensor.Encode(q.Data, tensor.Q8_0, f)
				if scale != 0 {
					binary.LittleEndian.PutUint16(q.Data[3*34:], scale)
				}
				ts[i] = q
			case model.NameOutputNorm:
				if normElem != 0 {
					binary.LittleEndian.PutUint32(w.Data[4*5:], math.Float32bits(normElem))
				}
			}
		}
		return ts
	}
	tests := []struct {
		name     string
		scale    uint16
		normElem float32
		want     string // "" = opens
	}{
		{"finite", 0, 0, ""},
		{"Q8_0 scale NaN", 0x7e00, 0, `tensor "blk.0.attn_q.weight" (Q8_0 [32 32]): block 3 has scale NaN`},
		{"Q8_0 scale +Inf", 0x7c00, 0, "block 3 has scale +Inf"},
		{"norm NaN", 0, float32(math.NaN()), `tensor "output_norm.weight" (F32 [32]): element 5 is NaN`},
		{"norm -Inf", 0, float32(math.Inf(-1)), "element 5 is -Inf"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".gguf", ggufBytes(t, kv, build(tt.scale, tt.normElem)))
		src, err := Open(path, Options{})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Open: %v", tt.name, err)
		case tt.want == "":
			src.Close()
		case err == nil:
			src.Close()
			t.Errorf("%s: Open succeeded; want an error containing %q", tt.name, tt.want)
		case !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path):
			t.Errorf("%s: error %q; want one containing %q and the file", tt.name, err, tt.want)
		}
	}
}

// TestHFRedundantTensors: tensors that restate what the engine computes
// (plain RoPE inv_freq buffers, a tied lm_head equal to the embedding) do
// not refuse a model; ones that differ do.
func TestHFRedundantTensors(t *testing.T) {
	hfCfg := tinyCfg
	hfCfg.RopeLayout = model.RopeHalf
	invFreq := func(scale float64) func(map[string]*tensor.Tensor) {
		return func(m map[string]*tensor.Tensor) {
			for l := range hfCfg.Layers {
				f := make([]float32, hfCfg.HeadDim/2)
				for i := range f {
					f[i] = float32(scale * math.Pow(10000, -float64(2*i)/float64(hfCfg.HeadDim)))
				}
				name := fmt.Sprintf("model.layers.%d.self_attn.rotary_emb.inv_freq", l)
				w := &tensor.Tensor{Name: name, DType: tensor.F32, Shape: []int{len(f)}, Data: make([]byte, 4*len(f))}
				tensor.Encode(w.Data, tensor.F32, f)
				m[name] = w
			}
		}
	}
	tied := strings.Replace(tinyHFConfig, `"tie_word_embeddings":false`, `"tie_word_embeddings":true`, 1)
	lmHead := func(same bool) func(map[string]*tensor.Tensor) {
		return func(m map[string]*tensor.Tensor) {
			w := *m["model.embed_tokens.weight"]
			w.Name = "lm_head.weight"
			w.Data = append([]byte(nil), w.Data...)
			if !same {
				w.Data[0] ^= 1
			}
			m["lm_head.weight"] = &w
		}
	}
	tests := []struct {
		name, config string
		edit         func(map[string]*tensor.Tensor)
		want         string // "" = opens
	}{
		{"plain inv_freq", tinyHFConfig, invFreq(1), ""},
		{"scaled inv_freq", tinyHFConfig, invFreq(0.125), "RoPE scaling: 2 tensors (model.layers.0.self_attn.rotary_emb.inv_freq"},
		{"tied, lm_head equal", tied, lmHead(true), ""},
		{"tied, lm_head differs", tied, lmHead(false), "tensors nothing reads: 1 tensor (lm_head.weight)"},
	}
	for _, tt := range tests {
		dir := writeHFDir(t, hfCfg, tt.config, tt.edit)
		src, err := Open(dir, Options{})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Open: %v", tt.name, err)
		case tt.want == "":
			src.Close()
		case err == nil:
			src.Close()
			t.Errorf("%s: Open succeeded; want an error containing %q", tt.name, tt.want)
		case !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s: error %q; want one containing %q", tt.name, err, tt.want)
		}
	}
}
