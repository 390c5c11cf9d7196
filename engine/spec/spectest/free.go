// Package spectest holds test doubles for the speculative loop and the
// engine around it, shared by their tests and benchmarks.
package spectest

import (
	"context"
	"errors"

	"rigscope/engine/model"
)

// FreeTarget is a target that costs nothing: the next token after t is
// t+1 (mod its vocabulary), picked "on the device" (ForwardIDs).
// Benchmarks use it to measure what the host adds to each step around a
// GPU target.
type FreeTarget struct {
	n, vocab int
	ids      []int32
}

// NewFreeTarget is an empty FreeTarget over a vocabulary of vocab ids.
func NewFreeTarget(vocab int) *FreeTarget { return &FreeTarget{vocab: vocab} }

// Forward is not served: a FreeTarget runs greedy steps only.
func (t *FreeTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	return nil, errors.New("spectest: FreeTarget serves greedy steps only (ForwardIDs)")
}

// ForwardIDs appends the batch and returns, per row b.Logits asks for,
// that row's token + 1.
func (t *FreeTarget) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
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

func (t *FreeTarget) Len() int                            { return t.n }
func (t *FreeTarget) Rewind(n int) error                  { t.n = n; return nil }
func (t *FreeTarget) KeepPath(base int, path []int) error { t.n = base + len(path); return nil }
func (t *FreeTarget) Vocab() int                          { return t.vocab }
func (t *FreeTarget) MaxLen() int                         { return 1 << 30 }
