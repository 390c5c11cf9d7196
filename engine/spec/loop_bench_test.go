package spec

import (
	"context"
	"testing"

	"rigscope/engine/sample"
	"rigscope/engine/spec/spectest"
)

// loopDrafter proposes the target's own continuation (every draft accepted).
type loopDrafter struct {
	vocab int
	buf   []int32
}

func (d *loopDrafter) Name() string { return "loop" }
func (d *loopDrafter) Propose(ctx context.Context, seq []int32, req Request) (Proposal, error) {
	d.buf = d.buf[:0]
	t := seq[len(seq)-1]
	for range req.K {
		t = (t + 1) % int32(d.vocab)
		d.buf = append(d.buf, t)
	}
	return Proposal{Tokens: d.buf}, nil
}
func (d *loopDrafter) Accept(path []int) {}
func (d *loopDrafter) Reset()            {}

// BenchmarkLoopOverhead is the host cost of one speculative step (k=4,
// every draft accepted) around a target and drafter that cost nothing:
// what the loop adds to a GPU step (ns/op is per step).
func BenchmarkLoopOverhead(b *testing.B) {
	const vocab, k, tokens = 32000, 4, 4096
	steps := 0
	for b.Loop() {
		t := spectest.NewFreeTarget(vocab)
		res, err := Generate(context.Background(), t, []int32{1, 2, 3}, Options{
			MaxTokens: tokens, EOS: -1, K: k, Sampler: sample.New(sample.Params{}, 1), Drafter: &loopDrafter{vocab: vocab},
			Emit: func([]int32, []bool) {}, Step: func(StepInfo) { steps++ },
		})
		if err != nil || len(res.Tokens) != tokens {
			b.Fatalf("%d tokens, %v", len(res.Tokens), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
}
