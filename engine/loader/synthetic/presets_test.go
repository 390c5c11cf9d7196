package synthetic_test

import (
	"slices"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/loader/synthetic"
)

// Every preset is a valid config whose tensors the synthetic source can
// generate, by the names and shapes a loader expects of its architecture
// (shapes only: the real-size presets are gigabytes).
func TestPresetShapes(t *testing.T) {
	for _, name := range synthetic.PresetNames() {
		src, err := synthetic.Open(name + "?layers=2")
		if err != nil {
			t.Fatal(err)
		}
		c := src.Config()
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if src.Meta()["architecture"] != c.Arch {
			t.Errorf("%s: meta architecture %q, config %q", name, src.Meta()["architecture"], c.Arch)
		}
		for tn, shape := range loader.ExpectedShapes(c) {
			got, ok := synthetic.ShapeOf(src, tn)
			if !ok || !slices.Equal(got, shape) {
				t.Errorf("%s: tensor %s shape %v (%v), want %v", name, tn, got, ok, shape)
			}
		}
	}
	for _, tc := range []struct {
		spec, layers string
	}{{"gemma3-12b", "LLLLLGLLLLLGLLLLLGLLLLLGLLLLLGLLLLLGLLLLLGLLLLLG"}, {"gemma3-12b?layers=7", "LLLLLGL"}} {
		src, err := synthetic.Open(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := src.Config().Gemma.Layers; got != tc.layers {
			t.Errorf("%s: layers %q, want %q", tc.spec, got, tc.layers)
		}
	}
}

// Export writes a plain llama GGUF: a preset with extensions is refused
// rather than written as something else.
func TestExportRefusesExtensions(t *testing.T) {
	src, err := synthetic.Open("qwen3-8b?layers=1")
	if err != nil {
		t.Fatal(err)
	}
	if err := src.WriteGGUF(nil); err == nil {
		t.Error("qwen3-8b exported as a plain llama GGUF")
	}
}
