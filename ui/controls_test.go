//go:build ci

package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

var testBackends = []Choice{
	{Name: "ring", Available: true},
	{Name: "tree", Available: true},
	{Name: "nccl", Reason: "NCCL refuses two ranks on one GPU"},
}

var testTPs = []Choice{{Name: "1", Available: true}, {Name: "2", Available: true}, {Name: "8", Reason: "8 ranks need 8 KV heads"}}

func TestControlsGolden(t *testing.T) {
	test.NewTempApp(t)
	c := NewControlsView(DefaultSettings(), testBackends, testTPs, func(bool) {}, nil)
	w := test.NewTempWindow(t, c.Root)
	w.Resize(fyne.NewSize(380, 900))
	test.AssertRendersToMarkup(t, "controls.xml", w.Canvas())
}

func TestControlsChanges(t *testing.T) {
	test.NewTempApp(t)
	var last Settings
	c := NewControlsView(DefaultSettings(), testBackends, testTPs, nil, func(s Settings) { last = s })

	c.backend.radios["tree"].SetSelected("tree")
	c.tp.radios["2"].SetSelected("2")
	c.k.SetText("6")
	c.temp.SetText("0.8")
	c.shape.SetSelected("tree ×3")
	c.drafter.radios[DrafterNone].SetSelected(DrafterNone)
	want := DefaultSettings()
	want.Backend, want.TP, want.K, want.Temperature, want.Tree, want.Drafter = "tree", 2, 6, 0.8, 3, DrafterNone
	if got := c.Settings(); got != want {
		t.Errorf("after edits Settings() = %+v, want %+v", got, want)
	}
	if last != want {
		t.Errorf("onChange last got %+v, want %+v", last, want)
	}
	if c.backend.radios["ring"].Selected != "" {
		t.Error("ring still selected after choosing tree")
	}

	// Unavailable choices are disabled, with the reason shown, and cannot be chosen.
	if !c.backend.radios["nccl"].Disabled() {
		t.Error("nccl (unavailable) radio is enabled")
	}
	c.backend.SetSelected("nccl")
	if c.Settings().Backend != "tree" {
		t.Errorf("selecting unavailable nccl changed the backend to %q", c.Settings().Backend)
	}
	if !c.drafter.radios[DrafterModel].Disabled() {
		t.Error("model drafter enabled with no draft model chosen")
	}
	c.SetDraft("/models/draft.gguf", DrafterModel)
	if got := c.Settings(); got.Drafter != DrafterModel || got.DraftPath != "/models/draft.gguf" {
		t.Errorf("after SetDraft: drafter %q path %q", got.Drafter, got.DraftPath)
	}

	// An invalid value is refused with its reason and leaves the setting.
	c.k.SetText("40")
	if c.Settings().K != 6 || !strings.Contains(c.problem.Text, "k=40") {
		t.Errorf("k=40: Settings().K = %d, problem %q; want 6 and a message", c.Settings().K, c.problem.Text)
	}
}

func TestControlsSayWhenARunKeepsItsSettings(t *testing.T) {
	test.NewTempApp(t)
	c := NewControlsView(DefaultSettings(), testBackends, testTPs, nil, nil)
	cfg := c.Settings().RunConfig("p", "")
	c.SetInFlight(&cfg)
	if !c.inFlight.Visible() || strings.Contains(c.inFlight.Text, "next run") {
		t.Errorf("in flight with unchanged settings: visible %v, text %q", c.inFlight.Visible(), c.inFlight.Text)
	}
	c.backend.radios["tree"].SetSelected("tree")
	if !strings.Contains(c.inFlight.Text, "apply to the next run: tree") {
		t.Errorf("after a change during a run the note says %q, want it to say the change applies to the next run", c.inFlight.Text)
	}
	c.SetInFlight(nil)
	if c.inFlight.Visible() {
		t.Error("in-flight note still visible when idle")
	}
}

var _ = widget.NewLabel
