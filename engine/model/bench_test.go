package model_test

import (
	"context"
	"testing"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
)

// benchRunner is the gocoder-14m shape ("small" preset) in Q8_0.
func benchRunner(b *testing.B, threads int) *model.Runner {
	src, err := synthetic.Open("small?dtype=q8_0")
	if err != nil {
		b.Fatal(err)
	}
	w, err := model.LoadWeights(src, model.Shard{Size: 1})
	if err != nil {
		b.Fatal(err)
	}
	return model.NewRunner(w, 1024, nil, cpu.NewPool(threads))
}

// BenchmarkPrefill512 is one 512-token batch (pp512), tokens/s in the output.
func BenchmarkPrefill512(b *testing.B) {
	r := benchRunner(b, 2)
	toks := make([]int32, 512)
	for i := range toks {
		toks[i] = int32(3 + i*7%4000)
	}
	logits := make([]float32, r.W.Cfg.Vocab)
	for b.Loop() {
		r.KV.Rewind(0)
		if err := r.Forward(context.Background(), model.Batch{Tokens: toks}, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(512*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkDecode is single-token steps after a 5-token prompt (tg).
func BenchmarkDecode(b *testing.B) {
	r := benchRunner(b, 2)
	logits := make([]float32, r.W.Cfg.Vocab)
	ctx := context.Background()
	if err := r.Forward(ctx, model.Batch{Tokens: []int32{1, 3, 4, 5, 6}}, logits); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if r.KV.Len >= 1000 {
			r.KV.Rewind(5)
		}
		if err := r.Forward(ctx, model.Batch{Tokens: []int32{7}}, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
