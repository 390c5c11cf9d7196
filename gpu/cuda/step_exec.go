//go:build cuda

package cuda

import (
	"context"
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// Running one step: the batch checked and its parameters staged
// (prepare), the step's graph replayed or captured (exec), and what comes
// back (Forward: logits rows; ForwardIDs: the rows' argmax ids).

// prepare validates b and fills the pinned step parameters.
func (t *Target) prepare(b model.Batch) (T int, err error) {
	return t.prepareInto((*stepParams)(t.hstep.p), b)
}

// prepareInto validates b and fills st, a step at the cached length.
func (t *Target) prepareInto(st *stepParams, b model.Batch) (T int, err error) {
	T = len(b.Tokens)
	base := t.n
	switch {
	case T == 0:
		return 0, fmt.Errorf("cuda: empty batch")
	case T > MaxTokens:
		return 0, fmt.Errorf("cuda: batch of %d tokens; the GPU path takes at most %d per forward (split the prompt)", T, MaxTokens)
	case base+T > t.MaxLen():
		return 0, fmt.Errorf("cuda: %d cached + %d new tokens exceed the context of %d positions; start a new run or raise --ctx", base, T, t.MaxLen())
	case b.Pos != nil && len(b.Pos) != T || b.Parent != nil && len(b.Parent) != T:
		return 0, fmt.Errorf("cuda: batch of %d tokens with %d positions and %d parents", T, len(b.Pos), len(b.Parent))
	}
	st.Base, st.T, st.Temp, st.Seed = int32(base), int32(T), t.Temp, t.Seed
	for i, id := range b.Tokens {
		if id < 0 || int(id) >= t.cfg.Vocab {
			return 0, fmt.Errorf("cuda: token id %d outside the vocabulary of %d", id, t.cfg.Vocab)
		}
		st.Tokens[i] = id
		p := int32(base + i)
		if b.Pos != nil {
			p = b.Pos[i]
		}
		if p < 0 || int(p) >= t.maxPos {
			return 0, fmt.Errorf("cuda: position %d outside [0, %d)", p, t.maxPos)
		}
		st.Pos[i] = p
		if b.Parent == nil {
			st.Mask[i] = uint32(1)<<(i+1) - 1
			continue
		}
		par := b.Parent[i]
		if par >= int32(i) || par < -1 {
			return 0, fmt.Errorf("cuda: tree parent %d of node %d must be in [-1, %d)", par, i, i)
		}
		st.Mask[i] = 1 << i
		if par >= 0 {
			st.Mask[i] |= st.Mask[par]
		}
	}
	return T, nil
}

// Forward implements spec.Target: logits (rows, vocab) copied back. A chain
// longer than MaxTokens (a prompt) runs as consecutive steps of at most
// MaxTokens tokens.
func (t *Target) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	rows, err := t.forward(ctx, b, false)
	if err != nil || rows == 0 {
		return nil, err
	}
	return t.out[:rows*t.cfg.Vocab], nil
}

// ForwardIDs runs the batch and copies back only the argmax (or, with Temp
// > 0, sampled) token id of each logits row: a decode step moves 4 bytes.
func (t *Target) ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error) {
	rows, err := t.forward(ctx, b, true)
	if err != nil || rows == 0 {
		return nil, err
	}
	return append([]int32(nil), t.outIDs[:rows]...), nil
}

// forward runs b in steps of at most MaxTokens tokens (trees must fit one
// step), or a long prompt chain on the prefill path (prefill.go); on error
// the cache keeps its old length.
func (t *Target) forward(ctx context.Context, b model.Batch, idsOnly bool) (int, error) {
	T := len(b.Tokens)
	if T <= MaxTokens {
		return t.exec(ctx, b, idsOnly, 0, true, nil)
	}
	if t.prefillable(b) {
		return t.runPrefill(ctx, b, idsOnly)
	}
	switch {
	case b.Parent != nil:
		return 0, fmt.Errorf("cuda: tree of %d nodes; the GPU path verifies at most %d per forward", T, MaxTokens)
	case b.Pos != nil && len(b.Pos) != T:
		return 0, fmt.Errorf("cuda: batch of %d tokens with %d positions", T, len(b.Pos))
	}
	start, rows := t.n, 0
	for i := 0; i < T; i += MaxTokens {
		j := min(T, i+MaxTokens)
		c := model.Batch{Tokens: b.Tokens[i:j], Logits: model.LogitsNone}
		if b.Pos != nil {
			c.Pos = b.Pos[i:j]
		}
		if b.Logits == model.LogitsAll || b.Logits == model.LogitsLast && j == T {
			c.Logits = b.Logits
		}
		n, err := t.exec(ctx, c, idsOnly, rows, i == 0, nil)
		if err != nil {
			t.n = start
			return 0, err
		}
		rows += n
	}
	return rows, nil
}

// exec runs one step of at most MaxTokens tokens; its result rows land at
// row0 of the outputs, and its captured features start a new forward when
// first is set (else they are appended). With ch, tokens 1..k of the step
// are the chain's, read on the device after it (chain.go).
func (t *Target) exec(ctx context.Context, b model.Batch, idsOnly bool, row0 int, first bool, ch *headChain) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := t.dropAhead(); err != nil { // ahead.go
		return 0, err
	}
	T, err := t.prepare(b)
	if err != nil {
		return 0, err
	}
	rows := 0
	switch b.Logits {
	case model.LogitsLast:
		rows = 1
	case model.LogitsAll:
		rows = T
	}
	unbind, err := t.dev.Bind()
	if err != nil {
		return 0, err
	}
	defer unbind()
	if err := t.prepareCapture(); err != nil {
		return 0, err
	}
	if err := t.timer.mark(0, t.stream); err != nil {
		return 0, err
	}
	if err := cu.MemcpyHtoDAsync(t.step, t.hstep.p, int64(stepBytes), t.stream); err != nil {
		return 0, fmt.Errorf("cuda: step parameters: %w", err)
	}
	if err := t.copyStepParams(); err != nil { // rankdev.go
		return 0, err
	}
	if err := t.chainTokens(ch); err != nil { // chain.go (nil with remote ranks: VerifyChain)
		return 0, err
	}
	if err := t.enqueueStep(T, b.Logits); err != nil {
		return 0, err
	}
	if t.smp != nil && idsOnly && rows > 0 { // SampleIDs: the rows' ids drawn on the device, in this step
		if len(t.smp.u) != rows {
			return 0, fmt.Errorf("cuda: %d logits rows and %d uniform numbers", rows, len(t.smp.u))
		}
		if err := enqueueSample(t.dev, t.stream, t.ids, 0, t.logits, t.logits, t.cfg.Vocab, t.smp.p, t.smp.u); err != nil {
			return 0, err
		}
	}
	if rows > 0 && !idsOnly { // ids are written to mapped host memory (hids)
		if err := cu.MemcpyDtoHAsync(t.hlogits.p, t.logits, int64(4*rows*t.cfg.Vocab), t.stream); err != nil {
			return 0, fmt.Errorf("cuda: copy results back: %w", err)
		}
	}
	if err := t.copyCaptureBack(T, t.cap.host); err != nil {
		return 0, err
	}
	if c := t.comm; c != nil {
		if err := t.copyStampsBack(); err != nil { // stepcomm.go
			return 0, err
		}
	}
	if err := t.timer.mark(1, t.stream); err != nil {
		return 0, err
	}
	if err := t.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("cuda: forward of %d tokens at %d: %w%s", T, t.n, err, t.rankFailures())
	}
	if err := t.timer.collect(); err != nil {
		return 0, err
	}
	if rows > 0 {
		if idsOnly {
			t.outIDs = grow(t.outIDs, row0+rows)
			copy(t.outIDs[row0:], t.hids.ints()[:rows])
		} else {
			v := t.cfg.Vocab
			t.out = grow(t.out, (row0+rows)*v)
			copy(t.out[row0*v:], t.hlogits.floats()[:rows*v])
		}
	}
	t.collectCapture(T, first, t.cap.host)
	if t.comm != nil {
		t.comm.collect(len(t.ranks), T, t.cfg.Dim)
	}
	t.n += T
	return rows, nil
}

// grow returns s with at least n elements (the old ones kept).
func grow[E any](s []E, n int) []E {
	if len(s) >= n {
		return s
	}
	return append(s, make([]E, n-len(s))...)
}
