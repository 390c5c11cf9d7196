package model

import (
	"fmt"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// WeightSource is what loading needs from a model file (loader.Source
// satisfies it).
type WeightSource interface {
	Config() Config
	Tensor(name string) (*tensor.Tensor, error)
}

// Shard names one rank of a tensor-parallel group of Size ranks.
type Shard struct{ Rank, Size int }

// Layer is one decoder block's weights for this rank. hl = query heads on
// this rank, kvl = kv heads on this rank, fl = this rank's FFN columns.
type Layer struct {
	AttnNorm []float32      // (dim)
	Wq       *tensor.Tensor // (hl*hd, dim)   column-parallel: this rank's query heads
	Wk, Wv   *tensor.Tensor // (kvl*hd, dim)  this rank's kv heads (replicated when TP > kv heads)
	Wo       *tensor.Tensor // (dim, hl*hd)   row-parallel: the input columns of this rank's heads
	Bq       []float32      // (hl*hd)  QKVBias: this rank's heads' query bias; nil without
	Bk, Bv   []float32      // (kvl*hd) QKVBias: this rank's kv heads' key and value biases
	QNorm    []float32      // (hd)     QKNorm: RMSNorm weight of every query head (replicated); nil without
	KNorm    []float32      // (hd)     QKNorm: RMSNorm weight of every key head (replicated)
	FFNNorm  []float32      // (dim)
	Gate, Up *tensor.Tensor // (fl, dim)      column-parallel
	Down     *tensor.Tensor // (dim, fl)      row-parallel

	MoE *MoELayer // an MoE layer's router and experts, in place of Gate, Up, Down; nil for a dense MLP
	MLA *MLALayer // latent attention, in place of Wq, Wk, Wv (Wo is (dim, hl*v)); nil without

	// PostAttnNorm, PostFFNNorm (dim): Gemma 3's norms of the attention and
	// MLP outputs before each residual add (replicated); nil without.
	PostAttnNorm, PostFFNNorm []float32
}

// Weights is one rank's view of the model. With Shard{0, 1} it is the whole
// model. Embedding is replicated (a lookup moves no data); the output
// projection is vocab-parallel: rank r computes logits [VocabLo, VocabHi).
type Weights struct {
	Cfg   Config
	Shard Shard

	HeadLo, HeadsLocal     int // query heads [HeadLo, HeadLo+HeadsLocal)
	KVHeadLo, KVHeadsLocal int // kv heads [KVHeadLo, KVHeadLo+KVHeadsLocal)
	FFNLo, FFNHi           int // FFN columns [FFNLo, FFNHi)
	VocabLo, VocabHi       int // output rows [VocabLo, VocabHi)

	TokEmbd *tensor.Tensor // (vocab, dim)
	// RopeDivisors (hd/2) divide each RoPE pair's frequency (RopeScaling);
	// nil for plain RoPE.
	RopeDivisors []float32
	Layers       []Layer
	OutNorm      []float32      // (dim)
	Output       *tensor.Tensor // (VocabHi-VocabLo, dim)

	// LocalRopeDivisors (hd/2) are Gemma 3's local layers' (nil: plain).
	LocalRopeDivisors []float32
}

// ValidTP lists the tensor-parallel sizes (up to max) that split cfg's heads
// evenly: query heads divisible by tp, and kv heads either divisible by tp or
// dividing it (then kv heads are replicated, as vLLM does).
func ValidTP(cfg Config, max int) []int {
	var ok []int
	for tp := 1; tp <= max; tp++ {
		if splits(cfg, tp) {
			ok = append(ok, tp)
		}
	}
	return ok
}

func splits(cfg Config, tp int) bool {
	return cfg.Heads%tp == 0 && (cfg.KVHeads%tp == 0 || tp%cfg.KVHeads == 0)
}

// CheckTP refuses a tensor-parallel size that does not split cfg's heads,
// naming the sizes that do.
func CheckTP(cfg Config, tp int) error {
	if tp < 1 {
		return fmt.Errorf("tensor-parallel size %d must be at least 1", tp)
	}
	if !splits(cfg, tp) {
		return fmt.Errorf("tensor-parallel size %d does not divide %d heads / %d kv heads; valid sizes: %v",
			tp, cfg.Heads, cfg.KVHeads, ValidTP(cfg, 64))
	}
	return nil
}

// LoadWeights takes rank shard.Rank's slices of every weight from src. The
// weights alias src's (mapped) memory; only the small norm vectors are
// converted to float32. K-quant matrices (Q4_K, Q5_K, Q6_K) stay as stored,
// read by the CPU's k-quant kernels, except at TP > 1, where they are
// re-encoded as Q8_0 first (widenKQuant): a row-parallel shard cuts the
// columns at head and FFN boundaries, which need not fall on the k-quants'
// 256-weight blocks.
func LoadWeights(src WeightSource, shard Shard) (*Weights, error) {
	cfg := src.Config()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if shard.Size == 0 {
		shard.Size = 1
	}
	if err := CheckTP(cfg, shard.Size); err != nil {
		return nil, err
	}
	w := &Weights{Cfg: cfg, Shard: shard}
	hd, tp, r := cfg.HeadDim, shard.Size, shard.Rank
	w.HeadsLocal = cfg.Heads / tp
	w.HeadLo = r * w.HeadsLocal
	group := cfg.Heads / cfg.KVHeads
	w.KVHeadLo = w.HeadLo / group
	w.KVHeadsLocal = (w.HeadLo+w.HeadsLocal-1)/group - w.KVHeadLo + 1

	get := func(name string, shape ...int) (*tensor.Tensor, error) {
		t, err := src.Tensor(name)
		if err != nil {
			return nil, err
		}
		if err := t.ExpectShape(shape...); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		if err := cpu.Supported(t.DType); err != nil {
			return nil, fmt.Errorf("model: tensor %q: %w", name, err)
		}
		if tp > 1 {
			return widenKQuant(t), nil
		}
		return t, nil
	}
	vec := func(name string, n int) ([]float32, error) {
		t, err := get(name, n)
		if err != nil {
			return nil, err
		}
		v := make([]float32, n)
		cpu.DequantRow(v, t, 0)
		return v, nil
	}
	var err error
	if w.TokEmbd, err = get(NameTokEmbd, cfg.Vocab, cfg.Dim); err != nil {
		return nil, err
	}
	if w.OutNorm, err = vec(NameOutputNorm, cfg.Dim); err != nil {
		return nil, err
	}
	out := w.TokEmbd
	if !cfg.TiedEmbed {
		if out, err = get(NameOutput, cfg.Vocab, cfg.Dim); err != nil {
			return nil, err
		}
	}
	w.VocabLo, w.VocabHi = cfg.Vocab*r/tp, cfg.Vocab*(r+1)/tp
	if w.Output, err = out.SliceRows(w.VocabLo, w.VocabHi); err != nil {
		return nil, err
	}

	switch cfg.RopeScaling.Type {
	case RopeScaleNone:
	case RopeScaleFreqs:
		if w.RopeDivisors, err = vec(NameRopeFreqs, hd/2); err != nil {
			return nil, err
		}
		for j, d := range w.RopeDivisors {
			if !(d > 0 && d < 1e6) {
				return nil, fmt.Errorf("model: %s[%d] = %g is not a frequency divisor above 0 and below 1e6; the file is damaged, convert it again", NameRopeFreqs, j, d)
			}
		}
	default:
		w.RopeDivisors = cfg.RopeScaling.Divisors(cfg.RopeTheta, hd)
	}
	w.LocalRopeDivisors = cfg.Gemma.LocalRopeScaling.Divisors(cfg.Gemma.LocalRopeTheta, hd)

	w.Layers = make([]Layer, cfg.Layers)
	for i := range w.Layers {
		L := &w.Layers[i]
		n := func(part string) string { return LayerName(i, part) }
		if L.AttnNorm, err = vec(n("attn_norm"), cfg.Dim); err != nil {
			return nil, err
		}
		if L.FFNNorm, err = vec(n("ffn_norm"), cfg.Dim); err != nil {
			return nil, err
		}
		if err := loadGemmaLayer(L, i, cfg, vec); err != nil {
			return nil, err
		}
		if cfg.QKNorm {
			if L.QNorm, err = vec(n("attn_q_norm"), hd); err != nil {
				return nil, err
			}
			if L.KNorm, err = vec(n("attn_k_norm"), hd); err != nil {
				return nil, err
			}
		}
		var wq, wk, wv, gate, up, down *tensor.Tensor
		if cfg.MLA.Enabled() {
			if L.MLA, err = loadMLA(&cfg, i, shard, w.HeadLo, w.HeadsLocal, get, vec); err != nil {
				return nil, err
			}
		} else {
			if wq, err = get(n("attn_q"), cfg.Heads*hd, cfg.Dim); err != nil {
				return nil, err
			}
			if wk, err = get(n("attn_k"), cfg.KVHeads*hd, cfg.Dim); err != nil {
				return nil, err
			}
			if wv, err = get(n("attn_v"), cfg.KVHeads*hd, cfg.Dim); err != nil {
				return nil, err
			}
		}
		_, vd := cfg.headDims()
		wo, err := get(n("attn_output"), cfg.Dim, cfg.Heads*vd)
		if err != nil {
			return nil, err
		}
		if cfg.MoE.Sparse(i) {
			if L.MoE, err = loadMoE(&cfg, i, shard, get, vec); err != nil {
				return nil, err
			}
		} else {
			if gate, err = get(n("ffn_gate"), cfg.FFN, cfg.Dim); err != nil {
				return nil, err
			}
			if up, err = get(n("ffn_up"), cfg.FFN, cfg.Dim); err != nil {
				return nil, err
			}
			if down, err = get(n("ffn_down"), cfg.Dim, cfg.FFN); err != nil {
				return nil, err
			}
		}
		if down != nil && w.FFNHi == 0 { // the first dense layer sets the split
			bs := down.DType.BlockSize()
			w.FFNLo = alignDown(cfg.FFN*r/tp, bs)
			w.FFNHi = alignDown(cfg.FFN*(r+1)/tp, bs)
			if r == tp-1 {
				w.FFNHi = cfg.FFN
			}
			if w.FFNHi <= w.FFNLo {
				return nil, fmt.Errorf("model: FFN size %d is too small to split %d ways in %d-element blocks", cfg.FFN, tp, bs)
			}
		}
		qLo, qHi := w.HeadLo*hd, (w.HeadLo+w.HeadsLocal)*hd
		kLo, kHi := w.KVHeadLo*hd, (w.KVHeadLo+w.KVHeadsLocal)*hd
		slices := []struct {
			dst  **tensor.Tensor
			src  *tensor.Tensor
			rows bool
			lo   int
			hi   int
		}{
			{&L.Wq, wq, true, qLo, qHi},
			{&L.Wk, wk, true, kLo, kHi},
			{&L.Wv, wv, true, kLo, kHi},
			{&L.Wo, wo, false, w.HeadLo * vd, (w.HeadLo + w.HeadsLocal) * vd},
			{&L.Gate, gate, true, w.FFNLo, w.FFNHi},
			{&L.Up, up, true, w.FFNLo, w.FFNHi},
			{&L.Down, down, false, w.FFNLo, w.FFNHi},
		}
		if cfg.QKVBias {
			// Biases split with their heads' rows.
			for _, b := range []struct {
				dst          *[]float32
				part         string
				rows, lo, hi int
			}{
				{&L.Bq, "attn_q", cfg.Heads * hd, qLo, qHi},
				{&L.Bk, "attn_k", cfg.KVHeads * hd, kLo, kHi},
				{&L.Bv, "attn_v", cfg.KVHeads * hd, kLo, kHi},
			} {
				full, err := vec(LayerBias(i, b.part), b.rows)
				if err != nil {
					return nil, err
				}
				*b.dst = full[b.lo:b.hi]
			}
		}
		for _, s := range slices {
			if s.src == nil { // latent attention; an MoE layer
				continue
			}
			var t *tensor.Tensor
			if tp == 1 {
				t = s.src
			} else if s.rows {
				t, err = s.src.SliceRows(s.lo, s.hi)
			} else {
				t, err = s.src.SliceCols(s.lo, s.hi)
			}
			if err != nil {
				return nil, fmt.Errorf("model: sharding for TP=%d: %w", tp, err)
			}
			*s.dst = t
		}
	}
	return w, nil
}

func alignDown(x, b int) int { return x / b * b }

// Bytes is the weight memory this rank reads (its shards plus the replicated
// embedding), for reporting memory per rank.
func (w *Weights) Bytes() int64 {
	var n int64
	add := func(t *tensor.Tensor) {
		b, _ := t.DType.Bytes(t.Elems())
		n += int64(b)
	}
	add(w.TokEmbd)
	if !w.Cfg.TiedEmbed || w.Shard.Size > 1 {
		add(w.Output)
	}
	for i := range w.Layers {
		L := &w.Layers[i]
		for _, t := range []*tensor.Tensor{L.Wq, L.Wk, L.Wv, L.Wo, L.Gate, L.Up, L.Down} {
			if t != nil {
				add(t)
			}
		}
		if L.MoE != nil {
			n += L.MoE.bytes()
		}
		if L.MLA != nil {
			n += L.MLA.bytes()
		}
	}
	return n
}
