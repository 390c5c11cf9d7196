package loader

import (
	"fmt"
	"math"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tokenizer"
	"rigscope/engine/tokenizer/ggufvocab"
)

func openGGUF(path string) (Source, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	src, err := ggufSource(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return src, nil
}

func ggufSource(f *gguf.File) (*fileSource, error) {
	arch, _ := f.String("general.architecture")
	items := ggufUnsupported(f, arch)
	cfg, err := ggufConfig(f, arch)
	if err != nil {
		return nil, refuseOr(f.Path, items, err)
	}
	items = append(items, unsupported.Tensors(ggufUnread(f, cfg))...)
	if err := unsupported.Refuse(f.Path, items); err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	lookup := ggufExpertLookup(f, cfg) // gguf_experts.go
	dominant, err := validateWeights(f.Path, cfg, lookup)
	if err != nil {
		return nil, err
	}
	meta := map[string]string{"format": "gguf", "path": f.Path, "dtype": dominant.String(), "architecture": cfg.Arch,
		"gguf_version": fmt.Sprint(f.Version)}
	if tmpl, ok := f.String("tokenizer.chat_template"); ok {
		meta["chat_template"] = tmpl
	}
	if name, ok := f.String("general.name"); ok {
		meta["name"] = name
	}
	return &fileSource{
		path: f.Path, cfg: cfg, meta: meta, lookup: lookup, closer: f.Close,
		newTok: func() (tokenizer.Tokenizer, error) {
			v, err := ggufvocab.VocabFromGGUF(f)
			if err != nil {
				return nil, fmt.Errorf("loader: %w", err)
			}
			if len(v.Tokens) != cfg.Vocab {
				return nil, fmt.Errorf("loader: %s: tokenizer has %d tokens, token_embd.weight has %d rows", f.Path, len(v.Tokens), cfg.Vocab)
			}
			t, err := tokenizer.New(v)
			if err != nil {
				return nil, fmt.Errorf("loader: %s: %w", f.Path, err)
			}
			return t, nil
		},
	}, nil
}

// Defaults for metadata a GGUF file leaves out (llama.cpp's).
const (
	ggufDefaultTheta   = 10000
	ggufDefaultEps     = 1e-5
	ggufDefaultContext = 2048
)

// ggufConfig reads a config from ARCH.* metadata and the architecture's
// table entry; the vocabulary size is token_embd.weight's row count. Each
// stated value is checked (naming its key); only an absent one gets a
// default.
func ggufConfig(f *gguf.File, arch string) (model.Config, error) {
	if arch == "" {
		return model.Config{}, fmt.Errorf("loader: %s: no general.architecture string", f.Path)
	}
	var errs []error
	num := func(key string, required bool, def int) int {
		full := arch + "." + key
		if _, present := f.Get(full); !present {
			if required {
				errs = append(errs, fmt.Errorf("missing %s", full))
			}
			return def
		}
		v, ok := f.Uint(full)
		if !ok || v > math.MaxInt32 {
			got, _ := f.Get(full)
			errs = append(errs, fmt.Errorf("%s = %v (%T) is not a non-negative integer", full, got, got))
			return def
		}
		return int(v)
	}
	flt := func(key string, def float32, check func(float64) error) float32 {
		full := arch + "." + key
		if _, present := f.Get(full); !present {
			return def
		}
		v, ok := f.Float(full)
		if !ok {
			got, _ := f.Get(full)
			errs = append(errs, fmt.Errorf("%s = %v (%T) is not a number", full, got, got))
			return def
		}
		if err := check(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", full, err))
			return def
		}
		return float32(v)
	}
	cfg := model.Config{
		Arch:      arch,
		Dim:       num("embedding_length", true, 0),
		Layers:    num("block_count", true, 0),
		Heads:     num("attention.head_count", true, 0),
		FFN:       num("feed_forward_length", true, 0),
		MaxSeq:    num("context_length", false, ggufDefaultContext),
		NormEps:   flt("attention.layer_norm_rms_epsilon", ggufDefaultEps, model.CheckNormEps),
		RopeTheta: flt("rope.freq_base", ggufDefaultTheta, model.CheckRopeTheta),
	}
	if a, known := findGGUFArch(arch); known {
		cfg.RopeLayout, cfg.QKVBias, cfg.QKNorm = a.layout, a.qkvBias, a.qkNorm
		if a.experts {
			if n := num("expert_count", false, 0); n > 0 { // llama.cpp's llama MoE (Mixtral): softmax, top-k renormalized
				cfg.MoE = model.MoE{Experts: n, PerToken: num("expert_used_count", true, 0), FFN: cfg.FFN, NormTopK: true}
			}
		}
		_, hasFreqs := f.Info(model.NameRopeFreqs)
		if hasFreqs && a.ropeFreqs {
			cfg.RopeScaling.Type = model.RopeScaleFreqs
		}
		errs = append(errs, ggufScaling(f, arch, &cfg, flt)...) // gguf_rope.go
	}
	cfg.KVHeads = num("attention.head_count_kv", false, cfg.Heads)
	if err := model.CheckContext(cfg.MaxSeq); err != nil {
		errs = append(errs, fmt.Errorf("%s.context_length: %w", arch, err))
	}
	if _, stated := f.Get(arch + ".attention.key_length"); stated {
		cfg.HeadDim = num("attention.key_length", false, 0)
	} else if cfg.Heads > 0 {
		if cfg.Dim%cfg.Heads != 0 {
			errs = append(errs, fmt.Errorf("%s.embedding_length %d is not divisible by %s.attention.head_count %d, and there is no %s.attention.key_length", arch, cfg.Dim, arch, cfg.Heads, arch))
		}
		cfg.HeadDim = cfg.Dim / cfg.Heads
	}
	if a, _ := findGGUFArch(arch); a.gemma {
		errs = append(errs, ggufGemma(f, arch, &cfg, flt)...) // gguf_gemma.go
	}
	if len(errs) > 0 {
		return model.Config{}, fmt.Errorf("loader: %s: metadata: %w", f.Path, joinErrs(errs))
	}
	emb, ok := f.Info(model.NameTokEmbd)
	if !ok || len(emb.Shape) != 2 {
		return model.Config{}, fmt.Errorf("loader: %s: no 2-D %s to size the vocabulary", f.Path, model.NameTokEmbd)
	}
	cfg.Vocab = emb.Shape[0]
	if v, stated := f.Get(arch + ".vocab_size"); stated {
		if n, ok := f.Uint(arch + ".vocab_size"); !ok || n != uint64(cfg.Vocab) {
			return model.Config{}, fmt.Errorf("loader: %s: %s.vocab_size = %v, but %s has %d rows", f.Path, arch, v, model.NameTokEmbd, cfg.Vocab)
		}
	}
	_, hasOutput := f.Info(model.NameOutput)
	cfg.TiedEmbed = !hasOutput
	names := model.SizeNames{Dim: arch + ".embedding_length", Layers: arch + ".block_count", Heads: arch + ".attention.head_count",
		KVHeads: arch + ".attention.head_count_kv", HeadDim: arch + ".attention.key_length", FFN: arch + ".feed_forward_length",
		Vocab: model.NameTokEmbd + " rows"}
	if _, stated := f.Get(arch + ".attention.key_length"); !stated {
		names.HeadDim = arch + ".embedding_length / " + arch + ".attention.head_count"
	}
	if err := cfg.ValidateNamed(names); err != nil {
		return model.Config{}, fmt.Errorf("loader: %s: %w", f.Path, err)
	}
	for _, ti := range f.Tensors {
		if !ti.Type.Supported() {
			return model.Config{}, fmt.Errorf("loader: %s: tensor %q has type %v, which is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)", f.Path, ti.Name, ti.Type)
		}
	}
	return cfg, nil
}

// ggufUnread lists the tensors of f (in file order) that a model of cfg
// does not read.
func ggufUnread(f *gguf.File, cfg model.Config) []string {
	read := ExpectedShapes(cfg)
	ggufReadStacked(read)
	var unread []string
	for _, ti := range f.Tensors {
		if _, ok := read[ti.Name]; !ok {
			unread = append(unread, ti.Name)
		}
	}
	return unread
}

func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msg := errs[0].Error()
	for _, e := range errs[1:] {
		msg += "; " + e.Error()
	}
	return fmt.Errorf("%s", msg)
}
