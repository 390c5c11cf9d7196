package loader

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"rigscope/engine/hfconfig"
	"rigscope/engine/loader/safetensors"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tokenizer"
)

// hfConfig is the part of a Hugging Face config.json a Llama-family model
// needs.
type hfConfig struct {
	hfconfig.Fields
	TieWordEmbeddings bool `json:"tie_word_embeddings"`
	SlidingWindow     *int `json:"sliding_window"`
	hfExtFields            // experts, latent attention: hf_moe.go
}

// hfArch is a config.json architecture the engine reads: the Llama block
// with what the architecture adds to it.
type hfArch struct {
	name, arch    string // config.json's, and model.Config.Arch
	qkvBias       bool   // Qwen2: biases on the q, k, v projections
	qkNorm        bool   // Qwen3: RMSNorm on each query and key head
	slidingWindow bool   // Mistral: sliding_window read
	moe           hfMoEKind
	mla           bool // DeepSeek: multi-head latent attention
	gemma         bool // Gemma 3 (hf_gemma.go)
}

// hfArchitectures are the config.json architectures the engine reads.
var hfArchitectures = []hfArch{
	{name: "LlamaForCausalLM", arch: "llama"},
	{name: "Qwen2ForCausalLM", arch: "qwen2", qkvBias: true},
	{name: "Qwen3ForCausalLM", arch: "qwen3", qkNorm: true},
	{name: "MistralForCausalLM", arch: "mistral", slidingWindow: true},
	{name: "MixtralForCausalLM", arch: "mixtral", slidingWindow: true, moe: moeMixtral},
	{name: "Qwen3MoeForCausalLM", arch: "qwen3moe", qkNorm: true, moe: moeQwen3},
	{name: "DeepseekV3ForCausalLM", arch: "deepseek3", moe: moeDeepSeek, mla: true},
	{name: "Gemma3ForCausalLM", arch: "gemma3", qkNorm: true, slidingWindow: true, gemma: true},
}

// implemented is what CheckFor should let through for a.
func (a hfArch) implemented() hfconfig.Implemented {
	impl := hfconfig.Implemented{RopeTypes: hfconfig.ScalingTypes, SlidingWindow: a.slidingWindow,
		Experts: a.moe != moeNone, LatentAttention: a.mla, FP8: true}
	if a.gemma {
		impl.Reads, impl.PerLayerRope = hfGemmaReads, true
	}
	return impl
}

// findHFArch is the first of names the engine reads.
func findHFArch(names []string) (hfArch, bool) {
	for _, n := range names {
		for _, a := range hfArchitectures {
			if a.name == n {
				return a, true
			}
		}
	}
	return hfArch{}, false
}

func hfArchNames() string {
	names := make([]string, len(hfArchitectures))
	for i, a := range hfArchitectures {
		names[i] = a.name
	}
	return strings.Join(names, ", ")
}

// Defaults for what config.json leaves out: transformers' LlamaConfig's.
const (
	hfDefaultTheta   = 10000
	hfDefaultEps     = 1e-6
	hfDefaultContext = 2048
)

// hfSizeNames are config.json's names for the sizes.
var hfSizeNames = model.SizeNames{Dim: "hidden_size", Layers: "num_hidden_layers", Heads: "num_attention_heads",
	KVHeads: "num_key_value_heads", HeadDim: "head_dim", FFN: "intermediate_size", Vocab: "vocab_size"}

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
	arch, known := findHFArch(hc.Architectures)
	items, err := hfconfig.CheckFor(raw, arch.implemented())
	if err != nil {
		return nil, fmt.Errorf("loader: %s: %w", cfgPath, err)
	}
	if !known {
		item := unsupported.Item{Kind: unsupported.Architecture, Field: "architectures", Value: fmt.Sprintf("%q", hc.Architectures), Supported: hfArchNames()}
		items = append([]unsupported.Item{item}, items...)
	}
	cfg, err := hc.config(cfgPath, arch)
	if err == nil && arch.gemma {
		var more []unsupported.Item
		cfg, more, err = hfGemmaConfig(raw, &hc, cfg)
		items = append(items, more...)
		if err != nil {
			err = fmt.Errorf("loader: %s: %w", cfgPath, err)
		}
	}
	var fp8 *hfconfig.FP8
	if err == nil && len(items) == 0 {
		if fp8, err = hfconfig.ReadFP8(raw); err != nil {
			err = fmt.Errorf("loader: %s: %w", cfgPath, err)
		}
	}
	if err != nil {
		return nil, refuseOr(cfgPath, items, err)
	}
	m, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, refuseOr(cfgPath, items, fmt.Errorf("loader: %s: %w", dir, err))
	}
	refused := cfgPath                         // the file the refusal names: the folder once tensors are in it
	mtpLo, mtpHi := hc.hfMTPLayers(cfg.Layers) // DeepSeek's multi-token-prediction layers: not read (hf_moe.go)
	unread := dropMTP(hfUnread(cfg, arch, m.Names()), mtpLo, mtpHi)
	unread = dropFP8Scales(fp8, m.Names(), unread)
	if tensorItems := unsupported.Tensors(hfRedundant(cfg, m, unread)); len(tensorItems) > 0 {
		items, refused = append(items, tensorItems...), dir
	}
	if err := unsupported.Refuse(refused, items); err != nil {
		m.Close()
		return nil, fmt.Errorf("loader: %w", err)
	}
	lookup := func(name string) (*tensor.Tensor, error) {
		hfName, ok := arch.tensorName(name)
		if !ok {
			return nil, fmt.Errorf("no Hugging Face name for canonical tensor %q", name)
		}
		if !m.Has(hfName) {
			return nil, fmt.Errorf("no tensor %q (Hugging Face name %q)", name, hfName)
		}
		var t *tensor.Tensor
		var err error
		if info, _ := m.Info(hfName); info.FileDType == "F8_E4M3" {
			t, err = hfFP8Weight(m, fp8, hfName)
		} else {
			t, err = m.Tensor(hfName)
		}
		if err != nil {
			return nil, err
		}
		t.Name = name
		if arch.gemma {
			t = gemmaNormPlusOne(t)
		}
		return t, nil
	}
	dominant, err := validateWeights(dir, cfg, lookup)
	if err != nil {
		m.Close()
		return nil, err
	}
	meta := map[string]string{"format": "hf-safetensors", "path": dir, "dtype": dominant.String(), "architecture": arch.name}
	if tmpl := hfChatTemplate(dir); tmpl != "" {
		meta["chat_template"] = tmpl
	}
	eos, err := hfGenerationEOS(dir)
	if err != nil {
		m.Close()
		return nil, err
	}
	if len(eos) > 0 {
		meta[MetaEOSIDs] = formatEOSIDs(eos)
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

// hfUnread lists the tensors in names (sorted) that a model of cfg does
// not read.
func hfUnread(cfg model.Config, arch hfArch, names []string) []string {
	read := map[string]bool{}
	for canonical := range ExpectedShapes(cfg) {
		if hf, ok := arch.tensorName(canonical); ok {
			read[hf] = true
		}
	}
	var unread []string
	for _, n := range names {
		if !read[n] {
			unread = append(unread, n)
		}
	}
	return unread
}

// config reads the sizes, floats and arch's extensions; each stated value
// is checked (with its field named), and only an absent one gets
// LlamaConfig's default.
func (hc *hfConfig) config(path string, arch hfArch) (model.Config, error) {
	fail := func(err error) (model.Config, error) {
		return model.Config{}, fmt.Errorf("loader: %s: %w", path, err)
	}
	layers := 0
	if hc.Layers != nil {
		layers = *hc.Layers
	}
	theta, err := hc.RopeBase(hfDefaultTheta)
	if err != nil {
		return fail(err)
	}
	eps, err := hc.NormEps(hfDefaultEps)
	if err != nil {
		return fail(err)
	}
	ctx, err := hc.Context(hfDefaultContext)
	if err != nil {
		return fail(err)
	}
	scaling, err := hc.Scaling()
	if err != nil {
		return fail(err)
	}
	cfg := model.Config{
		Arch: arch.arch, Dim: hc.HiddenSize, Layers: layers, Heads: hc.Heads,
		FFN: hc.Intermediate, Vocab: hc.VocabSize, MaxSeq: ctx,
		RopeLayout: model.RopeHalf, TiedEmbed: hc.TieWordEmbeddings,
		NormEps: eps, RopeTheta: theta, RopeScaling: scaling,
		QKVBias: arch.qkvBias, QKNorm: arch.qkNorm,
	}
	if arch.slidingWindow && hc.SlidingWindow != nil {
		if *hc.SlidingWindow <= 0 {
			return fail(fmt.Errorf("sliding_window %d is not a positive number of positions (null for none)", *hc.SlidingWindow))
		}
		cfg.SlidingWindow = *hc.SlidingWindow
	}
	if cfg.KVHeads, cfg.HeadDim, err = hc.Shape(); err != nil {
		return fail(err)
	}
	if err := hc.extensions(&cfg, arch); err != nil {
		return fail(err)
	}
	if err := cfg.ValidateNamed(hfSizeNames); err != nil {
		return fail(err)
	}
	return cfg, nil
}

var hfLayerRe = regexp.MustCompile(`^blk\.(\d+)\.(\w+)\.(weight|bias)$`)

var hfLayerParts = map[string]string{
	"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
	"ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
	"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
	"attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
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
	return "model.layers." + m[1] + "." + part + "." + m[3], true
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
