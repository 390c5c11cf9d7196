package engine

import (
	"context"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/spec"
	"rigscope/engine/spec/spectest"
)

// BenchmarkRunStepOverhead is what the engine adds to each decode step
// around a target that costs nothing (the recorder, the sink, the text
// stream, the run log): the host's share of a GPU step. ns/step.
func BenchmarkRunStepOverhead(b *testing.B) {
	for _, logs := range []bool{false, true} {
		name := "nolog"
		if logs {
			name = "runlog"
		}
		b.Run(name, func(b *testing.B) {
			RegisterDevice("free", Device{Target: func(src loader.Source, tpN int, gpus []int, ctxLen int) (spec.Target, error) {
				return spectest.NewFreeTarget(src.Config().Vocab), nil
			}})
			opts := Options{Device: "free", CtxLen: 8192}
			if logs {
				opts.LogDir = b.TempDir()
			}
			e, err := Open(context.Background(), "synthetic:tiny", opts)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			const tokens = 2048
			steps := 0
			for b.Loop() {
				st, err := e.Run(context.Background(), RunConfig{PromptIDs: []int32{1, 2, 3}, MaxTokens: tokens, IgnoreEOS: true}, func(Event) {})
				if err != nil || st.GeneratedTokens != tokens {
					b.Fatalf("%d tokens, %v", st.GeneratedTokens, err)
				}
				steps += tokens
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
		})
	}
}
