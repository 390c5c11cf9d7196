package spec

import (
	"context"

	"rigscope/engine/model"
)

// RunnerTarget is a Target over one unsharded model.Runner (TP=1): tests,
// and any caller that needs no tensor parallelism. It is a FeatureTarget.
type RunnerTarget struct {
	R      *model.Runner
	logits []float32 // (rows, vocab), reused
}

// NewRunnerTarget wraps r.
func NewRunnerTarget(r *model.Runner) *RunnerTarget { return &RunnerTarget{R: r} }

func (t *RunnerTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	rows := 0
	switch b.Logits {
	case model.LogitsLast:
		rows = 1
	case model.LogitsAll:
		rows = len(b.Tokens)
	}
	v := t.Vocab()
	if cap(t.logits) < rows*v {
		t.logits = make([]float32, rows*v)
	}
	t.logits = t.logits[:rows*v]
	if err := t.R.Forward(ctx, b, t.logits); err != nil {
		return nil, err
	}
	return t.logits, nil
}

func (t *RunnerTarget) Len() int                            { return t.R.KV.Len }
func (t *RunnerTarget) Rewind(n int) error                  { return t.R.KV.Rewind(n) }
func (t *RunnerTarget) KeepPath(base int, path []int) error { return t.R.KV.KeepPath(base, path) }
func (t *RunnerTarget) Vocab() int                          { return t.R.W.Cfg.Vocab }
func (t *RunnerTarget) MaxLen() int                         { return t.R.KV.Slots }
func (t *RunnerTarget) SetCapture(layers []int)             { t.R.CaptureLayers = layers }
func (t *RunnerTarget) Captured() [][]float32               { return t.R.Captured }
