package model_test

import (
	"fmt"
	"testing"
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
