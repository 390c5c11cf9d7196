//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/spec"
)

var _ spec.AheadTarget = (*Target)(nil)

// Greedy steps enqueued ahead (spec.AheadTarget): plain greedy decoding
// enqueues step i+1 before the host reads step i's token, so the device
// runs the next step while the host waits for, emits and streams the
// previous token. A one-token step's last kernel (argmax_next) writes its
// token into the mapped ring at [base & 1] and sets the step parameters up
// for the next decode step (its token, base and position one further), so
// a fed step is its graph's launch and an event: no copies in or out. The
// first step of a run copies its parameters in as exec does. Each pending
// step has a slot: its base (which ring entry), its captured features
// (copied back when the capture set is on) and the event the host waits
// on instead of synchronizing the stream. The ring's two entries are never
// both pending: step i+2 is enqueued after step i's token was read.

// aheadDepth is how many steps may be pending: the one the host waits for
// and the one behind it.
const aheadDepth = 2

// aheadSlot is one pending step's host side.
type aheadSlot struct {
	base  int      // the step's position: its token is ring[base & 1]
	feats pinned   // its captured features (layers, 1, dim) float32, as cap.host for T = 1
	done  cu.Event // recorded after the step (and its features' copy back)
}

// aheadState is the ring of pending steps.
type aheadState struct {
	slots   [aheadDepth]aheadSlot
	oldest  int // the slot WaitGreedy reads next
	pending int
}

// Ahead implements spec.AheadTarget: deviceLoop, and the knob on.
func (t *Target) Ahead() bool { return t.tune.Ahead && t.deviceLoop() }

// deviceLoop says whether steps may be chained on the device ahead of the
// host (greedy steps here, a speculative cycle's, cycle.go): one rank on
// the target's GPU (ranks on other GPUs, and TP's per-step allreduce
// stamps, are per step), no step timer (cuda-bench times single steps),
// and greedy.
func (t *Target) deviceLoop() bool {
	return len(t.ranks) == 1 && !t.anyRemote() && t.comm == nil && t.timer == nil && t.Temp == 0 && t.smp == nil
}

// EnqueueGreedy implements spec.AheadTarget.
func (t *Target) EnqueueGreedy(ctx context.Context, next int32, fed bool) error {
	a := &t.ahead
	switch {
	case !t.Ahead():
		return errors.New("cuda: greedy steps enqueued ahead need one rank on the target's GPU, greedy, and no step timer")
	case a.pending == aheadDepth:
		return fmt.Errorf("cuda: %d greedy steps pending already", aheadDepth)
	case fed && a.pending == 0:
		return errors.New("cuda: a greedy step fed from the previous one, with none pending")
	case t.n+1 > t.MaxLen():
		return fmt.Errorf("cuda: a greedy step at %d exceeds the context of %d positions; start a new run or raise --ctx", t.n, t.MaxLen())
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := &a.slots[(a.oldest+a.pending)%aheadDepth]
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	if err := t.allocAhead(s); err != nil {
		return err
	}
	if err := t.prepareCapture(); err != nil {
		return err
	}
	if !fed { // a fed step's parameters are on the device already (argmax_next)
		if _, err := t.prepare(model.Batch{Tokens: []int32{next}, Logits: model.LogitsLast}); err != nil {
			return err
		}
		if err := cu.MemcpyHtoDAsync(t.step, t.hstep.p, int64(stepBytes), t.stream); err != nil {
			return fmt.Errorf("cuda: step parameters: %w", err)
		}
	}
	if err := t.enqueueStep(1, model.LogitsLast); err != nil {
		return err
	}
	if err := t.copyCaptureBack(1, s.feats); err != nil {
		return err
	}
	if err := s.done.Record(t.stream); err != nil {
		return fmt.Errorf("cuda: record the step's end: %w", err)
	}
	s.base = t.n
	t.n++
	a.pending++
	return nil
}

// WaitGreedy implements spec.AheadTarget.
func (t *Target) WaitGreedy(ctx context.Context) (int32, error) {
	a := &t.ahead
	if a.pending == 0 {
		return 0, errors.New("cuda: no greedy step pending")
	}
	s := &a.slots[a.oldest]
	unbind, err := t.dev.Bind()
	if err != nil {
		return 0, err
	}
	defer unbind()
	if err := s.done.Synchronize(); err != nil {
		return 0, fmt.Errorf("cuda: greedy step at %d: %w%s", t.n-a.pending, err, t.rankFailures())
	}
	a.oldest = (a.oldest + 1) % aheadDepth
	a.pending--
	t.collectCapture(1, true, s.feats)
	return t.ring.ints()[s.base&1], nil
}

// dropAhead waits for the pending steps and forgets their tokens (they
// stay counted in n: Rewind takes them off), and the speculative cycle's
// (they are not counted). The device is bound or not.
func (t *Target) dropAhead() error {
	if err := t.dropCycle(); err != nil { // cycle.go: speculative steps kept on the device
		return err
	}
	a := &t.ahead
	if a.pending == 0 {
		return nil
	}
	s := &a.slots[(a.oldest+a.pending-1)%aheadDepth]
	a.oldest, a.pending = 0, 0
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	if err := s.done.Synchronize(); err != nil {
		return fmt.Errorf("cuda: greedy steps enqueued ahead: %w%s", err, t.rankFailures())
	}
	return nil
}

// allocAhead allocates slot s's buffers on first use. The device is bound.
func (t *Target) allocAhead(s *aheadSlot) (err error) {
	if s.feats.p != nil {
		return nil
	}
	if s.feats, err = allocPinned(t.cfg.Layers * t.cfg.Dim * 4); err != nil {
		return fmt.Errorf("cuda: greedy step features: %w", err)
	}
	if s.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
		s.free()
		return fmt.Errorf("cuda: greedy step event: %w", err)
	}
	return nil
}

// free releases the slot's buffers. The device is bound.
func (s *aheadSlot) free() {
	s.feats.free()
	if s.done != (cu.Event{}) {
		cu.DestroyEvent(&s.done)
	}
	*s = aheadSlot{}
}
