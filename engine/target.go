package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"rigscope/engine/tp"

	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
)

// tpTarget runs one forward pass on every rank concurrently (one goroutine
// per rank) and presents them as one spec.Target. Logits are gathered
// vocab-parallel: each rank writes its columns of the shared buffer.
type tpTarget struct {
	ranks  []*model.Runner
	group  *tp.Group // this run's allreduce group; nil for TP=1
	vocab  int
	logits []float32 // (rows, vocab)
}

func newTPTarget(ws []*model.Weights, ctxLen int) *tpTarget {
	threads := max(1, runtime.NumCPU()/len(ws))
	t := &tpTarget{vocab: ws[0].Cfg.Vocab}
	for _, w := range ws {
		t.ranks = append(t.ranks, model.NewRunner(w, ctxLen, nil, cpu.NewPool(threads)))
	}
	return t
}

// attach joins the ranks with a run's allreduce group (nil for TP=1) and
// resets the per-run allreduce counters.
func (t *tpTarget) attach(g *tp.Group) {
	t.group = g
	for r, rk := range t.ranks {
		rk.Comm = nil
		if g != nil {
			rk.Comm = g.Comm(r)
		}
		rk.AllReduceTime, rk.AllReduceCall = 0, 0
	}
}

// allReduceTime is rank 0's time inside allreduce calls since attach.
func (t *tpTarget) allReduceTime() time.Duration { return t.ranks[0].AllReduceTime }

func (t *tpTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	rows := 0
	switch b.Logits {
	case model.LogitsLast:
		rows = 1
	case model.LogitsAll:
		rows = len(b.Tokens)
	}
	if need := rows * t.vocab; cap(t.logits) < need {
		t.logits = make([]float32, need)
	}
	t.logits = t.logits[:rows*t.vocab]
	if len(t.ranks) == 1 {
		return t.logits, t.ranks[0].Forward(ctx, b, t.logits)
	}
	errs := make([]error, len(t.ranks))
	var wg sync.WaitGroup
	for r, rk := range t.ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rk.Forward(ctx, b, t.logits); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
				t.group.Abort(errs[r]) // wake the ranks waiting in a collective
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			// Ranks may have appended different amounts; restore a common length.
			t.resync()
			return nil, err
		}
	}
	return t.logits, nil
}

// resync rewinds every rank to the shortest cache after a failed step.
func (t *tpTarget) resync() {
	n := t.Len()
	for _, r := range t.ranks {
		r.KV.Len = min(r.KV.Len, n)
	}
}

func (t *tpTarget) Len() int {
	n := t.ranks[0].KV.Len
	for _, r := range t.ranks[1:] {
		n = min(n, r.KV.Len)
	}
	return n
}

func (t *tpTarget) Rewind(n int) error {
	for _, r := range t.ranks {
		if err := r.KV.Rewind(n); err != nil {
			return err
		}
	}
	return nil
}

func (t *tpTarget) KeepPath(base int, path []int) error {
	for _, r := range t.ranks {
		if err := r.KV.KeepPath(base, path); err != nil {
			return err
		}
	}
	return nil
}

func (t *tpTarget) Vocab() int  { return t.vocab }
func (t *tpTarget) MaxLen() int { return t.ranks[0].KV.Slots }

// SetCapture makes rank 0 copy out the residual stream after the given
// layers (EAGLE-3 features). The stream is replicated across ranks after
// each allreduce, so one rank's copy is the whole state.
func (t *tpTarget) SetCapture(layers []int) {
	for _, r := range t.ranks {
		r.CaptureLayers = nil
	}
	t.ranks[0].CaptureLayers = layers
}

// Captured returns rank 0's captured features of the last forward.
func (t *tpTarget) Captured() [][]float32 { return t.ranks[0].Captured }
