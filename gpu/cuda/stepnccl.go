//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"
)

// The nccl backend inside a step, for ranks on distinct GPUs (NCCL refuses
// two ranks on one GPU: checkStepBackend). One communicator per GPU, made
// once per target with ncclCommInitAll when nccl is first chosen and kept
// between runs (a backend swap never remakes it). A call is three phases
// on the ranks' streams: a kernel stamps its start (ars_put of 0
// elements), ncclAllReduce sums every rank's partials in place (all ranks
// in one ncclGroupStart/End: one thread drives every GPU), and ars_add
// with the rank's own (summed) partials as its only input adds them to x
// and stamps the end. NCCL sums in its own order, so nccl is not bitwise
// TP 1's (the other backends are). Unverified: it cannot run on one GPU.

// stepNCCL makes the communicators (ranks on distinct GPUs), once.
func (t *Target) stepNCCL() error {
	c := t.comm
	if c.comms != nil {
		return nil
	}
	comms, err := ncclInitAll(t.place.gpus)
	if err != nil {
		return fmt.Errorf("cuda: allreduce nccl on GPUs %s: %w", joinInts(t.place.gpus), err)
	}
	if e := cu.SetCurrentContext(t.dev.ctx); e != nil { // NCCL may have made another context current
		ncclDestroy(comms)
		return fmt.Errorf("cuda: after ncclCommInitAll: %w", e)
	}
	c.comms = comms
	return nil
}

// ncclAllReduceAdd is allReduceAdd's nccl call.
func (t *Target) ncclAllReduceAdd(T, call int) error {
	c, R := t.comm, len(t.ranks)
	n := T * t.cfg.Dim
	block := [3]int{256, 1, 1}
	err := t.onRanks(func(rk *rankState) error {
		t0, _, _ := c.stamp(call, rk.r, R)
		return t.kernel("allreduce", 0, "ars_put", [3]int{1, 1, 1}, block, 0, 0, i64(0), ptr(t0))
	})
	if err != nil {
		return err
	}
	if err := t.fork.Record(t.stream); err != nil {
		return fmt.Errorf("cuda: fork: %w", err)
	}
	parts := make([]cu.DevicePtr, R)
	streams := make([]cu.Stream, R)
	for r, rk := range t.ranks {
		parts[r], streams[r] = rk.part, rk.stream
		if err := t.in(rk.rd, func() error { return rk.stream.Wait(t.fork, 0) }); err != nil {
			return fmt.Errorf("cuda: rank %d waits for the fork: %w", r, err)
		}
	}
	err = ncclAllReduceAll(c.comms, parts, streams, n)
	if e := cu.SetCurrentContext(t.dev.ctx); e != nil && err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("cuda: allreduce nccl of %d floats: %w", n, err)
	}
	for r, rk := range t.ranks {
		err := t.in(rk.rd, func() error { return rk.done.Record(rk.stream) })
		if err == nil {
			err = t.stream.Wait(rk.done, 0)
		}
		if err != nil {
			return fmt.Errorf("cuda: join rank %d after nccl: %w", r, err)
		}
	}
	return t.onRanks(func(rk *rankState) error {
		_, t1, cnt := c.stamp(call, rk.r, R)
		return t.kernel("allreduce", int64(4*n), "ars_add", arGrid(rk.rd.dev.SMs, n), block,
			ptr(rk.x), ptr(c.tabs[rk.r].selfTab), i32(1), i64(n), 0, ptr(t1), ptr(cnt))
	})
}

func init() {
	stepNCCLWhyNot = func() string {
		if _, err := NCCLVersion(); err != nil {
			return err.Error()
		}
		n, err := Count()
		if err != nil {
			return err.Error()
		}
		if n < 2 {
			return fmt.Sprintf("%d GPU visible: the ranks share it and NCCL refuses two ranks on one GPU (one rank per GPU needs as many GPUs as ranks)", n)
		}
		return ""
	}
}
