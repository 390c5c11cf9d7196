//go:build ci

package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

func TestSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		want string // "" = valid; else a substring of the error
	}{
		{"defaults", func(*Settings) {}, ""},
		{"tp 0", func(s *Settings) { s.TP = 0 }, "TP size"},
		{"k 17", func(s *Settings) { s.K = 17 }, "k=17"},
		{"top-p 0", func(s *Settings) { s.TopP = 0 }, "top-p"},
		{"negative temperature", func(s *Settings) { s.Temperature = -1 }, "temperature"},
		{"ngram min > max", func(s *Settings) { s.NgramMin, s.NgramMax = 3, 2 }, "n-gram sizes"},
		{"model drafter without path", func(s *Settings) { s.Drafter = DrafterModel }, "draft model"},
		{"model drafter with path", func(s *Settings) { s.Drafter, s.DraftPath = DrafterModel, "/m.gguf" }, ""},
		{"unknown drafter", func(s *Settings) { s.Drafter = "eagle9" }, "unknown"},
		{"max tokens 0", func(s *Settings) { s.MaxTokens = 0 }, "max tokens"},
	} {
		s := DefaultSettings()
		tc.edit(&s)
		err := s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate(%+v) = %v, want nil", tc.name, s, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate(%+v) = %v, want an error mentioning %q", tc.name, s, err, tc.want)
		}
	}
}

func TestSettingsRunConfig(t *testing.T) {
	s := DefaultSettings()
	s.Backend, s.TP, s.K, s.Tree, s.Temperature, s.Seed = "tree", 2, 6, 2, 0.7, 42
	c := s.RunConfig("p", "llama3")
	if c.AllReduce != "tree" || c.TP != 2 || c.Drafter.K != 6 || c.Drafter.Tree != 2 || c.Drafter.Kind != DrafterNgram ||
		c.Drafter.NgramMin != 1 || c.Drafter.NgramMax != 3 || c.Sampling.Temperature != 0.7 || c.Sampling.Seed != 42 ||
		c.Prompt != "p" || c.Template != "llama3" {
		t.Errorf("RunConfig(%+v) = %+v", s, c)
	}
	s.Drafter = DrafterNone
	if c := s.RunConfig("p", ""); c.Drafter.K != 0 || c.Drafter.Tree != 0 {
		t.Errorf("RunConfig with no drafter = %+v, want k 0", c.Drafter)
	}
}

func TestSettingsPersist(t *testing.T) {
	a := test.NewTempApp(t)
	if got := LoadSettings(a.Preferences()); got != DefaultSettings() {
		t.Errorf("LoadSettings on empty preferences = %+v, want the defaults", got)
	}
	s := DefaultSettings()
	s.Backend, s.MaxTokens, s.MarkDrafts = "tree", 99, false
	SaveSettings(a.Preferences(), s)
	if got := LoadSettings(a.Preferences()); got != s {
		t.Errorf("LoadSettings after SaveSettings(%+v) = %+v", s, got)
	}
	a.Preferences().SetString(prefSettings, `{"k": 99}`)
	if got := LoadSettings(a.Preferences()); got != DefaultSettings() {
		t.Errorf("LoadSettings of an invalid saved value = %+v, want the defaults", got)
	}
}
