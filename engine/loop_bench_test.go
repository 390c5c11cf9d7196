package engine

import (
	"context"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
)

// freeTarget costs nothing: the next token after t is t+1 (mod vocab),
// picked "on the device" (ForwardIDs).
type freeTarget struct {
	n, vocab int
	ids      []int32
}

func (t *freeTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	panic("greedy steps take ForwardIDs")
}
func (t *freeTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	t.n += len(b.Tokens)
	rows := 1
	if b.Logits == model.LogitsAll {
		rows = len(b.Tokens)
	}
	t.ids = t.ids[:0]
	for i := len(b.Tokens) - rows; i < len(b.Tokens); i++ {
		t.ids = append(t.ids, (b.Tokens[i]+1)%int32(t.vocab))
	}
	return t.ids, nil
}
func (t *freeTarget) Len() int                            { return t.n }
func (t *freeTarget) Rewind(n int) error                  { t.n = n; return nil }
func (t *freeTarget) KeepPath(base int, path []int) error { t.n = base + len(path); return nil }
func (t *freeTarget) Vocab() int                          { return t.vocab }
func (t *freeTarget) MaxLen() int                         { return 1 << 20 }

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
				return &freeTarget{vocab: src.Config().Vocab}, nil
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
