package loader

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"rigscope/engine/hfconfig"
	"rigscope/engine/loader/safetensors"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tokenizer"
)

// hfConfig is the part of a Hugging Face config.json a Llama model needs.
type hfConfig struct {
	hfconfig.Fields
	TieWordEmbeddings bool   `json:"tie_word_embeddings"`
	AttentionBias     bool   `json:"attention_bias"`
	MLPBias           bool   `json:"mlp_bias"`
	TorchDType        string `json:"torch_dtype"`
	DType             string `json:"dtype"`
}

// hfArchitectures are the config.json architectures read as Llama.
var hfArchitectures = []string{"LlamaForCausalLM"}

func openHF(dir string) (Source, error) {
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(raw, &hc); err != nil {
		return nil, fmt.Errorf("loader: %s: %w", cfgPath, err)
	}
	cfg, err := hc.config(cfgPath)
	if err != nil {
		return nil, err
	}
	m, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loader: %s: %w", dir, err)
	}
	lookup := func(name string) (*tensor.Tensor, error) {
		hfName, ok := hfTensorName(name)
		if !ok {
			return nil, fmt.Errorf("no Hugging Face name for canonical tensor %q", name)
		}
		if !m.Has(hfName) {
			return nil, fmt.Errorf("no tensor %q (Hugging Face name %q)", name, hfName)
		}
		t, err := m.Tensor(hfName)
		if err != nil {
			return nil, err
		}
		t.Name = name
		return t, nil
	}
	dominant, err := validateWeights(dir, cfg, lookup)
	if err != nil {
		m.Close()
		return nil, err
	}
	meta := map[string]string{"format": "hf-safetensors", "path": dir, "dtype": dominant.String(), "architecture": hc.Architectures[0]}
	if tmpl := hfChatTemplate(dir); tmpl != "" {
		meta["chat_template"] = tmpl
	}
	if _, scaling, _ := hc.Rope(0); !hfconfig.Unscaled(scaling) {
		meta["rope_scaling"] = scaling + " (not applied)"
	}
	return &fileSource{
		path: dir, cfg: cfg, meta: meta, lookup: lookup, closer: m.Close,
		newTok: func() (tokenizer.Tokenizer, error) {
			t, err := tokenizer.LoadHF(dir)
			if err != nil {
				return nil, fmt.Errorf("loader: %s: %w", dir, err)
			}
			return t, nil
		},
	}, nil
}

func (hc *hfConfig) config(path string) (model.Config, error) {
	if !slices.ContainsFunc(hc.Architectures, func(a string) bool { return slices.Contains(hfArchitectures, a) }) {
		return model.Config{}, fmt.Errorf("loader: %s: architectures %q: not supported (supported: %s)", path, hc.Architectures, strings.Join(hfArchitectures, ", "))
	}
	switch {
	case hc.HiddenAct != "" && hc.HiddenAct != "silu":
		return model.Config{}, fmt.Errorf("loader: %s: hidden_act %q is not supported (silu)", path, hc.HiddenAct)
	case hc.AttentionBias || hc.MLPBias:
		return model.Config{}, fmt.Errorf("loader: %s: attention_bias/mlp_bias are not supported", path)
	}
	layers := 0
	if hc.Layers != nil {
		layers = *hc.Layers
	}
	theta, _, err := hc.Rope(0) // 0: Validate's default
	if err != nil {
		return model.Config{}, fmt.Errorf("loader: %s: %w", path, err)
	}
	cfg := model.Config{
		Arch: "llama", Dim: hc.HiddenSize, Layers: layers, Heads: hc.Heads,
		FFN: hc.Intermediate, Vocab: hc.VocabSize, MaxSeq: hc.MaxPos,
		RopeLayout: model.RopeHalf, TiedEmbed: hc.TieWordEmbeddings,
		NormEps: hc.NormEps(0), RopeTheta: theta,
	}
	cfg.KVHeads, cfg.HeadDim = hc.Shape()
	if err := cfg.Validate(); err != nil {
		return model.Config{}, fmt.Errorf("loader: %s: %w", path, err)
	}
	return cfg, nil
}

var hfLayerRe = regexp.MustCompile(`^blk\.(\d+)\.(\w+)\.weight$`)

var hfLayerParts = map[string]string{
	"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
	"ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
	"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
}

// hfTensorName maps a canonical (GGUF) tensor name to its Hugging Face name.
func hfTensorName(canonical string) (string, bool) {
	switch canonical {
	case model.NameTokEmbd:
		return "model.embed_tokens.weight", true
	case model.NameOutputNorm:
		return "model.norm.weight", true
	case model.NameOutput:
		return "lm_head.weight", true
	}
	m := hfLayerRe.FindStringSubmatch(canonical)
	if m == nil {
		return "", false
	}
	part, ok := hfLayerParts[m[2]]
	if !ok {
		return "", false
	}
	return "model.layers." + m[1] + "." + part + ".weight", true
}

// hfChatTemplate returns the chat template from chat_template.jinja or
// tokenizer_config.json's chat_template (a string, or a list of named
// templates of which "default" is taken), or "".
func hfChatTemplate(dir string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		return string(b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return ""
	}
	var tc struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if json.Unmarshal(b, &tc) != nil || len(tc.ChatTemplate) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(tc.ChatTemplate, &s) == nil {
		return s
	}
	var named []struct{ Name, Template string }
	if json.Unmarshal(tc.ChatTemplate, &named) == nil {
		for _, n := range named {
			if n.Name == "default" {
				return n.Template
			}
		}
	}
	return ""
}
