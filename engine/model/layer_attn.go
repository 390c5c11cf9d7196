package model

import (
	"math"

	"rigscope/engine/tensor/cpu"
)

// layerAttn is how one layer attends: the RoPE table that rotates its
// queries and keys, the positions it sees, and the scale of its scores.
// Llama, Qwen and Mistral layers all share one; Gemma 3's local and global
// layers differ in all three.
type layerAttn struct {
	rope   *cpu.RopeTable
	window int     // > 0: a token sees the last window positions, itself included; 0: all
	scale  float32 // q·k is multiplied by it: 1/sqrt(head dim or query_pre_attn_scalar) · (YaRN attention factor)²
}

// newLayerAttns makes each layer's attention geometry for a cache of
// ctxLen positions; tables are shared between layers with the same RoPE.
func newLayerAttns(w *Weights, ctxLen int) (attn []layerAttn, tables []*cpu.RopeTable) {
	c := w.Cfg
	maxPos := ctxLen + 64
	base := 1 / math.Sqrt(float64(c.HeadDim))
	if c.Gemma.On {
		base = 1 / math.Sqrt(float64(c.Gemma.QueryScale))
	}
	global := layerAttn{
		rope:   cpu.NewScaledRopeTable(c.HeadDim, maxPos, c.RopeTheta, w.RopeDivisors),
		window: c.SlidingWindow,
		scale:  float32(base * c.RopeScaling.scoreFactor()),
	}
	tables = []*cpu.RopeTable{global.rope}
	var local layerAttn
	if c.Gemma.On {
		global.window = 0
		local = layerAttn{
			rope:   cpu.NewScaledRopeTable(c.HeadDim, maxPos, c.Gemma.LocalRopeTheta, w.LocalRopeDivisors),
			window: c.SlidingWindow,
			scale:  float32(base * c.Gemma.LocalRopeScaling.scoreFactor()),
		}
		tables = append(tables, local.rope)
	}
	attn = make([]layerAttn, c.Layers)
	for l := range attn {
		attn[l] = global
		if c.Gemma.IsLocal(l) {
			attn[l] = local
		}
	}
	return attn, tables
}

// LayerAttention is one layer's attention geometry exactly as the CPU
// runner uses it: the RoPE table (shared by the layers with the same
// RoPE: compare pointers), the sliding window (0: none) and the factor
// q·k is multiplied by (1/sqrt(head dim or query_pre_attn_scalar), times
// YaRN's attention factor squared). A device that runs the same model
// (gpu/cuda) takes it from here, so every scaling the CPU implements is
// the device's too.
type LayerAttention struct {
	Rope   *cpu.RopeTable
	Window int
	Scale  float32
}

// LayerAttentions is each layer's LayerAttention for a cache of ctxLen
// positions (tables for ctxLen+64). Only w.Cfg, w.RopeDivisors and
// w.LocalRopeDivisors are read.
func LayerAttentions(w *Weights, ctxLen int) []LayerAttention {
	attn, _ := newLayerAttns(w, ctxLen)
	out := make([]LayerAttention, len(attn))
	for l, a := range attn {
		out[l] = LayerAttention{Rope: a.rope, Window: a.window, Scale: a.scale}
	}
	return out
}

// ensureRope computes every table's rotations of positions [0, n), here
// rather than on the pool's threads.
func (r *Runner) ensureRope(n int) {
	for _, t := range r.ropes {
		t.Ensure(n)
	}
}
