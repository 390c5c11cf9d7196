//go:build ci

package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"rigscope/engine/tp"
)

// The NCCL settings are disabled, with the reason, unless nccl is the
// chosen backend and can run; while it is, they edit the settings, reach
// the run config only with nccl, and a value NCCL would refuse is refused
// with its reason.
func TestControlsNCCL(t *testing.T) {
	test.NewTempApp(t)
	for _, tc := range []struct {
		name     string
		backends []Choice
		why      string // the reason shown while ring is chosen
	}{
		{"one GPU", testBackends, "nccl cannot run here (NCCL refuses two ranks on one GPU)"},
		{"cpu", []Choice{{Name: "ring", Available: true}}, "this device has none"},
		{"gpus", []Choice{{Name: "ring", Available: true}, {Name: "nccl", Available: true}}, "apply when the allreduce backend is nccl"},
	} {
		c := NewControlsView(DefaultSettings(), tc.backends, testTPs, nil, nil)
		if !c.nccl.proto.Disabled() || !c.nccl.buff.Disabled() || !strings.Contains(c.nccl.why.Text, tc.why) {
			t.Errorf("%s, backend ring: proto disabled %v, buffer disabled %v, reason %q; want disabled saying %q",
				tc.name, c.nccl.proto.Disabled(), c.nccl.buff.Disabled(), c.nccl.why.Text, tc.why)
		}
	}

	gpus := []Choice{{Name: "ring", Available: true}, {Name: "nccl", Available: true}}
	var last Settings
	c := NewControlsView(DefaultSettings(), gpus, testTPs, nil, func(s Settings) { last = s })
	c.backend.radios["nccl"].SetSelected("nccl")
	if c.nccl.proto.Disabled() || c.nccl.minCh.Disabled() || strings.Contains(c.nccl.why.Text, "disabled") {
		t.Fatalf("nccl chosen: proto disabled %v, channels disabled %v, reason %q", c.nccl.proto.Disabled(), c.nccl.minCh.Disabled(), c.nccl.why.Text)
	}
	c.nccl.proto.SetSelected("LL128")
	c.nccl.algo.SetSelected("Tree")
	c.nccl.minCh.SetText("2")
	c.nccl.maxCh.SetText("8")
	c.nccl.buff.SetText("8M")
	want := tp.NCCLSettings{Proto: "LL128", Algo: "Tree", MinChannels: 2, MaxChannels: 8, BuffSize: 8 << 20}
	if got := c.Settings().NCCL; got != want || last.NCCL != want {
		t.Errorf("after the edits Settings().NCCL = %+v (onChange %+v), want %+v", got, last.NCCL, want)
	}
	cfg := c.Settings().RunConfig("p", "")
	if cfg.AllReduce != "nccl" || cfg.NCCL != want || !strings.Contains(Describe(cfg), "nccl(Tree,LL128,channels 2..8,buffsize 8M) TP=1") {
		t.Errorf("run config %s / %+v, described %q", cfg.AllReduce, cfg.NCCL, Describe(cfg))
	}
	for _, o := range c.nccl.algo.Options {
		if strings.HasPrefix(o, "NVLS") {
			t.Errorf("the algorithm choice offers %s, which rigscope keeps off", o)
		}
	}

	// A value NCCL refuses is refused with the reason; the setting stays.
	c.nccl.minCh.SetText("9")
	if c.Settings().NCCL.MinChannels != 2 || !strings.Contains(c.problem.Text, "minimum channels 9 above maximum channels 8") {
		t.Errorf("min 9 > max 8: MinChannels %d, problem %q", c.Settings().NCCL.MinChannels, c.problem.Text)
	}
	c.nccl.minCh.SetText("2")
	c.nccl.buff.SetText("3M")
	if c.Settings().NCCL.BuffSize != 8<<20 || !strings.Contains(c.problem.Text, "power of two") {
		t.Errorf("buffer 3M: BuffSize %d, problem %q", c.Settings().NCCL.BuffSize, c.problem.Text)
	}
	c.nccl.buff.SetText("")
	c.nccl.proto.SetSelected(ncclChoice)
	if got := c.Settings().NCCL; got.BuffSize != 0 || got.Proto != "" {
		t.Errorf("cleared buffer and NCCL's protocol: %+v", got)
	}

	// Another backend keeps the settings but gives none to the run, and
	// disables them.
	c.backend.radios["ring"].SetSelected("ring")
	if cfg := c.Settings().RunConfig("p", ""); !cfg.NCCL.IsZero() || c.Settings().NCCL.Algo != "Tree" || !c.nccl.algo.Disabled() {
		t.Errorf("back to ring: run config NCCL %+v, kept %+v, algorithm disabled %v", cfg.NCCL, c.Settings().NCCL, c.nccl.algo.Disabled())
	}
}
