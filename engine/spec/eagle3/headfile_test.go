package eagle3_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"rigscope/engine/model"
)

// rawTensor is one tensor of a test head file, in any safetensors dtype.
type rawTensor struct {
	dtype string
	shape []int
	data  []byte
}

// headSpec describes a test head for a target: its config.json (as a map,
// so tests can break it) and its tensors.
type headSpec struct {
	config  map[string]any
	tensors map[string]rawTensor
}

func f32Tensor(rng *rand.Rand, scale float32, shape ...int) rawTensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(scale*(2*rng.Float32()-1)))
	}
	return rawTensor{"F32", shape, b}
}

func onesTensor(n int) rawTensor {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
	}
	return rawTensor{"F32", []int{n}, b}
}

func i64Tensor(v []int64) rawTensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return rawTensor{"I64", []int{len(v)}, b}
}

func boolTensor(v []bool) rawTensor {
	b := make([]byte, len(v))
	for i, x := range v {
		if x {
			b[i] = 1
		}
	}
	return rawTensor{"BOOL", []int{len(v)}, b}
}

// newHeadSpec makes a random head for target config tc with a draft
// vocabulary of the even target ids 2..2*draftVocab (d2t[d] = d+2) and
// aux layers [0, 1, 2] in the SGLang convention.
func newHeadSpec(tc model.Config, draftVocab int, seed uint64) headSpec {
	rng := rand.New(rand.NewPCG(seed, 7))
	dim, hd, ffn := tc.Dim, tc.HeadDim, 2*tc.Dim
	heads, kv := tc.Heads, tc.KVHeads
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLMEagle3"}, "model_type": "llama",
		"hidden_size": dim, "intermediate_size": ffn, "num_attention_heads": heads,
		"num_key_value_heads": kv, "head_dim": hd, "num_hidden_layers": 1, "hidden_act": "silu",
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": nil,
		"max_position_embeddings": 2048, "vocab_size": tc.Vocab, "draft_vocab_size": draftVocab,
		"eagle_config": map[string]any{"eagle_aux_hidden_state_layer_ids": []int{0, 1, 2}, "use_aux_hidden_state": true},
	}
	d2t := make([]int64, draftVocab)
	t2d := make([]bool, tc.Vocab)
	for d := range d2t {
		d2t[d] = int64(d + 2) // target id 2d+2
		t2d[2*d+2] = true
	}
	s := func(fanIn int) float32 { return float32(1 / math.Sqrt(float64(fanIn))) }
	ts := map[string]rawTensor{
		"fc.weight":                                f32Tensor(rng, s(3*dim), dim, 3*dim),
		"midlayer.input_layernorm.weight":          onesTensor(dim),
		"midlayer.hidden_norm.weight":              onesTensor(dim),
		"midlayer.post_attention_layernorm.weight": onesTensor(dim),
		"midlayer.self_attn.q_proj.weight":         f32Tensor(rng, s(2*dim), heads*hd, 2*dim),
		"midlayer.self_attn.k_proj.weight":         f32Tensor(rng, s(2*dim), kv*hd, 2*dim),
		"midlayer.self_attn.v_proj.weight":         f32Tensor(rng, s(2*dim), kv*hd, 2*dim),
		"midlayer.self_attn.o_proj.weight":         f32Tensor(rng, s(heads*hd), dim, heads*hd),
		"midlayer.mlp.gate_proj.weight":            f32Tensor(rng, s(dim), ffn, dim),
		"midlayer.mlp.up_proj.weight":              f32Tensor(rng, s(dim), ffn, dim),
		"midlayer.mlp.down_proj.weight":            f32Tensor(rng, s(ffn), dim, ffn),
		"norm.weight":                              onesTensor(dim),
		"lm_head.weight":                           f32Tensor(rng, 4*s(dim), draftVocab, dim),
		"d2t":                                      i64Tensor(d2t),
		"t2d":                                      boolTensor(t2d),
	}
	return headSpec{config: cfg, tensors: ts}
}

// write writes the head to a new directory and returns it (config nil:
// no config.json).
func (h headSpec) write(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if h.config != nil {
		b, err := json.Marshal(h.config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(h.tensors))
	for n := range h.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, n := range names {
		rt := h.tensors[n]
		hdr[n] = map[string]any{"dtype": rt.dtype, "shape": rt.shape, "data_offsets": []int{len(data), len(data) + len(rt.data)}}
		data = append(data, rt.data...)
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	out = append(append(out, js...), data...)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// clone copies the spec so a test case can change it.
func (h headSpec) clone() headSpec {
	c := headSpec{config: map[string]any{}, tensors: map[string]rawTensor{}}
	b, _ := json.Marshal(h.config)
	json.Unmarshal(b, &c.config)
	for n, t := range h.tensors {
		c.tensors[n] = t
	}
	return c
}
