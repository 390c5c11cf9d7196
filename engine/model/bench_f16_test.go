package model_test

import (
	"context"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
	"rigscope/internal/fixtures"
)

// BenchmarkPrefill512Draft is pp512 of gocoder-draft-1m.F16 (dim 128, F16
// weights) on one thread: the small-matrix F16 prefill path.
func BenchmarkPrefill512Draft(b *testing.B) {
	src, err := loader.Open(fixtures.Path(b, "gocoder-draft-1m.F16.gguf"), loader.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	w, err := model.LoadWeights(src, model.Shard{Size: 1})
	if err != nil {
		b.Fatal(err)
	}
	r := model.NewRunner(w, 1024, nil, cpu.NewPool(1))
	toks := make([]int32, 512)
	for i := range toks {
		toks[i] = int32(3 + i*7%4000)
	}
	logits := make([]float32, w.Cfg.Vocab)
	for b.Loop() {
		r.KV.Rewind(0)
		if err := r.Forward(context.Background(), model.Batch{Tokens: toks}, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(512*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
