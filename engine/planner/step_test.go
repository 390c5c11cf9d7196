package planner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"rigscope/engine"
	"rigscope/engine/tp"
	"rigscope/internal/fakegpu"
)

// TestDeviceStepTable: on a device the planner takes what the device's
// step uses: auto resolved per message size through the step's own table
// (read through the engine, once a session), every step backend's time
// per call from that table, the step's float32 wire, and each backend's
// forward timed on the device. Table-driven over where auto switches.
func TestDeviceStepTable(t *testing.T) {
	ctx := context.Background()
	// synthetic:tiny: 2 layers (4 calls a forward), hidden 64: 256 bytes a
	// token on the step's wire.
	for _, tc := range []struct {
		name     string
		upTo     int64
		autoPick []string // what auto's forward is timed as, 1 and 3 tokens
	}{
		{"oneshot below 512 B", 512, []string{"oneshot", "twoshot"}},
		{"oneshot everywhere", 1 << 20, []string{"oneshot", "oneshot"}},
		{"twoshot everywhere", 1, []string{"twoshot", "twoshot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "fakegpu-planner-" + strings.ReplaceAll(tc.name, " ", "-")
			d, err := fakegpu.Register(name, map[string]float64{"oneshot": 20, "twoshot": 60, "host": 400}, tc.upTo)
			if err != nil {
				t.Fatal(err)
			}
			e, err := engine.Open(ctx, "synthetic:tiny", engine.Options{CtxLen: 512, Device: name})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			s, err := NewSession(e, name, t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Shape().MessageBytes(1); got != 4*64 {
				t.Errorf("a token on the device's wire: %d bytes, want 4 x 64 (the step sums float32)", got)
			}
			grid := Grid{TP: []int{1, 2}, Backends: []string{"oneshot", "twoshot", "host", "auto"}, Drafters: []string{"none", "ngram"}, K: []int{2}}
			if p, _ := s.Plan(ctx, grid); p[len(p)-1].OK() || !strings.Contains(p[len(p)-1].Missing[0].String(), "plan --calibrate reads the "+name+" step's own") {
				t.Errorf("auto before measuring: %+v", p[len(p)-1].Missing)
			}
			var preds []Prediction
			for range 2 {
				if preds, err = s.Measure(ctx, grid, Calibration{Reps: 2}); err != nil {
					t.Fatal(err)
				}
			}
			byCfg := map[string]Prediction{}
			for _, p := range preds {
				if !p.OK() {
					t.Fatalf("%s: missing %v, unfit %q", p.Config, p.Missing, p.Unfit)
				}
				byCfg[p.Config.Backend+"/"+p.Config.Drafter] = p
			}
			if _, _, tables := d.Seen(); tables != 1 {
				t.Errorf("the step's table was asked for %d times in a session, want once", tables)
			}
			a := byCfg["auto/none"]
			if !strings.Contains(a.Basis, "forward timed with "+tc.autoPick[0]) {
				t.Errorf("auto at 1 token: basis %q, want the forward timed as %s (the step's pick)", a.Basis, tc.autoPick[0])
			}
			// ngram k=2 verifies 3 tokens: 768 bytes a call.
			if got := s.in.Auto[2].Pick(s.Shape().MessageBytes(3)); got != tc.autoPick[1] {
				t.Errorf("auto at 3 tokens picks %s, want %s", got, tc.autoPick[1])
			}
			for _, b := range fakegpu.Backends {
				for _, n := range []int{1, 3, fakegpu.MaxTokens} {
					us, miss := s.in.AllReduce.Lookup(name, 2, b, s.Shape().MessageBytes(n))
					if miss != nil || us.V != map[string]float64{"oneshot": 20, "twoshot": 60, "host": 400}[b] {
						t.Errorf("%s at %d tokens from the step's table: %+v %v", b, n, us, miss)
					}
				}
			}
			// host spends 4 x 400 us a forward in allreduce, oneshot 4 x 20:
			// timed on the device, the order shows.
			host, one := byCfg["host/none"], byCfg["oneshot/none"]
			if host.TokS.V >= one.TokS.V || host.DecodeAllReduceMs.V < 1.2 || !strings.Contains(host.Basis, "as the device timed") {
				t.Errorf("host %.0f tok/s (allreduce %.2f ms, %s), oneshot %.0f tok/s: want host slower, its 1.6 ms of calls as the device timed them",
					host.TokS.V, host.DecodeAllReduceMs.V, host.Basis, one.TokS.V)
			}
			// A second session reads the step's table back from the cache
			// and predicts auto without measuring.
			again, err := NewSession(e, name, s.cacheDir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if again.in.Auto[2] == nil || again.in.Auto[2].Pick(256) != tc.autoPick[0] {
				t.Errorf("cached step table: %+v", again.in.Auto[2])
			}
		})
	}
}

// TestDeviceStepTableRefused: a step table the planner cannot use, or a
// device that cannot give one, fails Measure with the TP size named.
func TestDeviceStepTableRefused(t *testing.T) {
	ctx := context.Background()
	e, err := engine.Open(ctx, "synthetic:tiny", engine.Options{CtxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tc := range []struct {
		name  string
		table func(context.Context, int) (*tp.AutoTable, error)
		want  string
	}{
		{"device error", func(context.Context, int) (*tp.AutoTable, error) { return nil, errors.New("out of memory") }, "step's allreduce table at TP 2: out of memory"},
		{"no rules", func(_ context.Context, n int) (*tp.AutoTable, error) { return &tp.AutoTable{Ranks: n}, nil }, "at TP 2: no rules"},
		{"other group", func(context.Context, int) (*tp.AutoTable, error) {
			return &tp.AutoTable{Ranks: 4, Rules: []tp.AutoRule{{MaxBytes: 1, Backend: "oneshot"}}}, nil
		}, "table for 4 ranks in the group of 2"},
	} {
		s, err := NewSession(e, "cuda", t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.stepTable = tc.table
		_, err = s.Measure(ctx, Grid{TP: []int{2}, Backends: []string{"auto"}, Drafters: []string{"none"}}, Calibration{Reps: 2})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := e.StepAllReduceTable(ctx, 2, nil); err == nil || !strings.Contains(err.Error(), "CPU ranks") {
		t.Errorf("StepAllReduceTable on CPU ranks: %v", err)
	}
}
