package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/spec"
	"rigscope/engine/tp"
)

// ncclGPU is fakeGPU's target with an nccl backend: it records the NCCL
// settings each run asked for, says what its communicators were
// (NCCLUse), and refuses the settings named in refuse as NCCL would.
type ncclGPU struct {
	fakeGPUTarget
	asked  []tp.NCCLSettings
	use    *tp.NCCLUse
	made   *tp.NCCLSettings // the settings of the communicators in place
	refuse string
}

func (t *ncclGPU) SetAllReduce(ctx context.Context, backend string, o tp.GroupOptions) error {
	if backend != "nccl" {
		t.use = nil
		return t.fakeGPUTarget.SetAllReduce(ctx, backend, o)
	}
	t.asked = append(t.asked, o.NCCL)
	if o.NCCL.String() == t.refuse {
		return errors.New("fakegpu: nccl communicators with " + o.NCCL.String() + ": ncclInvalidUsage: NCCL says: Error : no algorithm/protocol available for function AllReduce")
	}
	created := t.made == nil || *t.made != o.NCCL
	s := o.NCCL
	t.made = &s
	t.use = &tp.NCCLUse{Settings: o.NCCL, Version: "2.28.9", Created: created}
	t.o, t.b, t.total = o, backend, 0
	return nil
}

func (t *ncclGPU) NCCLUse() *tp.NCCLUse { return t.use }

// The run's NCCL settings reach the device with each run, the stats and
// the run log say which were used and whether the communicators were made
// for the run, the weights are not reloaded, and bad settings are refused
// before anything runs, naming the setting.
func TestDeviceNCCLSettingsPerRun(t *testing.T) {
	f := &fakeGPU{}
	var tgt *ncclGPU
	RegisterDevice("fakegpu-nccl", Device{Target: func(src loader.Source, tpN int, gpus []int, ctxLen int) (spec.Target, error) {
		base, err := f.target(src, tpN, gpus, ctxLen)
		if err != nil {
			return nil, err
		}
		tgt = &ncclGPU{fakeGPUTarget: *base.(*fakeGPUTarget), refuse: "nccl(CollNetDirect)"}
		return tgt, nil
	}, Backends: fakeGPUBackends})
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Open(ctx, "synthetic:tiny", Options{CtxLen: 128, Device: "fakegpu-nccl", LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	run := func(backend string, s tp.NCCLSettings) (Stats, error) {
		return e.Run(ctx, RunConfig{PromptIDs: []int32{1, 2, 3}, MaxTokens: 4, IgnoreEOS: true, TP: 2, AllReduce: backend, NCCL: s}, func(Event) {})
	}
	ll := tp.NCCLSettings{Proto: "LL", MaxChannels: 4}
	tree := tp.NCCLSettings{Algo: "Tree", BuffSize: 8 << 20}
	for i, step := range []struct {
		backend string
		s       tp.NCCLSettings
		created bool
		bad     string // "" = the run goes
	}{
		{"nccl", tp.NCCLSettings{}, true, ""},
		{"nccl", ll, true, ""},
		{"nccl", ll, false, ""},
		{"oneshot", tp.NCCLSettings{}, false, ""},
		{"nccl", ll, false, ""}, // back to nccl with the same settings: kept
		{"nccl", tree, true, ""},
		{"nccl", tp.NCCLSettings{Algo: "CollNetDirect"}, false, "no algorithm/protocol available"},
		{"nccl", tp.NCCLSettings{Proto: "LL256"}, false, `"LL256" is not one NCCL knows`},
		{"nccl", tp.NCCLSettings{MinChannels: 8, MaxChannels: 2}, false, "minimum channels 8 above maximum channels 2"},
		{"twoshot", ll, false, "apply to the nccl allreduce backend; this run uses twoshot"},
	} {
		asked := 0
		if tgt != nil { // loaded at the first run
			asked = len(tgt.asked)
		}
		st, err := run(step.backend, step.s)
		if step.bad != "" {
			if err == nil || !strings.Contains(err.Error(), step.bad) {
				t.Errorf("run %d (%s %s): %v, want an error holding %q", i, step.backend, step.s, err, step.bad)
			}
			continue
		}
		if err != nil {
			t.Fatalf("run %d (%s %s): %v", i, step.backend, step.s, err)
		}
		if step.backend != "nccl" {
			if st.NCCL != nil {
				t.Errorf("run %d (%s): stats say nccl %+v", i, step.backend, st.NCCL)
			}
			continue
		}
		if len(tgt.asked) != asked+1 || tgt.asked[len(tgt.asked)-1] != step.s {
			t.Errorf("run %d: the device was asked %v, want %s last", i, tgt.asked, step.s)
		}
		if st.NCCL == nil || st.NCCL.Settings != step.s || st.NCCL.Created != step.created {
			t.Errorf("run %d (%s): stats nccl %+v, want settings %s created %v", i, step.s, st.NCCL, step.s, step.created)
		}
		log, err := os.ReadFile(st.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"nccl":{"settings":`; !strings.Contains(string(log), want) {
			t.Errorf("run %d: the run log does not hold %s:\n%s", i, want, log)
		}
		if !step.s.IsZero() && !strings.Contains(string(log), `"proto":"LL"`) && !strings.Contains(string(log), `"algo":"Tree"`) {
			t.Errorf("run %d: the run log does not name the settings %s", i, step.s)
		}
	}
	if f.loads != 1 {
		t.Errorf("%d loads over the runs, want 1 (NCCL settings never reload weights)", f.loads)
	}
	// Settings refused by the engine never reached the device.
	for _, s := range tgt.asked {
		if s.Check() != nil {
			t.Errorf("the device was asked for %s, which Check refuses", s)
		}
	}
}
