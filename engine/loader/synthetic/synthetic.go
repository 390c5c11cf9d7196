// Package synthetic is a model source that needs no file: Llama-family
// shapes (presets) with deterministic pseudo-random weights from a seed, like
// vLLM's dummy load format. It is the panel's embedded default and the
// benchmark workload. Its tokenizer is a SentencePiece vocabulary of
// printable ASCII pieces, so every id decodes to readable text.
package synthetic

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tokenizer"
)

// Presets are the named shapes.
var Presets = map[string]model.Config{
	"tiny": {Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 192,
		Vocab: 512, MaxSeq: 32768, NormEps: 1e-5, RopeTheta: 10000},
	"small": {Arch: "llama", Dim: 512, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 64, FFN: 1024,
		Vocab: 4096, MaxSeq: 4096, NormEps: 1e-5, RopeTheta: 10000},
	// Llama-3.2-1B's shape.
	"llama-1b": {Arch: "llama", Dim: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192,
		Vocab: 128256, MaxSeq: 8192, NormEps: 1e-5, RopeTheta: 500000},
	// Llama-3-8B's shape.
	"llama-8b": {Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336,
		Vocab: 128256, MaxSeq: 8192, NormEps: 1e-5, RopeTheta: 500000},
	// Qwen3-8B's shape (q/k head norms).
	"qwen3-8b": {Arch: "qwen3", Dim: 4096, Layers: 36, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 12288,
		Vocab: 151936, MaxSeq: 40960, NormEps: 1e-6, RopeTheta: 1e6, RopeLayout: model.RopeHalf, QKNorm: true},
	// Gemma-3-12B's shape: 5 local layers (window 1024, RoPE base 1e4) to
	// 1 global (1e6, linear scaling 8), query_pre_attn_scalar 256, tied.
	"gemma3-12b": gemma3Preset(3840, 48, 16, 8, 256, 15360, 262208, 1024),
}

// gemma3Preset is a Gemma 3 shape with every 6th layer global.
func gemma3Preset(dim, layers, heads, kvHeads, headDim, ffn, vocab, window int) model.Config {
	pattern, _ := model.LocalPattern(layers, 6)
	return model.Config{Arch: "gemma3", Dim: dim, Layers: layers, Heads: heads, KVHeads: kvHeads, HeadDim: headDim, FFN: ffn,
		Vocab: vocab, MaxSeq: 131072, NormEps: 1e-6, RopeTheta: 1e6, RopeLayout: model.RopeHalf, TiedEmbed: true, QKNorm: true,
		RopeScaling: model.RopeScaling{Type: model.RopeScaleLinear, Factor: 8}, SlidingWindow: window,
		Gemma: model.Gemma3{On: true, QueryScale: float32(headDim), Layers: pattern, LocalRopeTheta: 1e4}}
}

var defaultDType = map[string]tensor.DType{"tiny": tensor.F32, "small": tensor.F32, "llama-1b": tensor.BF16, "llama-8b": tensor.BF16,
	"qwen3-8b": tensor.BF16, "gemma3-12b": tensor.BF16,
	"tiny-moe": tensor.F32, "tiny-mla": tensor.F32, "mixtral-8x7b": tensor.BF16, "qwen3-30b-a3b": tensor.BF16, "deepseek-v3": tensor.BF16}

func init() {
	for name, cfg := range moePresets { // presets_moe.go
		Presets[name] = cfg
	}
}

// Source is an opened synthetic model.
type Source struct {
	preset string
	cfg    model.Config
	shapes map[string][]int // every tensor's shape by canonical name (loader.ExpectedShapes)
	dtype  tensor.DType
	seed   uint64

	mu      sync.Mutex
	tensors map[string]*tensor.Tensor
}

// Open parses "synthetic:PRESET[?dtype=bf16&seed=N&layers=N]" (the
// "synthetic:" prefix is optional).
func Open(spec string) (*Source, error) {
	spec = strings.TrimPrefix(spec, "synthetic:")
	name, query, _ := strings.Cut(spec, "?")
	cfg, ok := Presets[name]
	if !ok {
		return nil, fmt.Errorf("synthetic: unknown preset %q; presets: %s", name, strings.Join(PresetNames(), ", "))
	}
	s := &Source{preset: name, cfg: cfg, dtype: defaultDType[name], seed: 1, tensors: map[string]*tensor.Tensor{}}
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "dtype":
				d, err := parseDType(v)
				if err != nil {
					return nil, fmt.Errorf("synthetic: %w", err)
				}
				s.dtype = d
			case "seed":
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("synthetic: seed %q: %w", v, err)
				}
				s.seed = n
			case "layers":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 256 {
					return nil, fmt.Errorf("synthetic: layers %q must be 1..256", v)
				}
				s.cfg.Layers = n
				if s.cfg.Gemma.On {
					s.cfg.Gemma.Layers, _ = model.LocalPattern(n, 6)
				}
			default:
				return nil, fmt.Errorf("synthetic: unknown option %q (dtype, seed, layers)", k)
			}
		}
	}
	s.shapes = loader.ExpectedShapes(s.cfg)
	return s, nil
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	n := make([]string, 0, len(Presets))
	for k := range Presets {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func parseDType(s string) (tensor.DType, error) {
	for _, d := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		if strings.EqualFold(d.String(), s) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("dtype %q: want f32, f16, bf16, q8_0, q4_0, q4_k or q6_k (the k-quants need dimensions that are multiples of 256)", s)
}

func (s *Source) Config() model.Config { return s.cfg }

func (s *Source) Meta() map[string]string {
	return map[string]string{"format": "synthetic", "path": "synthetic:" + s.preset, "dtype": s.dtype.String(), "architecture": s.cfg.Arch}
}

func (s *Source) Close() error { return nil }

// shape returns the canonical shape of a tensor name, or false.
func (s *Source) shape(name string) ([]int, bool) {
	shape, ok := s.shapes[name]
	return shape, ok
}

// Tensor generates (once) and returns a weight. Matrices are uniform with
// standard deviation 1/sqrt(cols); norm weights are 1.
func (s *Source) Tensor(name string) (*tensor.Tensor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tensors[name]; ok {
		return t, nil
	}
	t, err := s.Generate(name, s.dtype)
	if err != nil {
		return nil, err
	}
	s.tensors[name] = t
	return t, nil
}

// Generate returns a new copy of weight name encoded in dt (norm vectors
// stay F32), the values Tensor's are encoded from; it keeps nothing, so a
// writer can convert one tensor at a time.
func (s *Source) Generate(name string, dt tensor.DType) (*tensor.Tensor, error) {
	shape, ok := s.shape(name)
	if !ok {
		return nil, fmt.Errorf("synthetic %s: no tensor %q", s.preset, name)
	}
	if len(shape) == 1 {
		dt = tensor.F32
	}
	t := &tensor.Tensor{Name: name, DType: dt, Shape: shape}
	rows, cols := t.Rows(), t.Cols()
	rb, err := dt.Bytes(cols)
	if err != nil {
		return nil, fmt.Errorf("synthetic %s: %w", s.preset, err)
	}
	t.Data = make([]byte, rows*rb)
	h := fnv.New64a()
	h.Write([]byte(name))
	key := h.Sum64() ^ s.seed*0x9e3779b97f4a7c15
	amp := float32(math.Sqrt(3 / float64(cols)))
	if len(shape) == 1 {
		amp = 0
	}
	fill(t, key, amp)
	return t, nil
}

// fill writes each row's values, in parallel over rows.
func fill(t *tensor.Tensor, key uint64, amp float32) {
	cols := t.Cols()
	tensor.FillRows(t, func(r int, buf []float32) {
		for c := range buf {
			if amp == 0 {
				buf[c] = 1
				continue
			}
			u := splitmix(key + uint64(r)*uint64(cols) + uint64(c))
			buf[c] = amp * (float32(u>>40)/float32(1<<24)*2 - 1)
		}
	})
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Tokenizer returns the preset's ASCII SentencePiece vocabulary.
func (s *Source) Tokenizer() (tokenizer.Tokenizer, error) {
	return tokenizer.New(Vocab(s.cfg.Vocab))
}

// Vocab builds a SentencePiece vocabulary of n pieces: <unk>, <s>, </s>,
// then tab, newline and printable ASCII ("▁" for space), then two- and
// three-character pieces of those, scored so longer pieces merge first.
func Vocab(n int) tokenizer.Vocab {
	v := tokenizer.Vocab{Model: "llama", BOS: 1, EOS: 2, UNK: 0, AddBOS: true}
	add := func(p string, typ int32, score float32) {
		v.Tokens = append(v.Tokens, p)
		v.Types = append(v.Types, typ)
		v.Scores = append(v.Scores, score)
	}
	add("<unk>", 2, 0)
	add("<s>", 3, 0)
	add("</s>", 3, 0)
	var chars []string
	for _, c := range "\t\n" {
		chars = append(chars, string(c))
	}
	for c := ' '; c <= '~'; c++ {
		if c == ' ' {
			chars = append(chars, "▁")
		} else {
			chars = append(chars, string(c))
		}
	}
	for _, c := range chars {
		if len(v.Tokens) < n {
			add(c, 1, -1000)
		}
	}
	// Longer pieces, most "natural" first: lowercase letters and space.
	order := append([]string{}, chars...)
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })
	score := float32(-1)
	for _, a := range order {
		for _, b := range order {
			if len(v.Tokens) >= n {
				return v
			}
			add(a+b, 1, score)
			score -= 0.001
		}
	}
	for _, a := range order {
		for _, b := range order {
			for _, c := range order {
				if len(v.Tokens) >= n {
					return v
				}
				add(a+b+c, 1, score)
				score -= 0.0001
			}
		}
	}
	for i := len(v.Tokens); i < n; i++ {
		add(fmt.Sprintf("<unused%d>", i), 5, -1e9)
	}
	return v
}

func rank(s string) int {
	switch {
	case s == "▁":
		return 0
	case s >= "a" && s <= "z":
		return 1
	case s >= "A" && s <= "Z":
		return 2
	}
	return 3
}
