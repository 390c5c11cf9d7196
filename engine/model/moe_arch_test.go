package model_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// moeFiles are the tiny mixture-of-experts and latent-attention models of
// ../shared/models/arch.
var moeFiles = []string{"arch/tiny-mixtral-hf", "arch/tiny-mixtral.F16.gguf", "arch/tiny-qwen3moe-hf", "arch/tiny-deepseekv3-hf"}

// A tree batch gives each node its chain's logits bit for bit: experts
// run on the tokens routed to them in the same order whatever the batch,
// and latent attention sees the tree's ancestors as ordinary attention does.
func TestMoETreeEqualsChains(t *testing.T) {
	for _, file := range moeFiles {
		t.Run(file, func(t *testing.T) { testTreeEqualsChains(t, openArch(t, file)) })
	}
	for _, spec := range []string{"tiny-moe", "tiny-mla"} {
		t.Run(spec, func(t *testing.T) { testTreeEqualsChains(t, tinySource(t, spec)) })
	}
}

// TP 2 and 4 give TP 1's logits: every expert split by its FFN dimension,
// the router replicated; latent attention's heads split, its latent
// replicated.
func TestMoETensorParallel(t *testing.T) {
	for _, file := range moeFiles {
		src := openArch(t, file)
		for _, tp := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/tp%d", file, tp), func(t *testing.T) { testTensorParallel(t, src, tp) })
		}
	}
}

// halfRope is a latent-attention source with its rope rows (each query
// head's, and the rope key's in kv_a) moved from interleaved pairs (2i,
// 2i+1) to halves (i, i+d/2), stated as rope_interleave false (RopeHalf).
type halfRope struct{ model.WeightSource }

func (h halfRope) Config() model.Config {
	c := h.WeightSource.Config()
	c.RopeLayout = model.RopeHalf
	return c
}

func (h halfRope) Tensor(name string) (*tensor.Tensor, error) {
	t, err := h.WeightSource.Tensor(name)
	if err != nil {
		return nil, err
	}
	c := h.WeightSource.Config()
	a := &c.MLA
	var first []int // the first row of each rope block
	switch {
	case strings.HasSuffix(name, model.PartQB+".weight"):
		for hd := range c.Heads {
			first = append(first, hd*a.QKDim()+a.NopeDim)
		}
	case strings.HasSuffix(name, model.PartKVA+".weight"):
		first = []int{a.KVRank}
	default:
		return t, nil
	}
	out := *t
	out.Data = slices.Clone(t.Data)
	rb := t.RowBytes()
	for _, f := range first {
		for i := range a.RopeDim / 2 {
			copy(out.Data[(f+i)*rb:], t.Row(f+2*i))
			copy(out.Data[(f+a.RopeDim/2+i)*rb:], t.Row(f+2*i+1))
		}
	}
	return &out, nil
}

// rope_interleave false: the same model with its rope rows in halves
// gives the same logits.
func TestLatentRopeHalf(t *testing.T) {
	src := openArch(t, "arch/tiny-deepseekv3-hf")
	V := src.Config().Vocab
	want, got := make([]float32, len(prompt)*V), make([]float32, len(prompt)*V)
	if err := newRunner(t, src).Forward(context.Background(), model.Batch{Tokens: prompt, Logits: model.LogitsAll}, want); err != nil {
		t.Fatal(err)
	}
	if err := newRunner(t, halfRope{src}).Forward(context.Background(), model.Batch{Tokens: prompt, Logits: model.LogitsAll}, got); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(got, want); d > 1e-4 {
		t.Errorf("rope in halves differs from interleaved by %g", d)
	}
}
