package loader

import (
	"bytes"
	"strings"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/safetensors"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

var (
	tinyMixtral = func() model.Config {
		c := tinyCfg
		c.Arch, c.RopeLayout = "mixtral", model.RopeHalf
		c.MoE = model.MoE{Experts: 4, PerToken: 2, FFN: 12, NormTopK: true}
		return c
	}()
	tinyDeepSeek = func() model.Config {
		c := tinyCfg
		c.Arch, c.KVHeads, c.NormEps = "deepseek3", 2, 1e-5
		c.MLA = model.MLA{QRank: 4, KVRank: 4, NopeDim: 4, RopeDim: 4, VDim: 4}
		c.MoE = model.MoE{Experts: 4, PerToken: 2, FFN: 4, Scoring: model.ScoreSigmoid, NormTopK: true, ScoreBias: true,
			Groups: 2, TopKGroups: 1, RoutedScale: 2.5, SharedFFN: 4, FirstDense: 1}
		return c
	}()
)

const (
	tinyMixtralJSON = `{"architectures":["MixtralForCausalLM"],"hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,
"num_key_value_heads":1,"intermediate_size":12,"vocab_size":6,"max_position_embeddings":16,"rms_norm_eps":1e-5,
"rope_theta":10000.0,"tie_word_embeddings":false,"hidden_act":"silu","num_local_experts":4,"num_experts_per_tok":2,"sliding_window":null}`
	tinyDeepSeekJSON = `{"architectures":["DeepseekV3ForCausalLM"],"hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,
"num_key_value_heads":2,"intermediate_size":12,"vocab_size":6,"max_position_embeddings":16,"rms_norm_eps":1e-5,
"rope_theta":10000.0,"tie_word_embeddings":false,"hidden_act":"silu","n_routed_experts":4,"n_shared_experts":1,
"num_experts_per_tok":2,"moe_intermediate_size":4,"n_group":2,"topk_group":1,"routed_scaling_factor":2.5,
"first_k_dense_replace":1,"q_lora_rank":4,"kv_lora_rank":4,"qk_nope_head_dim":4,"qk_rope_head_dim":4,"v_head_dim":4,
"num_nextn_predict_layers":1,"scoring_func":"sigmoid","topk_method":"noaux_tc"}`
)

// writeArchHFDir writes a tiny Hugging Face folder of arch's names for
// cfg; edit adjusts the HF-named tensors.
func writeArchHFDir(t *testing.T, archName string, cfg model.Config, configJSON string, edit func(map[string]*tensor.Tensor)) string {
	t.Helper()
	arch, ok := findHFArch([]string{archName})
	if !ok {
		t.Fatalf("no architecture %s", archName)
	}
	byHF := map[string]*tensor.Tensor{}
	for _, w := range tinyTensors(cfg) {
		hf, ok := arch.tensorName(w.Name)
		if !ok {
			t.Fatalf("%s: no Hugging Face name for %q", archName, w.Name)
		}
		c := *w
		c.Name = hf
		byHF[hf] = &c
	}
	if edit != nil {
		edit(byHF)
	}
	var ts []*tensor.Tensor
	for _, w := range byHF {
		ts = append(ts, w)
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "model.safetensors", buf.Bytes())
	writeFile(t, dir, "config.json", []byte(configJSON))
	return dir
}

// The MoE and latent-attention fields are read from config.json.
func TestOpenMoEHF(t *testing.T) {
	for _, tc := range []struct {
		arch, json string
		want       model.Config
	}{
		{"MixtralForCausalLM", tinyMixtralJSON, tinyMixtral},
		{"DeepseekV3ForCausalLM", tinyDeepSeekJSON, tinyDeepSeek},
	} {
		src, err := Open(writeArchHFDir(t, tc.arch, tc.want, tc.json, nil), Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.arch, err)
		}
		got := src.Config()
		src.Close()
		if got.MoE != tc.want.MoE || got.MLA != tc.want.MLA || got.HeadDim != tc.want.HeadDim {
			t.Errorf("%s: MoE %+v, MLA %+v, head dim %d; want %+v, %+v, %d", tc.arch, got.MoE, got.MLA, got.HeadDim, tc.want.MoE, tc.want.MLA, tc.want.HeadDim)
		}
	}
}

// rope_interleave (DeepseekV3Config's default true) sets the rope dims'
// layout.
func TestDeepSeekRopeInterleave(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  model.RopeLayout
	}{{``, model.RopeInterleaved}, {`,"rope_interleave":true`, model.RopeInterleaved}, {`,"rope_interleave":false`, model.RopeHalf}} {
		json := strings.TrimSuffix(tinyDeepSeekJSON, "}") + tc.field + "}"
		src, err := Open(writeArchHFDir(t, "DeepseekV3ForCausalLM", tinyDeepSeek, json, nil), Options{})
		if err != nil {
			t.Fatalf("%q: %v", tc.field, err)
		}
		if got := src.Config().RopeLayout; got != tc.want {
			t.Errorf("%q: layout %v, want %v", tc.field, got, tc.want)
		}
		src.Close()
	}
}

// DeepSeek's multi-token-prediction layer (num_nextn_predict_layers after
// the last layer) is left unread without refusing the model; a tensor of
// a layer beyond it is refused.
func TestDeepSeekMTPLayers(t *testing.T) {
	extra := func(name string) func(map[string]*tensor.Tensor) {
		return func(m map[string]*tensor.Tensor) {
			m[name] = &tensor.Tensor{Name: name, DType: tensor.F32, Shape: []int{2}, Data: make([]byte, 8)}
		}
	}
	src, err := Open(writeArchHFDir(t, "DeepseekV3ForCausalLM", tinyDeepSeek, tinyDeepSeekJSON, extra("model.layers.2.eh_proj.weight")), Options{})
	if err != nil {
		t.Fatalf("MTP layer 2: %v", err)
	}
	src.Close()
	_, err = Open(writeArchHFDir(t, "DeepseekV3ForCausalLM", tinyDeepSeek, tinyDeepSeekJSON, extra("model.layers.3.eh_proj.weight")), Options{})
	if ref, ok := unsupported.As(err); !ok || !ref.Has(unsupported.UnreadTensor) || !strings.Contains(err.Error(), "model.layers.3.eh_proj.weight") {
		t.Errorf("layer 3 beyond the MTP layer: error %v, want an unread-tensor refusal naming it", err)
	}
}

// Bad MoE and latent-attention input: contradicting fields, a variant not
// implemented, expert tensors missing or misshapen: a message naming each.
func TestMoEBadInput(t *testing.T) {
	rm := func(name string) func(map[string]*tensor.Tensor) {
		return func(m map[string]*tensor.Tensor) { delete(m, name) }
	}
	for _, tc := range []struct {
		name, arch, json string
		cfg              model.Config
		edit             func(map[string]*tensor.Tensor)
		want             []string
	}{
		{"experts per token above experts", "MixtralForCausalLM", strings.Replace(tinyMixtralJSON, `"num_experts_per_tok":2`, `"num_experts_per_tok":5`, 1), tinyMixtral, nil,
			[]string{"num_experts_per_tok 5 is not between 1 and the 4 experts"}},
		{"no expert count", "MixtralForCausalLM", strings.Replace(tinyMixtralJSON, `"num_local_experts":4,`, ``, 1), tinyMixtral, nil,
			[]string{"num_local_experts = absent"}},
		{"heads not dividing hidden", "MixtralForCausalLM", strings.Replace(tinyMixtralJSON, `"num_attention_heads":2`, `"num_attention_heads":3`, 1), tinyMixtral, nil,
			[]string{"hidden_size 8 is not divisible by num_attention_heads 3"}},
		{"kv_lora_rank 0", "DeepseekV3ForCausalLM", strings.Replace(tinyDeepSeekJSON, `"kv_lora_rank":4`, `"kv_lora_rank":0`, 1), tinyDeepSeek, nil,
			[]string{"kv_lora_rank 0 is not between 1"}},
		{"topk_group above n_group", "DeepseekV3ForCausalLM", strings.Replace(tinyDeepSeekJSON, `"topk_group":1`, `"topk_group":3`, 1), tinyDeepSeek, nil,
			[]string{"topk_group 3 is not between 1 and n_group 2"}},
		{"softmax scoring", "DeepseekV3ForCausalLM", strings.Replace(tinyDeepSeekJSON, `"scoring_func":"sigmoid"`, `"scoring_func":"softmax"`, 1), tinyDeepSeek, nil,
			[]string{"scoring_func = softmax (supported: sigmoid)"}},
		{"expert missing", "MixtralForCausalLM", tinyMixtralJSON, tinyMixtral, rm("model.layers.1.block_sparse_moe.experts.3.w2.weight"),
			[]string{`blk.1.ffn_down_exps.3.weight`, "model.layers.1.block_sparse_moe.experts.3.w2.weight"}},
		{"router missing", "DeepseekV3ForCausalLM", tinyDeepSeekJSON, tinyDeepSeek, rm("model.layers.1.mlp.gate.weight"),
			[]string{"model.layers.1.mlp.gate.weight"}},
		{"expert misshapen", "MixtralForCausalLM", tinyMixtralJSON, tinyMixtral, func(m map[string]*tensor.Tensor) {
			n := "model.layers.0.block_sparse_moe.experts.1.w1.weight"
			m[n] = &tensor.Tensor{Name: n, DType: tensor.F32, Shape: []int{11, 8}, Data: make([]byte, 4*88)}
		}, []string{"blk.0.ffn_gate_exps.1.weight", "shape [11 8], want [12 8]"}},
	} {
		_, err := Open(writeArchHFDir(t, tc.arch, tc.cfg, tc.json, tc.edit), Options{})
		if err == nil {
			t.Errorf("%s: Open succeeded", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
}

// stackExperts replaces the per-expert tensors of ts by llama.cpp's
// stacked (experts, rows, cols) ones, keeping n experts of each.
func stackExperts(ts []*tensor.Tensor, n int) []*tensor.Tensor {
	var out []*tensor.Tensor
	stacked := map[string]*tensor.Tensor{}
	for _, t := range ts {
		name, e, ok := ggufStacked(t.Name)
		if !ok {
			out = append(out, t)
			continue
		}
		if e >= n {
			continue
		}
		s, ok := stacked[name]
		if !ok {
			s = &tensor.Tensor{Name: name, DType: t.DType, Shape: []int{0, t.Shape[0], t.Shape[1]}}
			stacked[name] = s
			out = append(out, s)
		}
		s.Shape[0]++
		s.Data = append(s.Data, t.Data...) // experts are sorted by index within a name (< 10 here)
	}
	return out
}

// GGUF llama with expert_count: Mixtral's stacked experts.
func TestOpenMixtralGGUF(t *testing.T) {
	kv := append(tinyKV("llama"), gguf.KV{Key: "llama.expert_count", Value: uint32(4)}, gguf.KV{Key: "llama.expert_used_count", Value: uint32(2)})
	dir := t.TempDir()
	src, err := Open(writeFile(t, dir, "ok.gguf", ggufBytes(t, kv, stackExperts(tinyTensors(tinyMixtral), 4))), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := src.Config().MoE; got != (model.MoE{Experts: 4, PerToken: 2, FFN: 12, NormTopK: true}) {
		t.Errorf("MoE %+v", got)
	}
	if _, err := model.LoadWeights(src, model.Shard{Rank: 1, Size: 2}); err != nil {
		t.Errorf("TP 2 rank 1: %v", err)
	}
	src.Close()

	for _, tc := range []struct {
		name string
		kv   []gguf.KV
		ts   []*tensor.Tensor
		want string
	}{
		{"3 experts stacked for 4", kv, stackExperts(tinyTensors(tinyMixtral), 3), "want (4 experts, rows, cols)"},
		{"no expert_used_count", kv[:len(kv)-1], stackExperts(tinyTensors(tinyMixtral), 4), "missing llama.expert_used_count"},
		{"router missing", kv, func() []*tensor.Tensor {
			var out []*tensor.Tensor
			for _, t := range stackExperts(tinyTensors(tinyMixtral), 4) {
				if t.Name != "blk.1.ffn_gate_inp.weight" {
					out = append(out, t)
				}
			}
			return out
		}(), `no tensor "blk.1.ffn_gate_inp.weight"`},
	} {
		_, err := Open(writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf", ggufBytes(t, tc.kv, tc.ts)), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
