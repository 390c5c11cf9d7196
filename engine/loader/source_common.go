package loader

import (
	"fmt"
	"sync"

	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tokenizer"
)

// fileSource is the Source every file format returns: a config, a lookup
// of canonical names in the format's own container, a lazily built
// tokenizer, and a closer.
type fileSource struct {
	path   string
	cfg    model.Config
	meta   map[string]string
	lookup func(canonical string) (*tensor.Tensor, error)
	closer func() error

	tokOnce sync.Once
	newTok  func() (tokenizer.Tokenizer, error)
	tok     tokenizer.Tokenizer
	tokErr  error
}

func (s *fileSource) Config() model.Config { return s.cfg }

func (s *fileSource) Tensor(name string) (*tensor.Tensor, error) {
	t, err := s.lookup(name)
	if err != nil {
		return nil, fmt.Errorf("loader: %s: tensor %q: %w", s.path, name, err)
	}
	return t, nil
}

func (s *fileSource) Tokenizer() (tokenizer.Tokenizer, error) {
	s.tokOnce.Do(func() { s.tok, s.tokErr = s.newTok() })
	return s.tok, s.tokErr
}

func (s *fileSource) Meta() map[string]string {
	m := make(map[string]string, len(s.meta))
	for k, v := range s.meta {
		m[k] = v
	}
	return m
}

func (s *fileSource) Close() error { return s.closer() }

// ExpectedShapes returns the canonical tensor names a model of cfg must
// have, with their shapes (outermost first): the Llama block's, and those
// of cfg's extensions (biases, head norms, rope_freqs).
func ExpectedShapes(cfg model.Config) map[string][]int {
	q, kv := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	m := map[string][]int{
		model.NameTokEmbd:    {cfg.Vocab, cfg.Dim},
		model.NameOutputNorm: {cfg.Dim},
	}
	if cfg.RopeScaling.Type == model.RopeScaleFreqs {
		m[model.NameRopeFreqs] = []int{cfg.HeadDim / 2}
	}
	if !cfg.TiedEmbed {
		m[model.NameOutput] = []int{cfg.Vocab, cfg.Dim}
	}
	for l := range cfg.Layers {
		for part, shape := range map[string][]int{
			"attn_norm": {cfg.Dim}, "attn_q": {q, cfg.Dim}, "attn_k": {kv, cfg.Dim}, "attn_v": {kv, cfg.Dim},
			"attn_output": {cfg.Dim, q}, "ffn_norm": {cfg.Dim},
			"ffn_gate": {cfg.FFN, cfg.Dim}, "ffn_up": {cfg.FFN, cfg.Dim}, "ffn_down": {cfg.Dim, cfg.FFN},
		} {
			m[model.LayerName(l, part)] = shape
		}
		expectedExtensionShapes(&cfg, l, m) // MoE, latent attention: source_moe.go
		if cfg.QKVBias {
			m[model.LayerBias(l, "attn_q")] = []int{q}
			m[model.LayerBias(l, "attn_k")] = []int{kv}
			m[model.LayerBias(l, "attn_v")] = []int{kv}
		}
		if cfg.QKNorm {
			m[model.LayerName(l, "attn_q_norm")] = []int{cfg.HeadDim}
			m[model.LayerName(l, "attn_k_norm")] = []int{cfg.HeadDim}
		}
		if cfg.Gemma.On {
			m[model.LayerName(l, model.PartPostAttnNorm)] = []int{cfg.Dim}
			m[model.LayerName(l, model.PartPostFFNNorm)] = []int{cfg.Dim}
		}
	}
	return m
}

// validateWeights checks that every tensor the config needs is present,
// well-formed, of the expected shape, and of a usable dtype (norm vectors
// must be F32, F16 or BF16), and holds no NaN or Inf where checkFinite
// looks.
func validateWeights(path string, cfg model.Config, lookup func(string) (*tensor.Tensor, error)) (dominant tensor.DType, err error) {
	count := map[tensor.DType]int{}
	for name, shape := range ExpectedShapes(cfg) {
		t, err := lookup(name)
		if err != nil {
			return 0, fmt.Errorf("loader: %s: %w", path, err)
		}
		if err := t.ExpectShape(shape...); err != nil {
			return 0, fmt.Errorf("loader: %s: %w (config %s)", path, err, cfg.Sizes())
		}
		if err := t.Check(); err != nil {
			return 0, fmt.Errorf("loader: %s: %w", path, err)
		}
		if len(shape) == 1 && t.DType != tensor.F32 && t.DType != tensor.F16 && t.DType != tensor.BF16 {
			return 0, fmt.Errorf("loader: %s: tensor %q has dtype %v, want F32, F16 or BF16 for a norm vector", path, name, t.DType)
		}
		if err := checkFinite(t); err != nil {
			return 0, fmt.Errorf("loader: %s: %w", path, err)
		}
		if len(shape) == 2 {
			count[t.DType]++
		}
	}
	best := -1
	for d, n := range count {
		if n > best || (n == best && d < dominant) {
			dominant, best = d, n
		}
	}
	return dominant, nil
}

// refuseOr is the refusal of items when there are any (what is not
// implemented is the first thing to say about a file), else err.
func refuseOr(file string, items []unsupported.Item, err error) error {
	if len(items) > 0 {
		return fmt.Errorf("loader: %w", unsupported.Refuse(file, items))
	}
	return err
}
