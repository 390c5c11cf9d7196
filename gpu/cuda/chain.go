//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"slices"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/spec"
)

var _ spec.ChainVerifier = (*Target)(nil)

// tokensOff is where stepParams.Tokens starts in the device's Step.
var tokensOff = cu.DevicePtr(unsafe.Offsetof(stepParams{}.Tokens))

// VerifyChain implements spec.ChainVerifier for a head's chain left on
// the device (Head.EnqueueChain): the verify step of (next, the chain's k
// tokens) waits for the chain on the device, copies its tokens into the
// step's parameters there, and copies them back with the step's ids and
// captured features, so a speculative step synchronizes once. A chain on
// another GPU, or a target with ranks on other GPUs (their step
// parameters are copied from the host's), is read back first (two
// synchronizes, as before).
func (t *Target) VerifyChain(ctx context.Context, next int32, p spec.PendingChain) (ids, drafts []int32, err error) {
	ch, ok := p.(*headChain)
	if !ok || ch.h == nil || ch.k < 1 || ch.k+1 > MaxTokens {
		return nil, nil, fmt.Errorf("cuda: verify of a chain this target cannot read (%T of %d tokens)", p, p.Len())
	}
	toks := make([]int32, ch.k+1) // placeholders for the chain's tokens (valid ids), replaced on the device
	toks[0] = next
	if ch.h.dev.Ordinal != t.dev.Ordinal || t.anyRemote() {
		if err := ch.h.readBack(); err != nil {
			return nil, nil, err
		}
		copy(toks[1:], ch.h.hout.ints()[:ch.k])
		ch = nil
	}
	rows, err := t.exec(ctx, model.Batch{Tokens: toks, Logits: model.LogitsAll}, true, 0, true, ch)
	if err != nil {
		return nil, nil, err
	}
	if ch == nil {
		return slices.Clone(t.outIDs[:rows]), toks[1:], nil
	}
	ch.h.inflight = false // the step waited for the chain and is synchronized
	return slices.Clone(t.outIDs[:rows]), slices.Clone(ch.h.hout.ints()[:ch.k]), nil
}

// chainTokens enqueues, after the step's parameters, the wait for ch and
// the copy of its tokens into the step's tokens 1..k (nil: none).
func (t *Target) chainTokens(ch *headChain) error {
	if ch == nil {
		return nil
	}
	if err := t.stream.Wait(ch.h.done, 0); err != nil {
		return fmt.Errorf("cuda: wait for the EAGLE-3 chain: %w", err)
	}
	if err := cu.MemcpyDtoDAsync(t.step+tokensOff+4, ch.h.out, int64(4*ch.k), t.stream); err != nil {
		return fmt.Errorf("cuda: the EAGLE-3 chain's tokens into the verify step: %w", err)
	}
	return nil
}

// readBack waits for the chain EnqueueChain left at out (hout's device
// address: the drafted tokens are in host memory once it is done).
func (h *Head) readBack() error {
	unbind, err := h.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	if err := h.stream.Synchronize(); err != nil {
		return fmt.Errorf("cuda: EAGLE-3 chain: %w", err)
	}
	h.inflight = false
	return nil
}
