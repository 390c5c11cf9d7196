package eagle3_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
	"rigscope/engine/spec/eagle3"
)

// target4 is a synthetic 4-layer target (dim 64, vocab 512).
func target4(t testing.TB) model.WeightSource {
	t.Helper()
	src, err := synthetic.Open("tiny?layers=4")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestLoad(t *testing.T) {
	src := target4(t)
	tc := src.Config()
	good := newHeadSpec(tc, 100, 1)
	h, err := eagle3.Load(good.write(t), src)
	if err != nil {
		t.Fatalf("Load(good head): %v", err)
	}
	defer h.Close()
	if got := h.FeatureLayers(); len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Errorf("FeatureLayers() = %v, want [0 1 2]", got)
	}
	if h.DraftToTarget[0] != 2 || h.DraftToTarget[99] != 200 {
		t.Errorf("DraftToTarget[0], [99] = %d, %d, want 2, 200", h.DraftToTarget[0], h.DraftToTarget[99])
	}
	if h.OwnEmbed {
		t.Errorf("OwnEmbed = true for a head without embed_tokens")
	}
	if !eagle3.IsHead(filepath.Dir(filepath.Join(good.write(t), "config.json"))) {
		t.Errorf("IsHead(head dir) = false")
	}
	if eagle3.IsHead(t.TempDir()) {
		t.Errorf("IsHead(empty dir) = true")
	}
}

// TestLoadBadInput: every way a head can fail to fit gets a message that
// names the problem.
func TestLoadBadInput(t *testing.T) {
	src := target4(t)
	tc := src.Config()
	base := newHeadSpec(tc, 100, 1)
	cases := []struct {
		name   string
		change func(h *headSpec)
		want   string // substring of the error
	}{
		{"no config.json", func(h *headSpec) { h.config = nil }, "no config.json"},
		{"not an eagle head", func(h *headSpec) { h.config["architectures"] = []string{"LlamaForCausalLM"} }, "not an EAGLE-3 head"},
		{"hidden size of another target", func(h *headSpec) {
			h.config["target_hidden_size"] = 128
		}, "the target's hidden size is 64"},
		{"head wider than the target without its own embedding", func(h *headSpec) {
			h.config["hidden_size"] = 128
			h.config["target_hidden_size"] = 64
		}, "no embed_tokens"},
		{"vocabulary of another target", func(h *headSpec) { h.config["vocab_size"] = 1024 }, "vocabulary has 512 tokens"},
		{"two aux layers", func(h *headSpec) {
			h.config["eagle_config"] = map[string]any{"eagle_aux_hidden_state_layer_ids": []int{0, 2}}
		}, "2 aux layers; an EAGLE-3 head fuses exactly 3"},
		{"duplicate aux layer", func(h *headSpec) {
			h.config["eagle_config"] = map[string]any{"eagle_aux_hidden_state_layer_ids": []int{0, 1, 1}}
		}, "layer 1 is listed twice"},
		{"aux layer beyond the target", func(h *headSpec) {
			h.config["eagle_config"] = map[string]any{"eagle_aux_hidden_state_layer_ids": []int{0, 1, 4}}
		}, "layer 4 does not exist in the target, which has 4 layers"},
		{"vLLM id 0 (embedding)", func(h *headSpec) {
			delete(h.config, "eagle_config")
			h.config["eagle_aux_hidden_state_layer_ids"] = []int{0, 1, 2}
		}, "id 0 is the embedding output"},
		{"conventions disagree", func(h *headSpec) {
			h.config["eagle_aux_hidden_state_layer_ids"] = []int{2, 3, 4}
		}, "disagree"},
		{"default layers repeat for a 4-layer target", func(h *headSpec) { delete(h.config, "eagle_config") }, "listed twice"},
		{"d2t maps outside the target vocabulary", func(h *headSpec) {
			d2t := make([]int64, 100)
			for i := range d2t {
				d2t[i] = int64(i + 2)
			}
			d2t[99] = 500 // 99+500 = 599 >= 512
			h.tensors["d2t"] = i64Tensor(d2t)
		}, "d2t[99] = 500 maps draft id 99 to target id 599, outside the target vocabulary [0, 512)"},
		{"d2t maps two ids to one", func(h *headSpec) {
			d2t := make([]int64, 100)
			for i := range d2t {
				d2t[i] = int64(i + 2)
			}
			d2t[1] = 1 // 1+1 = 2 = 0+d2t[0]
			h.tensors["d2t"] = i64Tensor(d2t)
		}, "to the same target id 2"},
		{"d2t of the wrong length", func(h *headSpec) { h.tensors["d2t"] = i64Tensor(make([]int64, 99)) }, "shape [99], want [100]"},
		{"d2t missing with a smaller draft vocabulary", func(h *headSpec) { delete(h.tensors, "d2t") }, "needs d2t"},
		{"t2d disagrees with d2t", func(h *headSpec) { h.tensors["t2d"] = boolTensor(make([]bool, 512)) }, "disagrees with d2t"},
		{"fc fuses two layers", func(h *headSpec) {
			h.tensors["fc.weight"] = f32Tensor(nil2(), 0.1, 64, 128)
		}, "fuses 2 target features of width 64; EAGLE-3 fuses 3"},
		{"missing tensor", func(h *headSpec) { delete(h.tensors, "midlayer.hidden_norm.weight") }, `no tensor "midlayer.hidden_norm.weight"`},
		{"lm_head of the wrong size", func(h *headSpec) { h.tensors["lm_head.weight"] = f32Tensor(nil2(), 0.1, 99, 64) }, "lm_head.weight"},
		{"two decoder layers", func(h *headSpec) { h.config["num_hidden_layers"] = 2 }, "only one-layer"},
		{"llama3 RoPE without its parameters", func(h *headSpec) { h.config["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": 8.0} }, `llama3 RoPE scaling without`},
		{"YaRN RoPE", func(h *headSpec) {
			h.config["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096.0}
		}, `rope_scaling.rope_type = yarn`},
		{"bias tensor", func(h *headSpec) { h.tensors["midlayer.self_attn.q_proj.bias"] = f32Tensor(nil2(), 0.1, 64) }, "biases: 1 tensor (midlayer.self_attn.q_proj.bias)"},
		{"second decoder layer's tensors", func(h *headSpec) { h.tensors["layers.1.mlp.up_proj.weight"] = f32Tensor(nil2(), 0.1, 64, 64) }, "tensors nothing reads: 1 tensor (layers.1.mlp.up_proj.weight)"},
		{"NaN in a norm", func(h *headSpec) {
			w := f32Tensor(nil2(), 0.1, 64)
			binary.LittleEndian.PutUint32(w.data[4*7:], math.Float32bits(float32(math.NaN())))
			h.tensors["midlayer.hidden_norm.weight"] = w
		}, `tensor "midlayer.hidden_norm.weight" (F32 [64]): element 7 is NaN`},
		{"attention_bias in config", func(h *headSpec) { h.config["attention_bias"] = true }, "attention_bias = true"},
		{"rms_norm_eps NaN-like 1e39", func(h *headSpec) { h.config["rms_norm_eps"] = 1e39 }, "rms_norm_eps: norm epsilon 1e+39"},
		{"EAGLE-1 style head", func(h *headSpec) {
			h.config["eagle_config"] = map[string]any{"use_aux_hidden_state": false}
		}, "use_aux_hidden_state is false"},
	}
	for _, c := range cases {
		h := base.clone()
		c.change(&h)
		dir := h.write(t)
		head, err := eagle3.Load(dir, src)
		if err == nil {
			head.Close()
			t.Errorf("%s: Load(%s) succeeded, want an error containing %q", c.name, dir, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load(%s) = %v, want an error containing %q", c.name, dir, err, c.want)
		}
	}
}

func TestLoadNoModelFile(t *testing.T) {
	src := target4(t)
	dir := newHeadSpec(src.Config(), 100, 1).write(t)
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, err := eagle3.Load(dir, src); err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("Load(head without model.safetensors) = %v, want an error naming model.safetensors", err)
	}
}
