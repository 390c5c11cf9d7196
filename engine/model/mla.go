package model

import (
	"fmt"
	"math"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// MLA is multi-head latent attention's hyperparameters (DeepSeek-V2/V3,
// Kimi-K2). The zero value is ordinary attention.
//
// Per token, the query passes through a QRank latent (RMSNorm) and the
// keys and values of every head come from one KVRank latent c (RMSNorm)
// plus one RopeDim key k_rope shared by the heads; the cache holds only
// (c, k_rope). Head h's key is (W_UK_h·c, k_rope) and its value W_UV_h·c,
// so attention runs in the latent space with the up-projections absorbed
// (DeepSeek-V2, section 2.1.2):
//
//	score = ((W_UK_hᵀ·q_nope) · c  +  q_rope · k_rope) / sqrt(NopeDim + RopeDim)
//	out_h = W_UV_h · Σ softmax(score) c
//
// RoPE turns the rope dims in Config.RopeLayout: interleaved pairs (2i,
// 2i+1) for rope_interleave (DeepSeek's checkpoints), else halves, with the
// config's RoPE scaling (its divisors over the rope dims); with YaRN the
// scores are also multiplied by mscale(factor, mscale_all_dim)² (MLAScale).
// Config.HeadDim is RopeDim.
type MLA struct {
	QRank   int // q_lora_rank
	KVRank  int // kv_lora_rank
	NopeDim int // qk_nope_head_dim: per head, query/key dims without RoPE
	RopeDim int // qk_rope_head_dim: per head, query/key dims with RoPE (= Config.HeadDim)
	VDim    int // v_head_dim
}

// mlaNormEps is the latent norms' epsilon: transformers builds q_a_layernorm
// and kv_a_layernorm with DeepseekV3RMSNorm's default, not rms_norm_eps.
const mlaNormEps = 1e-6

// MLANormEps is the latent norms' epsilon, for a device's own kernels.
const MLANormEps = mlaNormEps

// Enabled says whether the model uses latent attention.
func (a *MLA) Enabled() bool { return *a != MLA{} }

// QKDim is a query head's width (nope + rope).
func (a *MLA) QKDim() int { return a.NopeDim + a.RopeDim }

func (a *MLA) String() string {
	return fmt.Sprintf("q rank %d, kv rank %d, qk %d+%d, v %d", a.QRank, a.KVRank, a.NopeDim, a.RopeDim, a.VDim)
}

func (a *MLA) check(c *Config) error {
	if !a.Enabled() {
		return nil
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"q_lora_rank", a.QRank}, {"kv_lora_rank", a.KVRank}, {"qk_nope_head_dim", a.NopeDim}, {"qk_rope_head_dim", a.RopeDim}, {"v_head_dim", a.VDim}} {
		if f.v < 1 || f.v > MaxDim {
			return fmt.Errorf("%s %d is not between 1 and %d (multi-head latent attention needs each)", f.name, f.v, MaxDim)
		}
	}
	switch {
	case a.RopeDim != c.HeadDim:
		return fmt.Errorf("qk_rope_head_dim %d differs from the head dim %d RoPE turns", a.RopeDim, c.HeadDim)
	case c.KVHeads != c.Heads:
		return fmt.Errorf("latent attention with %d kv heads for %d heads: every head has its own key and value", c.KVHeads, c.Heads)
	case c.RopeScaling.Type == RopeScaleYaRN && c.RopeScaling.AttnFactor != 1:
		// transformers multiplies the rope dims' cos and sin by it, which
		// here would scale only the rope part of each score: not
		// implemented (DeepSeek's mscale = mscale_all_dim makes it 1).
		return fmt.Errorf("latent attention with RoPE scaling %s: a YaRN attention factor other than 1 (mscale differing from mscale_all_dim) is not implemented", c.RopeScaling)
	case c.SlidingWindow > 0 || c.QKNorm || c.QKVBias:
		return fmt.Errorf("latent attention with a sliding window, q/k norms or q/k/v biases is not implemented")
	}
	return nil
}

// MLAScale is latent attention's score scale: 1/sqrt(nope + rope), times
// mscale(factor, mscale_all_dim)² with YaRN scaling that states
// mscale_all_dim (DeepSeek-V3Attention's softmax scale in transformers),
// rounded to float32 once.
func (c *Config) MLAScale() float32 {
	s := 1 / math.Sqrt(float64(c.MLA.QKDim()))
	if r := c.RopeScaling; r.Type == RopeScaleYaRN && r.MScaleAllDim != 0 {
		m := yarnMScale(float64(r.Factor), float64(r.MScaleAllDim))
		s *= m * m
	}
	return float32(s)
}

// headDims are a layer's attention widths per head: what a query head
// and an output head hold (ordinary attention: HeadDim both).
func (c *Config) headDims() (qk, v int) {
	if c.MLA.Enabled() {
		return c.MLA.QKDim(), c.MLA.VDim
	}
	return c.HeadDim, c.HeadDim
}

// Latent attention's tensor parts (llama.cpp's deepseek2 names).
const (
	PartQA     = "attn_q_a"      // (q rank, dim)
	PartQANorm = "attn_q_a_norm" // (q rank)
	PartQB     = "attn_q_b"      // (heads*(nope+rope), q rank)
	PartKVA    = "attn_kv_a_mqa" // (kv rank + rope, dim)
	PartKVNorm = "attn_kv_a_norm"
	PartKVB    = "attn_kv_b" // (heads*(nope+v), kv rank)
)

// ExpectedMLAShapes adds to m layer l's latent attention tensors, in place
// of attn_q, attn_k and attn_v (attn_output is (dim, heads*v)).
func ExpectedMLAShapes(c *Config, l int, m map[string][]int) {
	a := &c.MLA
	m[LayerName(l, PartQA)] = []int{a.QRank, c.Dim}
	m[LayerName(l, PartQANorm)] = []int{a.QRank}
	m[LayerName(l, PartQB)] = []int{c.Heads * a.QKDim(), a.QRank}
	m[LayerName(l, PartKVA)] = []int{a.KVRank + a.RopeDim, c.Dim}
	m[LayerName(l, PartKVNorm)] = []int{a.KVRank}
	m[LayerName(l, PartKVB)] = []int{c.Heads * (a.NopeDim + a.VDim), a.KVRank}
	m[LayerName(l, "attn_output")] = []int{c.Dim, c.Heads * a.VDim}
}

// MLALayer is one layer's latent attention weights for this rank: the
// latent projections replicated (every rank computes and caches the whole
// latent), the per-head ones split by heads. hl = local heads, r = kv
// rank, qk = nope+rope.
type MLALayer struct {
	QA      *tensor.Tensor // (q rank, dim) replicated
	QANorm  []float32      // (q rank)
	QB      *tensor.Tensor // (hl*qk, q rank) this rank's heads
	KVA     *tensor.Tensor // (r+rope, dim) replicated
	KVANorm []float32      // (r)
	// UKT is each local head's key up-projection transposed, (hl, r,
	// nope) float32: it takes the head's query into the latent space.
	UKT []float32
	// UV is each local head's value up-projection, (hl, v, r) float32: it
	// takes the head's mixed latent to its value.
	UV []float32
}

// loadMLA takes layer l's latent attention weights for shard sh.
func loadMLA(cfg *Config, l int, sh Shard, headLo, hl int, get func(string, ...int) (*tensor.Tensor, error), vec func(string, int) ([]float32, error)) (*MLALayer, error) {
	a := &cfg.MLA
	L := &MLALayer{}
	var err error
	if L.QA, err = get(LayerName(l, PartQA), a.QRank, cfg.Dim); err != nil {
		return nil, err
	}
	if L.QANorm, err = vec(LayerName(l, PartQANorm), a.QRank); err != nil {
		return nil, err
	}
	qb, err := get(LayerName(l, PartQB), cfg.Heads*a.QKDim(), a.QRank)
	if err != nil {
		return nil, err
	}
	if L.QB, err = shardOf(qb, sh.Size, true, headLo*a.QKDim(), (headLo+hl)*a.QKDim()); err != nil {
		return nil, err
	}
	if L.KVA, err = get(LayerName(l, PartKVA), a.KVRank+a.RopeDim, cfg.Dim); err != nil {
		return nil, err
	}
	if L.KVANorm, err = vec(LayerName(l, PartKVNorm), a.KVRank); err != nil {
		return nil, err
	}
	kvb, err := get(LayerName(l, PartKVB), cfg.Heads*(a.NopeDim+a.VDim), a.KVRank)
	if err != nil {
		return nil, err
	}
	r, nope, v := a.KVRank, a.NopeDim, a.VDim
	L.UKT = make([]float32, hl*r*nope)
	L.UV = make([]float32, hl*v*r)
	row := make([]float32, r)
	for h := range hl {
		first := (headLo + h) * (nope + v) // head's first row of kv_b: nope key rows, then v value rows
		for i := range nope {
			cpu.DequantRow(row, kvb, first+i)
			for j, x := range row {
				L.UKT[(h*r+j)*nope+i] = x
			}
		}
		for i := range v {
			cpu.DequantRow(L.UV[(h*v+i)*r:(h*v+i+1)*r], kvb, first+nope+i)
		}
	}
	return L, nil
}

// bytes is the layer's weight memory: the projections and the float32
// up-projections.
func (m *MLALayer) bytes() int64 {
	return tensorBytes(m.QA) + tensorBytes(m.QB) + tensorBytes(m.KVA) + 4*int64(len(m.UKT)+len(m.UV))
}

// newKVCache is a runner's cache: per position, this rank's keys and
// values, or with latent attention the latent and rope key (replicated on
// every rank).
func newKVCache(w *Weights, slots int) *KVCache {
	c := w.Cfg
	if c.MLA.Enabled() {
		return NewLatentCache(c.Layers, slots, c.MLA.KVRank+c.MLA.RopeDim)
	}
	return NewKVCache(c.Layers, slots, w.KVHeadsLocal*c.HeadDim)
}
