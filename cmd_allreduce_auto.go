package main

// GPU allreduce-bench pieces that need no GPU (and no cuda build tag): the
// backend list and its flag, the auto backend's per-size pick from the
// calibration measured in the same run, and the auto-vs-NCCL summary.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"rigscope/engine/tp"
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

// autoPoint is one measured (backend, size) cell of the calibration.
type autoPoint struct {
	Backend   string
	Bytes     int64
	TimeUs    float64
	MaxRelErr float64
}

// exact says the point's backend summed within gpuExactTol.
func (p autoPoint) exact() bool {
	return !math.IsNaN(p.MaxRelErr) && p.MaxRelErr <= gpuExactTol && p.TimeUs > 0 && !math.IsInf(p.TimeUs, 0)
}

// pickAt is the fastest exact backend among pts at this size ("" when none
// was measured or none was exact). Ties go to the earlier candidate.
func pickAt(pts []autoPoint, bytes int64) string {
	best, bestT := "", math.Inf(1)
	for _, c := range gpuAutoCandidates {
		for _, p := range pts {
			if p.Bytes == bytes && p.Backend == c && p.exact() && p.TimeUs < bestT {
				best, bestT = c, p.TimeUs
			}
		}
	}
	return best
}

// buildAutoTable turns the calibration into auto's table: for every
// measured size, the fastest exact backend there (no hysteresis: auto is
// meant never to be slower than the best backend it measured), with runs of
// the same winner merged into one rule. Sizes between calibrated ones use
// the next larger size's winner; larger ones the last.
func buildAutoTable(ranks int, pts []autoPoint) (*tp.AutoTable, error) {
	var sizes []int64
	seen := map[int64]bool{}
	for _, p := range pts {
		if !seen[p.Bytes] {
			seen[p.Bytes] = true
			sizes = append(sizes, p.Bytes)
		}
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	t := &tp.AutoTable{Ranks: ranks, Source: "measured", Note: "calibrated in this run"}
	for _, s := range sizes {
		b := pickAt(pts, s)
		if b == "" {
			continue
		}
		for _, p := range pts {
			if p.Bytes == s && p.Backend != "auto" {
				t.Points = append(t.Points, tp.CalibPoint{Bytes: s, Backend: p.Backend, TimeUs: p.TimeUs})
			}
		}
		if n := len(t.Rules); n > 0 && t.Rules[n-1].Backend == b {
			t.Rules[n-1].MaxBytes = s
		} else {
			t.Rules = append(t.Rules, tp.AutoRule{MaxBytes: s, Backend: b})
		}
	}
	if len(t.Rules) == 0 {
		return nil, fmt.Errorf("allreduce-bench: auto, %d ranks: no backend was both available and exact at any size", ranks)
	}
	return t, nil
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
