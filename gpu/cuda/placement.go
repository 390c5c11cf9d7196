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

// checkStepBackend refuses, with the reason, a backend the ranks of one
// GPU cannot join with.
func checkStepBackend(ranks int, backend string) error {
	switch backend {
	case "", "oneshot", "twoshot", "host", "auto":
		return nil
	case "nccl":
		if ranks <= 1 {
			return nil
		}
		return fmt.Errorf("cuda: allreduce nccl unavailable here: the %d ranks share GPU 0 and NCCL refuses two ranks on one GPU (ncclInvalidUsage: duplicate GPU); use oneshot, twoshot, host or auto", ranks)
	}
	if tp.CheckBackend(backend) == nil {
		return fmt.Errorf("cuda: allreduce %q is a CPU backend; GPU ranks join with %v", backend, StepBackends)
	}
	return fmt.Errorf("cuda: unknown allreduce backend %q (GPU ranks: %v)", backend, StepBackends)
}

// placeRanks checks a --gpus list against the n visible GPUs and returns
// the GPU the ranks run on. Today the ranks of one target share one GPU:
// no list (GPU 0), or a list of one GPU. One rank per GPU (a list of tp
// distinct GPUs) is refused by name until it is implemented; the GPU
// allreduce backends across GPUs are measured by allreduce-bench.
func placeRanks(tp int, gpus []int, n int) (int, error) {
	if n < 1 {
		return 0, errors.New("cuda: no CUDA device found")
	}
	seen := map[int]bool{}
	for _, g := range gpus {
		switch {
		case g < 0 || g >= n:
			return 0, fmt.Errorf("cuda: --gpus names GPU %d; this machine has %d GPU(s), numbered 0 to %d (rigscope gpus lists them)", g, n, n-1)
		case seen[g]:
			return 0, fmt.Errorf("cuda: --gpus names GPU %d twice; list each GPU once (one per rank, or one for all ranks to share)", g)
		}
		seen[g] = true
	}
	switch {
	case len(gpus) == 0:
		return 0, nil
	case len(gpus) == 1:
		return gpus[0], nil
	case len(gpus) != tp:
		return 0, fmt.Errorf("cuda: --gpus lists %d GPUs for %d tensor-parallel ranks; list one GPU per rank, or one GPU for all ranks to share", len(gpus), tp)
	}
	return 0, fmt.Errorf("cuda: one rank per GPU (--gpus %s) is not implemented yet: the ranks of a GPU target share one GPU (--gpus %d); allreduce-bench --device cuda measures the backends across GPUs", joinInts(gpus), gpus[0])
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
	}
	return 0, 0
}

// StepBackendInfo describes the step backends for the run controls (the
// panel's allreduce choice with --device cuda).
func StepBackendInfo() []tp.BackendInfo {
	return []tp.BackendInfo{
		{Name: "oneshot", Available: true, Exact: true, Summary: "every rank reads every rank's partial sums and adds them: one kernel per rank"},
		{Name: "twoshot", Available: true, Exact: true, Summary: "reduce-scatter by segments, then all-gather: two kernels per rank"},
		{Name: "host", Available: true, Exact: true, Summary: "staged through pinned host memory: each rank copies its partial sums to the host and reads every rank's copy (GPUs without peer access)"},
		{Name: "auto", Available: true, Exact: true, Summary: "picks oneshot, twoshot or host per message size from a table measured on this GPU"},
		{Name: "nccl", Reason: "NCCL refuses two ranks on one GPU, and the ranks of a GPU target share one GPU (one rank per GPU is not implemented yet)", Summary: "NVIDIA NCCL"},
	}
}

// NCCLSettings are the NCCL choices of one communicator: protocol and
// algorithm lists as NCCL_PROTO and NCCL_ALGO take them (empty: NCCL's
// own choice). They are applied when the communicator is created, so a
// change takes a new communicator (a new group); NCCL_BUFFSIZE and the
// channel counts are read once per process by NCCL and are left to its
// environment.
type NCCLSettings struct {
	Proto string `json:"proto,omitempty"`
	Algo  string `json:"algo,omitempty"`
}

// ncclProtos and ncclAlgos are the names NCCL 2.2x accepts.
var (
	ncclProtos = []string{"LL", "LL128", "Simple"}
	ncclAlgos  = []string{"Ring", "Tree", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"}
)

// Check refuses a name NCCL does not know before NCCL sees it (NCCL would
// warn and ignore it), with the names it takes; a leading ^ excludes, as
// in NCCL's own syntax.
func (s NCCLSettings) Check() error {
	check := func(what, list string, names []string) error {
		if list == "" {
			return nil
		}
		for _, f := range strings.Split(strings.TrimPrefix(list, "^"), ",") {
			ok := false
			for _, n := range names {
				ok = ok || strings.EqualFold(strings.TrimSpace(f), n)
			}
			if !ok {
				return fmt.Errorf("cuda: nccl %s %q: %q is not one NCCL knows (have %s; a leading ^ excludes)", what, list, f, strings.Join(names, ", "))
			}
		}
		return nil
	}
	if err := check("protocol", s.Proto, ncclProtos); err != nil {
		return err
	}
	return check("algorithm", s.Algo, ncclAlgos)
}

// String names the settings in a table ("nccl", "nccl(LL)", "nccl(Tree,LL128)").
func (s NCCLSettings) String() string {
	var parts []string
	for _, p := range []string{s.Algo, s.Proto} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "nccl"
	}
	return "nccl(" + strings.Join(parts, ",") + ")"
}
