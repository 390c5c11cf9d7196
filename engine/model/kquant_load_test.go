package model_test

import (
	"testing"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// TestLoadKQuants: at TP 1 the k-quant matrices stay as stored (the CPU
// reads them natively); at TP 2 they are widened to Q8_0 (row-parallel
// shards cut columns off the 256-blocks); WidenKQuants widens them all.
func TestLoadKQuants(t *testing.T) {
	src, err := synthetic.Open("synthetic:small?dtype=q4_k&layers=1")
	if err != nil {
		t.Fatal(err)
	}
	w1, err := model.LoadWeights(src, model.Shard{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	if w1.Layers[0].Wq.DType != tensor.Q4_K || w1.Output.DType != tensor.Q4_K {
		t.Errorf("TP 1: wq %v, output %v; want Q4_K as stored", w1.Layers[0].Wq.DType, w1.Output.DType)
	}
	w2, err := model.LoadWeights(src, model.Shard{Rank: 1, Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d := w2.Layers[0].Down.DType; d != tensor.Q8_0 {
		t.Errorf("TP 2: down %v, want Q8_0", d)
	}
	w1.WidenKQuants()
	L := w1.Layers[0]
	for _, m := range []*tensor.Tensor{w1.TokEmbd, w1.Output, L.Wq, L.Wk, L.Wv, L.Wo, L.Gate, L.Up, L.Down} {
		if m.DType != tensor.Q8_0 {
			t.Errorf("WidenKQuants left %s as %v", m.Name, m.DType)
		}
	}
}
