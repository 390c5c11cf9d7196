//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
)

var _ spec.CycleVerifier = (*Target)(nil)

// The greedy speculative step kept on the device (spec.CycleVerifier), for
// an EAGLE-3 head on the target's GPU. One step, all on the target's
// stream:
//
//	verify (graph): the k+1 rows of (next, drafts) with features captured;
//	  its last kernel, argmax_accept, takes each row's argmax, counts the
//	  accepted drafts and writes the step's record into the mapped ring,
//	  the head's step parameters (its k+1 extended rows at the verify's
//	  positions, each with the argmax after it as its token; draft step j
//	  at base+acc+j) and the next verify's (base+acc+1, first token the
//	  target's own);
//	chain (the head's graph): gather_feats hands it the verify's captured
//	  features, fc and the layer extend all k+1 rows (rows past acc are
//	  overwritten by the draft steps before any step can see them),
//	  copy_row moves row acc's output to row k, where the chain goes on,
//	  and the k draft tokens land in the next verify's tokens 1..k.
//
// gather_feats also writes the features into the step's mapped host buffer
// for the host's drafter (its bookkeeping and any host-driven step later):
// no copy, and no second stream for the next verify to wait on.
// The host enqueues step i+1 before it reads step i (two pending at most),
// as plain decoding ahead does (ahead.go).

// cycleRec is the ints of a step's record (kernels/cycle.cu CYCLE_REC):
// acc, base, the step's number, then the k+1 rows' argmax ids.
const cycleRec = 20

// cycleSlot is one pending step's host side.
type cycleSlot struct {
	feats    pinned       // (layers, k+1, dim) float32, mapped: the verify's captured features, as cap.host (gather_feats)
	featsDev cu.DevicePtr // feats' device address
	e0, eV   cu.Event     // before the verify, after it (with the acceptance)
	eC       cu.Event     // after the chain: the step is done, its features in feats
}

// cycleState is the cycle's device buffers and its ring of pending steps.
type cycleState struct {
	h        *Head // the head whose chain the cycle continues; nil: none yet
	k        int
	on       bool // the verify being enqueued ends in argmax_accept
	slots    [2]cycleSlot
	oldest   int
	pending  int
	read     int // steps read since the cycle started: the next record's number
	ring     pinned
	ringDev  cu.DevicePtr
	vids     cu.DevicePtr // (MaxTokens) int32: the verify rows' argmax
	rowsDone cu.DevicePtr // uint32: rows whose argmax is done (argmax_accept)
	stepNo   cu.DevicePtr // uint32: the record's step number, reset when the cycle starts
}

// cycleable says why p's chain cannot continue on this target's device
// ("" when it can): one rank on the target's GPU, greedy steps, no step
// timer, the head on the same GPU reading the features the target
// captures, and the knob on.
func (t *Target) cycleable(ch *headChain) string {
	switch {
	case !t.tune.EagleCycle:
		return "RIGSCOPE_CUDA_EAGLECYCLE=0"
	case !t.deviceLoop() || !t.UseGraphs:
		return "tensor-parallel ranks, or a timed, sampled or ungraphed target"
	case ch.h.dev.Ordinal != t.dev.Ordinal:
		return "the head on another GPU"
	case ch.k < 1 || ch.k+1 > MaxTokens || ch.k > spec.MaxK:
		return fmt.Sprintf("a chain of %d tokens", ch.k)
	case len(ch.h.cfg.AuxLayers) != eagle3.NumAux || !slices.Equal(t.cap.layers, ch.h.cfg.AuxLayers):
		return "the target captures other layers than the head reads"
	}
	for _, l := range t.cap.layers {
		if l < 0 || l >= t.cfg.Layers || !t.cap.on[l] {
			return fmt.Sprintf("feature layer %d outside the target's %d", l, t.cfg.Layers)
		}
	}
	return ""
}

// EnqueueCycle implements spec.CycleVerifier.
func (t *Target) EnqueueCycle(ctx context.Context, next int32, p spec.PendingChain) (bool, error) {
	c := &t.cyc
	var ch *headChain
	switch {
	case p != nil:
		var ok bool
		if ch, ok = p.(*headChain); !ok || ch.h == nil || t.cycleable(ch) != "" {
			return false, nil
		}
		if c.pending > 0 {
			return false, errors.New("cuda: a speculative cycle started with steps pending")
		}
	case c.pending == 0:
		return false, errors.New("cuda: a speculative cycle step fed from no pending step")
	case c.pending == len(c.slots):
		return false, fmt.Errorf("cuda: %d speculative cycle steps pending already", c.pending)
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if ch != nil {
		if err := t.dropAhead(); err != nil {
			return false, err
		}
	}
	unbind, err := t.dev.Bind()
	if err != nil {
		return false, err
	}
	defer unbind()
	if err := t.allocCycle(); err != nil {
		return false, err
	}
	k := c.k
	if ch != nil {
		k = ch.k
	}
	if T := k + 1; t.n+c.pending*T+T > t.MaxLen() {
		return false, fmt.Errorf("cuda: a speculative cycle step of %d tokens after %d cached positions and %d pending steps exceeds the context of %d positions", T, t.n, c.pending, t.MaxLen())
	}
	if ch != nil {
		c.oldest = 0 // step i's events are slot i&1's, as its record is ring[i&1]
	}
	s := &c.slots[(c.oldest+c.pending)%len(c.slots)]
	if err := s.e0.Record(t.stream); err != nil {
		return false, fmt.Errorf("cuda: cycle event: %w", err)
	}
	if ch != nil {
		if err := t.startCycle(next, ch); err != nil {
			return false, err
		}
	}
	T := k + 1
	c.on = true
	err = t.enqueueStep(T, model.LogitsAll)
	c.on = false
	if err != nil {
		return false, err
	}
	if err := s.eV.Record(t.stream); err != nil {
		return false, fmt.Errorf("cuda: cycle event: %w", err)
	}
	if err := c.h.enqueueCycleChain(t.stream, k, t.step+tokensOff+4, t.cap.dev, s.featsDev); err != nil {
		return false, err
	}
	if err := s.eC.Record(t.stream); err != nil {
		return false, fmt.Errorf("cuda: cycle event: %w", err)
	}
	c.pending++
	return true, nil
}

// startCycle enqueues the first step's parameters: the verify of (next,
// the chain's tokens) at the cached length, after the chain (chainTokens),
// and the records' step counter from 0. The device is bound.
func (t *Target) startCycle(next int32, ch *headChain) error {
	c := &t.cyc
	toks := make([]int32, ch.k+1) // the chain's tokens are placeholders, replaced on the device
	toks[0] = next
	if _, err := t.prepare(model.Batch{Tokens: toks, Logits: model.LogitsAll}); err != nil {
		return err
	}
	if err := t.prepareCapture(); err != nil {
		return err
	}
	if err := cu.MemcpyHtoDAsync(t.step, t.hstep.p, int64(stepBytes), t.stream); err != nil {
		return fmt.Errorf("cuda: step parameters: %w", err)
	}
	if err := t.chainTokens(ch); err != nil {
		return err
	}
	ch.h.inflight = false // the target's stream waits for the chain; DropCycle synchronizes it
	if err := cu.MemsetD32Async(c.stepNo, 0, 1, t.stream); err != nil {
		return fmt.Errorf("cuda: cycle counter: %w", err)
	}
	if c.h != ch.h { // another head: the graphs that set up the last one's steps go
		for k, g := range t.graphs {
			if k.cycle != 0 {
				g.destroy()
				delete(t.graphs, k)
			}
		}
	}
	c.h, c.k, c.read = ch.h, ch.k, 0
	return nil
}

// WaitCycle implements spec.CycleVerifier.
func (t *Target) WaitCycle(ctx context.Context) (spec.CycleStep, error) {
	c := &t.cyc
	if c.pending == 0 {
		return spec.CycleStep{}, errors.New("cuda: no speculative cycle step pending")
	}
	s := &c.slots[c.oldest]
	unbind, err := t.dev.Bind()
	if err != nil {
		return spec.CycleStep{}, err
	}
	defer unbind()
	if err := s.eC.Synchronize(); err != nil {
		return spec.CycleStep{}, fmt.Errorf("cuda: speculative cycle step at %d: %w", t.n, err)
	}
	i := c.read % len(c.slots) // the device writes step n's record at ring[n & 1]
	rec := c.ring.ints()[i*cycleRec : (i+1)*cycleRec]
	acc, base, num := int(rec[0]), int(rec[1]), int(rec[2])
	if num != c.read || base != t.n || acc < 0 || acc > c.k {
		return spec.CycleStep{}, fmt.Errorf("cuda: speculative cycle record %d (base %d, %d accepted) where step %d at %d of k=%d was due", num, base, acc, c.read, t.n, c.k)
	}
	cs := spec.CycleStep{Base: base, IDs: slices.Clone(rec[3 : 4+acc]), Accepted: acc, Drafted: c.k}
	v, err := s.e0.Elapsed(s.eV)
	if err == nil {
		var d float64
		d, err = s.eV.Elapsed(s.eC)
		cs.Verify, cs.Draft = time.Duration(v*1e6), time.Duration(d*1e6)
	}
	if err != nil {
		return spec.CycleStep{}, fmt.Errorf("cuda: speculative cycle step's times: %w", err)
	}
	t.collectCapture(c.k+1, true, s.feats)
	c.oldest = (c.oldest + 1) % len(c.slots)
	c.pending--
	c.read++
	t.n = base + acc + 1
	return cs, nil
}

// DropCycle implements spec.CycleVerifier.
func (t *Target) DropCycle() error { return t.dropCycle() }

// dropCycle waits for the pending cycle steps and forgets them: the
// cache keeps the steps read (n). The device is bound or not.
func (t *Target) dropCycle() error {
	c := &t.cyc
	if c.pending == 0 {
		return nil
	}
	s := &c.slots[(c.oldest+c.pending-1)%len(c.slots)]
	c.oldest, c.pending = 0, 0
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	if err := s.eC.Synchronize(); err != nil {
		return fmt.Errorf("cuda: speculative cycle: %w", err)
	}
	return nil
}

// allocCycle allocates the cycle's buffers on first use. The device is
// bound.
func (t *Target) allocCycle() (err error) {
	c := &t.cyc
	if c.ringDev != 0 {
		return nil
	}
	defer func() {
		if err != nil {
			t.freeCycle()
			err = fmt.Errorf("cuda: speculative cycle buffers: %w", err)
		}
	}()
	if c.ring, err = allocMapped(4 * cycleRec * len(c.slots)); err != nil {
		return err
	}
	if c.ringDev, err = c.ring.devicePtr(); err != nil {
		return err
	}
	var p cu.DevicePtr
	if p, err = cu.MemAlloc(4 * (MaxTokens + 2)); err != nil {
		return err
	}
	t.bufs = append(t.bufs, p)
	c.vids, c.rowsDone, c.stepNo = p, p+4*MaxTokens, p+4*(MaxTokens+1)
	if err = cu.MemsetD32(p, 0, MaxTokens+2); err != nil {
		return err
	}
	for i := range c.slots {
		s := &c.slots[i]
		if s.feats, err = allocMapped(t.cfg.Layers * MaxTokens * t.cfg.Dim * 4); err != nil {
			return err
		}
		if s.featsDev, err = s.feats.devicePtr(); err != nil {
			return err
		}
		for _, e := range []*cu.Event{&s.e0, &s.eV, &s.eC} {
			if *e, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
				return err
			}
		}
	}
	return nil
}

// freeCycle releases the cycle's host buffers and events (its device
// buffer is one of t.bufs). The device is bound.
func (t *Target) freeCycle() {
	c := &t.cyc
	c.ring.free()
	for i := range c.slots {
		s := &c.slots[i]
		s.feats.free()
		for _, e := range []*cu.Event{&s.e0, &s.eV, &s.eC} {
			if *e != (cu.Event{}) {
				cu.DestroyEvent(e)
			}
		}
	}
	*c = cycleState{}
}

// acceptRows is the verify's argmax in the cycle (targetOps.Logits):
// argmax_accept over the rows, with the head's step parameters and the
// record's ring.
func (t *Target) acceptRows(rows int) error {
	c := &t.cyc
	if rows != c.k+1 || c.h == nil {
		return fmt.Errorf("cuda: a speculative cycle verify of %d rows for a chain of %d", rows, c.k)
	}
	return t.kernel("argmax", 0, "argmax_accept", [3]int{t.amBlocks(), rows, 1}, [3]int{256, 1, 1},
		ptr(c.vids), ptr(t.logits), i32(t.cfg.Vocab), ptr(t.step), ptr(t.amPart), ptr(t.amCnt), ptr(c.rowsDone),
		ptr(c.h.dstep(0)), ptr(c.h.acc), ptr(c.ringDev), ptr(c.stepNo), i32(c.k))
}

// cycleKey is the head the verify graph being enqueued hands its
// acceptance to (graphKey.cycle; 0 outside the cycle).
func (t *Target) cycleKey() uint64 {
	if !t.cyc.on || t.cyc.h == nil {
		return 0
	}
	return t.cyc.h.id
}

// cycleGraphKey names a head's cycle chain: k tokens, handed to the
// target's step parameters at dst, from features at capDev, which also go
// to host (a cycle slot's mapped buffer).
type cycleGraphKey struct {
	k                 int
	dst, capDev, host cu.DevicePtr
}

// enqueueCycleChain enqueues on s (the target's stream) the head's chain
// of a cycle step: the verify's features gathered from capDev (the
// target's capture buffer, T = k+1 rows a layer), its k+1 extended rows
// (step parameters set by argmax_accept), row acc's output moved to row k,
// and k draft tokens into dst (the target's tokens 1..k); the features
// also into host (a slot's mapped buffer, for the host's drafter). One
// graph per (k, dst, capDev, host), captured on s.
func (h *Head) enqueueCycleChain(s cu.Stream, k int, dst, capDev, host cu.DevicePtr) error {
	key := cycleGraphKey{k, dst, capDev, host}
	if h.cgraphs == nil {
		h.cgraphs = map[cycleGraphKey]*graph{}
	}
	out, ls := h.out, h.ls
	h.out, h.ls = dst, s
	defer func() { h.out, h.ls = out, ls }()
	return replay(s, h.cgraphs, key, func() error {
		T := k + 1
		c, a := h.cfg, h.cfg.AuxLayers
		if err := h.kernel("gather", 0, "gather_feats", [3]int{T, eagle3.NumAux, 1}, [3]int{256, 1, 1},
			ptr(h.feats), ptr(capDev), i32(T), i32(c.TargetDim), i32(a[0]), i32(a[1]), i32(a[2]), ptr(host)); err != nil {
			return err
		}
		if err := h.enqueueRows(T); err != nil {
			return err
		}
		last := h.res + cu.DevicePtr(4*int64(T-1)*int64(c.Dim))
		if err := h.kernel("copy_row", 0, "copy_row", [3]int{1, 1, 1}, [3]int{256, 1, 1},
			ptr(h.res), ptr(h.acc), i32(T-1), i32(c.Dim)); err != nil {
			return err
		}
		return h.enqueueDraftTokens(last, k)
	})
}
