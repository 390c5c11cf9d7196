package cuda

// Where a Target's ranks run and how they join, decided on the host (no
// CUDA needed, so the checks are tested everywhere).

import (
	"errors"
	"fmt"
	"strings"

	"rigscope/engine/tp"
)

// StepBackends are the allreduce backends a Target's ranks can join with
// inside a forward step, ranks sharing one GPU (nccl is refused there:
// NCCL refuses two ranks on one GPU). auto picks one of the first three
// per message size from a table measured on this GPU (calibrate.go).
var StepBackends = []string{"oneshot", "twoshot", "host", "auto"}

// rankPlacement is where a target's ranks run: gpus[r] is rank r's GPU
// ordinal (all the same when the ranks share one GPU); peer is the P2P
// self-test's verdict across distinct GPUs ("" = passed, or the ranks
// share one GPU; else the failing pair and what failed).
type rankPlacement struct {
	gpus []int
	peer string
}

// distinct says whether the ranks run on more than one GPU.
func (p rankPlacement) distinct() bool {
	for _, g := range p.gpus {
		if g != p.gpus[0] {
			return true
		}
	}
	return false
}

// checkStepBackend refuses, with the reason, a backend the ranks placed by
// p cannot join with inside a step.
func checkStepBackend(p rankPlacement, backend string) error {
	ranks := len(p.gpus)
	switch backend {
	case "", "oneshot", "twoshot", "auto":
		if p.distinct() && p.peer != "" && ranks > 1 {
			return fmt.Errorf("cuda: allreduce %s unavailable: it reads the peers' partial sums through peer memory and the P2P self-test between GPUs %s failed (%s); use host (staged through pinned host memory)", nameOr(backend, "auto"), joinInts(p.gpus), p.peer)
		}
		return nil
	case "host":
		return nil
	case "nccl":
		if ranks <= 1 {
			return nil
		}
		if p.distinct() {
			for i, g := range p.gpus {
				for _, h := range p.gpus[:i] {
					if g == h {
						return fmt.Errorf("cuda: allreduce nccl unavailable: GPUs %s place two ranks on GPU %d and NCCL refuses two ranks on one GPU (ncclInvalidUsage: duplicate GPU)", joinInts(p.gpus), g)
					}
				}
			}
			return nil
		}
		return fmt.Errorf("cuda: allreduce nccl unavailable here: the %d ranks share GPU %d and NCCL refuses two ranks on one GPU (ncclInvalidUsage: duplicate GPU); use oneshot, twoshot, host or auto", ranks, p.gpus[0])
	}
	if tp.CheckBackend(backend) == nil {
		return fmt.Errorf("cuda: allreduce %q is a CPU backend; GPU ranks join with %v", backend, StepBackends)
	}
	return fmt.Errorf("cuda: unknown allreduce backend %q (GPU ranks: %v)", backend, StepBackends)
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// placeRanks checks a --gpus list against the n visible GPUs and returns
// each rank's GPU: no list puts rank i on GPU i when at least tp GPUs are
// visible, else every rank on GPU 0; a list of one GPU puts every rank
// there (sharing it); a list of tp distinct GPUs puts rank i on gpus[i].
func placeRanks(tp int, gpus []int, n int) ([]int, error) {
	if n < 1 {
		return nil, errors.New("cuda: no CUDA device found")
	}
	seen := map[int]bool{}
	for _, g := range gpus {
		switch {
		case g < 0 || g >= n:
			return nil, fmt.Errorf("cuda: --gpus names GPU %d; this machine has %d GPU(s), numbered 0 to %d (rigscope gpus lists them)", g, n, n-1)
		case seen[g]:
			return nil, fmt.Errorf("cuda: --gpus names GPU %d twice; list each GPU once (one per rank, or one for all ranks to share)", g)
		}
		seen[g] = true
	}
	out := make([]int, tp)
	switch {
	case len(gpus) == 0:
		if n >= tp {
			for r := range out {
				out[r] = r
			}
		}
	case len(gpus) == 1:
		for r := range out {
			out[r] = gpus[0]
		}
	case len(gpus) != tp:
		return nil, fmt.Errorf("cuda: --gpus lists %d GPUs for %d tensor-parallel ranks; list one GPU per rank, or one GPU for all ranks to share", len(gpus), tp)
	default:
		copy(out, gpus)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// callBytes is what rank r of R sends and receives in one call of n floats
// on backend b, counted as on CPU ranks: oneshot reads every peer's
// partials (and is read by every peer); twoshot reads the peers' parts of
// its segment, then the other segments' sums; host copies its partials to
// the host and reads every rank's copy.
func callBytes(b string, r, R, n int) (sent, recv int64) {
	switch b {
	case "oneshot":
		return int64(4 * (R - 1) * n), int64(4 * (R - 1) * n)
	case "twoshot":
		seg := n*(r+1)/R - n*r/R
		v := int64(4 * ((n - seg) + (R-1)*seg))
		return v, v
	case "host":
		return int64(4 * n), int64(4 * R * n)
	case "nccl": // a ring allreduce: reduce-scatter and all-gather, (R-1)/R of the message each
		v := int64(4 * 2 * (R - 1) * n / R)
		return v, v
	}
	return 0, 0
}

// stepNCCLWhyNot is why a step cannot join through nccl here ("" when it
// can: libnccl loads and two or more GPUs are visible); the cuda build
// sets it (stepnccl.go).
var stepNCCLWhyNot = func() string { return "NCCL needs a -tags cuda build" }

// StepBackendInfo describes the step backends for the run controls (the
// panel's allreduce choice with --device cuda).
func StepBackendInfo() []tp.BackendInfo {
	ncclWhyNot := stepNCCLWhyNot()
	return []tp.BackendInfo{
		{Name: "oneshot", Available: true, Exact: true, Summary: "every rank reads every rank's partial sums and adds them: one kernel per rank"},
		{Name: "twoshot", Available: true, Exact: true, Summary: "reduce-scatter by segments, then all-gather: two kernels per rank"},
		{Name: "host", Available: true, Exact: true, Summary: "staged through pinned host memory: each rank copies its partial sums to the host and reads every rank's copy (GPUs without peer access)"},
		{Name: "auto", Available: true, Exact: true, Summary: "picks oneshot, twoshot or host per message size from a table measured on this GPU"},
		{Name: "nccl", Available: ncclWhyNot == "", Reason: ncclWhyNot, Summary: "NVIDIA NCCL (libnccl.so.2 loaded at run time), ranks on distinct GPUs only (NCCL refuses two ranks on one GPU); sums in its own order, so not bitwise TP 1's"},
	}
}
