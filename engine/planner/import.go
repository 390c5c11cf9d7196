package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"rigscope/engine/tp"
)

// GPUBackends are the allreduce backends of GPU ranks (allreduce-bench
// --device cuda), auto aside.
var GPUBackends = []string{"oneshot", "twoshot", "host", "nccl"}

// gpuExactTol is the largest max relative error of a GPU row taken as a
// measurement of an exact sum (allreduce-bench's own tolerance).
const gpuExactTol = 1e-5

// benchRow is one row of `rigscope allreduce-bench --json`.
type benchRow struct {
	Backend   string  `json:"backend"`
	Ranks     int     `json:"ranks"`
	Bytes     int64   `json:"bytes"`
	TimeUs    float64 `json:"time_us"`
	MaxRelErr float64 `json:"max_rel_err"` // -1: NaN in the output
}

// DeviceAuto is a device's auto table for one group size, as the device's
// allreduce-bench calibrated it.
type DeviceAuto struct {
	Device string `json:"device"`
	// Step says the table is the device step's own (what a run with
	// --allreduce auto picks from), not allreduce-bench's.
	Step  bool          `json:"step,omitempty"`
	Table *tp.AutoTable `json:"table"`
}

// BenchTable is an allreduce table read from allreduce-bench's JSON.
type BenchTable struct {
	Device string
	Points []AllReducePoint
	Auto   []DeviceAuto
	// Skipped says which rows were left out and why.
	Skipped []string
}

// ReadAllReduceBench reads the output of `rigscope allreduce-bench
// --json`: a list of rows for CPU ranks, or, with --device cuda, an object
// whose rows are GPU ranks' and whose groups carry auto's table per group
// size. Each row is one cell (backend, ranks, message bytes, mean time
// per call); auto's rows are left out (auto is predicted through its
// table), and so are rows of a GPU backend whose sum was not exact.
func ReadAllReduceBench(data []byte) (*BenchTable, error) {
	var rows []benchRow
	out := &BenchTable{Device: "cpu"}
	if err := json.Unmarshal(data, &rows); err != nil {
		var gpu struct {
			Rows   []benchRow `json:"rows"`
			Groups []struct {
				Ranks int           `json:"ranks"`
				Auto  *tp.AutoTable `json:"auto"`
			} `json:"groups"`
		}
		if err2 := json.Unmarshal(data, &gpu); err2 != nil || gpu.Rows == nil {
			return nil, fmt.Errorf("not allreduce-bench --json output (neither a list of rows nor an object with rows): %w", errors.Join(err, err2))
		}
		out.Device, rows = "cuda", gpu.Rows
		for _, g := range gpu.Groups {
			if g.Auto == nil {
				continue
			}
			if err := checkAuto(g.Auto, g.Ranks); err != nil {
				out.Skipped = append(out.Skipped, fmt.Sprintf("auto table for %d ranks: %v", g.Ranks, err))
				continue
			}
			out.Auto = append(out.Auto, DeviceAuto{Device: out.Device, Table: g.Auto})
		}
	}
	for i, r := range rows {
		if r.Backend == "auto" {
			continue
		}
		if err := checkRow(out.Device, r); err != nil {
			return nil, fmt.Errorf("row %d (%s, %d ranks, %d bytes): %w", i, r.Backend, r.Ranks, r.Bytes, err)
		}
		if out.Device != "cpu" && (r.MaxRelErr < 0 || r.MaxRelErr > gpuExactTol) {
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s, %d ranks, %d bytes: not an exact sum (max rel err %g)", r.Backend, r.Ranks, r.Bytes, r.MaxRelErr))
			continue
		}
		// One mean per cell: no spread to carry.
		out.Points = append(out.Points, AllReducePoint{Device: out.Device, Ranks: r.Ranks, Backend: r.Backend, Bytes: r.Bytes, Us: Exact(r.TimeUs)})
	}
	if len(out.Points) == 0 {
		return nil, fmt.Errorf("no usable rows (%d rows, auto's and inexact ones left out)", len(rows))
	}
	return out, nil
}

// checkRow refuses a row that cannot be a measurement on device.
func checkRow(device string, r benchRow) error {
	switch {
	case device == "cpu" && tp.CheckBackend(r.Backend) != nil:
		return fmt.Errorf("%q is not a CPU allreduce backend", r.Backend)
	case device != "cpu" && !slices.Contains(GPUBackends, r.Backend):
		return fmt.Errorf("%q is not a GPU allreduce backend (%v)", r.Backend, GPUBackends)
	case r.Ranks < 2 || r.Ranks > tp.MaxRanks:
		return fmt.Errorf("%d ranks: a group has 2 to %d", r.Ranks, tp.MaxRanks)
	case r.Bytes <= 0 || r.Bytes > 1<<40:
		return fmt.Errorf("a message of %d bytes", r.Bytes)
	case math.IsNaN(r.TimeUs) || math.IsInf(r.TimeUs, 0) || r.TimeUs <= 0:
		return fmt.Errorf("time %v us is not a measurement", r.TimeUs)
	}
	return nil
}

// checkAuto refuses an auto table that cannot pick: rules for another
// group size, none, or naming auto itself.
func checkAuto(t *tp.AutoTable, ranks int) error {
	switch {
	case t.Ranks != ranks || ranks < 2 || ranks > tp.MaxRanks:
		return fmt.Errorf("table for %d ranks in the group of %d", t.Ranks, ranks)
	case len(t.Rules) == 0:
		return errors.New("no rules")
	}
	for _, r := range t.Rules {
		if r.Backend == "" || r.Backend == "auto" {
			return fmt.Errorf("a rule names backend %q", r.Backend)
		}
	}
	return nil
}
