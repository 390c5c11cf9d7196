//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/tp"
)

// The nccl backend inside a step, for ranks on distinct GPUs (NCCL refuses
// two ranks on one GPU: checkStepBackend). One communicator per GPU, made
// with the run's NCCL settings (protocol, algorithm, channels, buffer
// size: ncclCreate) when nccl is first chosen, kept between runs while the
// settings and GPUs stay (a backend swap away and back keeps them) and
// made again, the step's graphs dropped, when the settings change; the
// ranks changing makes a new Target. A call is three phases
// on the ranks' streams: a kernel stamps its start (ars_put of 0
// elements), ncclAllReduce sums every rank's partials in place (all ranks
// in one ncclGroupStart/End: one thread drives every GPU), and ars_add
// with the rank's own (summed) partials as its only input adds them to x
// and stamps the end. NCCL sums in its own order, so nccl is not bitwise
// TP 1's (the other backends are). Unverified: it cannot run on one GPU.

// stepNCCL makes or keeps the communicators for settings s (ranks on
// distinct GPUs) and says whether it made them.
func (t *Target) stepNCCL(s NCCLSettings) (bool, error) {
	created, err := t.comm.nccl.ensure(driverNCCL{}, t.place.gpus, s)
	if e := cu.SetCurrentContext(t.dev.ctx); e != nil && err == nil { // NCCL makes its own contexts current
		err = fmt.Errorf("cuda: after making the nccl communicators: %w", e)
	}
	if err != nil {
		return false, err // names the GPUs and the settings
	}
	return created, nil
}

// NCCLUse is what the run's nccl communicators were (nil when the run's
// backend is not nccl).
func (t *Target) NCCLUse() *tp.NCCLUse {
	if t.comm == nil {
		return nil
	}
	return t.comm.ncclUse
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
	err = ncclAllReduceAll(c.nccl.comms, parts, streams, n)
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
