package planner

import (
	"context"
	"strings"
	"testing"

	"rigscope/engine"
	"rigscope/engine/tp"
)

// gpuBenchJSON is the shape of `allreduce-bench --device cuda --json`
// (internal/cli/allreduce's gpuBenchOut): rows, and per group its auto
// table; a NaN max error is written as -1.
const gpuBenchJSON = `{"rows": [
 {"backend": "oneshot", "ranks": 2, "bytes": 1024, "count": 256, "type": "float", "time_us": 9.5, "algbw_GBps": 0.1, "busbw_GBps": 0.1, "max_rel_err": 0},
 {"backend": "oneshot", "ranks": 2, "bytes": 8192, "count": 2048, "type": "float", "time_us": 11.0, "max_rel_err": 0},
 {"backend": "nccl", "ranks": 2, "bytes": 1024, "count": 256, "type": "float", "time_us": 21.0, "max_rel_err": 0},
 {"backend": "nccl", "ranks": 2, "bytes": 8192, "count": 2048, "type": "float", "time_us": 24.0, "max_rel_err": 0},
 {"backend": "host", "ranks": 2, "bytes": 1024, "count": 256, "type": "float", "time_us": 60.0, "max_rel_err": -1},
 {"backend": "auto", "ranks": 2, "bytes": 1024, "count": 256, "type": "float", "time_us": 9.6, "max_rel_err": 0, "picked": "oneshot"}
],
"groups": [{"ranks": 2, "gpus": [0, 0], "shared": true,
  "auto": {"ranks": 2, "rules": [{"max_bytes": 4096, "backend": "oneshot"}, {"max_bytes": 1099511627776, "backend": "nccl"}], "points": [], "measured_at": "2026-12-02T10:00:00Z", "took_s": 1.5}}],
"latency": {}}`

func TestReadAllReduceBench(t *testing.T) {
	bt, err := ReadAllReduceBench([]byte(gpuBenchJSON))
	if err != nil {
		t.Fatal(err)
	}
	if bt.Device != "cuda" || len(bt.Points) != 4 || len(bt.Auto) != 1 || len(bt.Skipped) != 1 || !strings.Contains(bt.Skipped[0], "host") {
		t.Fatalf("read %+v", bt)
	}
	cpu, err := ReadAllReduceBench([]byte(`[{"backend": "ring", "ranks": 4, "bytes": 2048, "time_us": 5.5, "max_rel_err": 0},
		{"backend": "compressed", "ranks": 4, "bytes": 2048, "time_us": 9, "max_rel_err": 0.004}]`))
	if err != nil || cpu.Device != "cpu" || len(cpu.Points) != 2 {
		t.Fatalf("CPU rows: %+v, %v", cpu, err)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"not json", `{rows`, "not allreduce-bench --json output"},
		{"no rows", `{"groups": []}`, "not allreduce-bench --json output"},
		{"gpu name on cpu", `[{"backend": "nccl", "ranks": 2, "bytes": 8, "time_us": 1}]`, `"nccl" is not a CPU allreduce backend`},
		{"cpu name on gpu", `{"rows": [{"backend": "ring", "ranks": 2, "bytes": 8, "time_us": 1}]}`, `"ring" is not a GPU allreduce backend`},
		{"one rank", `[{"backend": "ring", "ranks": 1, "bytes": 8, "time_us": 1}]`, "1 ranks"},
		{"zero time", `[{"backend": "ring", "ranks": 2, "bytes": 8, "time_us": 0}]`, "not a measurement"},
		{"auto only", `[{"backend": "auto", "ranks": 2, "bytes": 8, "time_us": 1}]`, "no usable rows"},
	} {
		if _, err := ReadAllReduceBench([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestGPUPrediction: on GPU ranks the planner predicts from the device's
// allreduce table (allreduce-bench --device cuda) and the forward timed
// on the device with one backend; a backend or size the table lacks is
// named, with the command that measures it.
func TestGPUPrediction(t *testing.T) {
	s := seedsShape()
	s.Layers, s.Hidden = 2, 512 // 4 calls of 1 KiB a token on a bf16 wire
	bt, err := ReadAllReduceBench([]byte(gpuBenchJSON))
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Shape: s, AllReduce: &AllReduceTable{Points: bt.Points}, Compute: &ComputeTable{}, Accept: &Book{}}
	for _, n := range []int{1, 8} {
		in.Compute.Points = append(in.Compute.Points, ComputePoint{Model: s.Key, Device: "cuda", TP: 2, Backend: "nccl", Tokens: n, WallUs: Exact(1000)})
	}
	p := Predict(in, Config{Device: "cuda", TP: 2, Backend: "oneshot", Drafter: "none"})
	// 1000 us with 4 nccl calls of 1 KiB (21 us), swapped for oneshot's (9.5 us).
	if !p.OK() || !near(p.DecodeStepMs.V*1e3, 1000-4*21+4*9.5, 1e-9) || !strings.Contains(p.Basis, "swapped for oneshot's") {
		t.Fatalf("oneshot on GPU: %+v (%s), missing %v", p.DecodeStepMs, p.Basis, p.Missing)
	}
	in.Auto = map[int]*tp.AutoTable{}
	for _, a := range bt.Auto {
		in.Auto[a.Table.Ranks] = a.Table
	}
	if p := Predict(in, Config{Device: "cuda", TP: 2, Backend: "auto", Drafter: "none"}); !p.OK() || !strings.Contains(p.Basis, "oneshot") {
		t.Errorf("auto on GPU (oneshot at 1 KiB per its table): %+v %s %v", p.DecodeStepMs, p.Basis, p.Missing)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Device: "cuda", TP: 2, Backend: "twoshot", Drafter: "none"}, "no timed forward of a 1-token batch at TP 2 with twoshot on cuda (nor an allreduce table of twoshot"},
		{Config{Device: "cuda", TP: 2, Backend: "twoshot", Drafter: "none"}, "rigscope allreduce-bench --device cuda --ranks 2 --json"},
		{Config{Device: "cuda", TP: 4, Backend: "nccl", Drafter: "none"}, "no timed forward of a 1-token batch at TP 4 with nccl on cuda"},
		{Config{Device: "cuda", TP: 4, Backend: "auto", Drafter: "none"}, "no auto table for 4 ranks on cuda"},
	} {
		p := Predict(in, tc.cfg)
		var words []string
		for _, m := range p.Missing {
			words = append(words, m.String())
		}
		if p.OK() || !strings.Contains(strings.Join(words, "; "), tc.want) {
			t.Errorf("Predict(%s): missing %q, want it to name %q", tc.cfg, words, tc.want)
		}
	}
	m := Missing{Kind: "allreduce", Device: "cuda", TP: 8, Backend: "nccl", Bytes: 57344}
	if !strings.Contains(m.String(), "allreduce-bench --device cuda --ranks 8 --backend nccl --sizes 57344 --json") {
		t.Errorf("missing GPU cell: %s", m)
	}
}

// TestImportIntoSession: a device's table goes into the cache with its
// auto tables, and a later session on that device reads both back; a
// table of another device is refused by name.
func TestImportIntoSession(t *testing.T) {
	ctx := context.Background()
	e, err := engine.Open(ctx, "synthetic:tiny", engine.Options{CtxLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dir := t.TempDir()
	bt, err := ReadAllReduceBench([]byte(gpuBenchJSON))
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := NewSession(e, "cpu", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cpu.ImportAllReduce(bt); err == nil || !strings.Contains(err.Error(), "the allreduce table is of cuda ranks and the planner is predicting cpu") {
		t.Errorf("cuda table into a cpu session: %v", err)
	}
	s, err := NewSession(e, "cuda", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ImportAllReduce(bt); err != nil {
		t.Fatal(err)
	}
	again, err := NewSession(e, "cuda", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(again.cache.AllReduce.Points); n != 4 || again.in.Auto[2] == nil || again.in.Auto[2].Pick(1024) != "oneshot" {
		t.Errorf("read back %d points, auto %+v", n, again.in.Auto[2])
	}
	if m, _ := again.Notes(); !strings.HasPrefix(m, "from ") {
		t.Errorf("note %q", m)
	}
}
