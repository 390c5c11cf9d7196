package allreduce

// GPU allreduce-bench pieces that need no GPU (and no cuda build tag): the
// backend list and its flag, the auto-vs-NCCL summary, the exactness check
// and cuda-allreduce's sizes. The auto table itself is engine/tp's
// (BuildAutoTable, from the cells measured in the run).

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"rigscope/engine/tp"
	"rigscope/gpu/cuda"
)

// gpuBackendNames are the backends of allreduce-bench --device cuda, in
// table order; auto picks among the others.
var gpuBackendNames = []string{"oneshot", "twoshot", "host", "nccl", "auto"}

// gpuAutoCandidates are the exact GPU backends auto chooses among.
var gpuAutoCandidates = []string{"oneshot", "twoshot", "host", "nccl"}

// gpuExactTol is the largest max relative error (vs the float64 sum) of a
// float32 sum counted as exact; a backend above it is excluded from auto and
// fails the run.
const gpuExactTol = 1e-5

// parseGPUBackends reads --backend for --device cuda: "all" or a list.
func parseGPUBackends(s string) ([]string, error) {
	if strings.TrimSpace(s) == "all" {
		return append([]string(nil), gpuBackendNames...), nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		name := strings.TrimSpace(f)
		ok := false
		for _, b := range gpuBackendNames {
			ok = ok || b == name
		}
		if !ok {
			return nil, fmt.Errorf("allreduce-bench: --backend %q: %q is not a GPU backend (have %s, or all)", s, name, strings.Join(gpuBackendNames, ", "))
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// autoNoise is how much slower than nccl a re-measured auto row may be and
// still count as not slower: when auto picked nccl itself, the two rows are
// two measurements of the same thing.
const autoNoise = 0.05

// autoVsNCCL compares the auto rows with the nccl rows of one group size:
// whether auto was at least as fast at every size, and its worst ratio at
// 16 KiB and below (the target there is at most half of NCCL's time). ""
// when there is nothing to compare.
func autoVsNCCL(rows []benchRow) string {
	nccl := map[int64]float64{}
	for _, r := range rows {
		if r.Backend == "nccl" {
			nccl[r.Bytes] = r.TimeUs
		}
	}
	var slower []string
	worstSmall, haveSmall, compared := 0.0, false, 0
	for _, r := range rows {
		n, ok := nccl[r.Bytes]
		if r.Backend != "auto" || !ok || n <= 0 {
			continue
		}
		compared++
		ratio := r.TimeUs / n
		if ratio > 1+autoNoise {
			slower = append(slower, fmt.Sprintf("%s (%.2fx)", tp.FormatBytes(r.Bytes), ratio))
		}
		if r.Bytes <= 16<<10 {
			haveSmall = true
			worstSmall = max(worstSmall, ratio)
		}
	}
	if compared == 0 {
		return ""
	}
	s := fmt.Sprintf("auto vs nccl over %d sizes: ", compared)
	if len(slower) == 0 {
		s += fmt.Sprintf("never slower (within %.0f%% measurement noise)", 100*autoNoise)
	} else {
		s += "slower at " + strings.Join(slower, ", ")
	}
	if haveSmall {
		verdict := "met"
		if worstSmall > 0.5 {
			verdict = "NOT met"
		}
		s += fmt.Sprintf("; at 16K and below auto takes at most %.2fx nccl's time (target <= 0.5x: %s)", worstSmall, verdict)
	}
	return s
}

// inexactRows lists rows whose sum was not exact (they fail the GPU bench).
func inexactRows(rows []benchRow) []string {
	var out []string
	for _, r := range rows {
		if math.IsNaN(r.MaxRelErr) || r.MaxRelErr < 0 || r.MaxRelErr > gpuExactTol {
			out = append(out, fmt.Sprintf("%s, %d ranks, %s: max rel err %.2e", r.Backend, r.Ranks, tp.FormatBytes(r.Bytes), r.MaxRelErr))
		}
	}
	return out
}

// cudaUnavailable is the error of --device cuda in a build without the
// cuda tag.
const cudaUnavailable = "allreduce-bench: --device cuda: this rigscope was built without CUDA support; rebuild with the cuda build tag (go build -tags 'headless cuda' ., needs cuda.h from Debian non-free nvidia-cuda-dev) and run it on a GPU machine; see bench/cuda/README.md and bench/cuda/allreduce.sh"

// gpuBenchConfig is what allreduce-bench --device cuda runs.
type gpuBenchConfig struct {
	Backends []string
	Ranks    []int
	Sizes    []int64
	Iters    int
	JSON     bool
	ShareGPU bool // put every rank on GPU 0 even when there are enough GPUs
	Latency  bool // print every latency histogram summary
	// NCCLProtos adds an nccl row per protocol (NCCL_PROTO for that
	// group's communicators); NCCLAlgo sets NCCL_ALGO for every nccl group.
	NCCLProtos []string
	NCCLAlgo   string
}

// ncclVariants are the extra nccl groups of --nccl-protos, by row name.
func (c gpuBenchConfig) ncclVariants() []cuda.NCCLSettings {
	var out []cuda.NCCLSettings
	for _, p := range c.NCCLProtos {
		out = append(out, cuda.NCCLSettings{Proto: p, Algo: c.NCCLAlgo})
	}
	return out
}

// cudaAllReduceSizes is the --sizes list (bytes) for float counts 1, 4,
// 16, ... up to maxN, maxN and 1000003 when it fits.
func cudaAllReduceSizes(maxN int) (string, error) {
	if maxN < 1 || maxN > 1<<30 {
		return "", fmt.Errorf("cuda-allreduce: --max %d: want 1 to %d floats", maxN, 1<<30)
	}
	set := map[int]bool{maxN: true}
	for n := 1; n <= maxN; n *= 4 {
		set[n] = true
	}
	if 1000003 <= maxN {
		set[1000003] = true
	}
	var ns []int
	for n := range set {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(4 * n)
	}
	return strings.Join(parts, ","), nil
}
