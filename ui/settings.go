package ui

import (
	"encoding/json"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"

	"rigscope/engine"
	"rigscope/engine/spec"
	"rigscope/engine/tp"
)

// Settings are the run controls as the user last set them. A run copies them
// into an immutable engine.RunConfig when it starts, so changes made while a
// run is in flight apply to the next run only.
type Settings struct {
	Backend     string  `json:"backend"`
	TP          int     `json:"tp"`
	Drafter     string  `json:"drafter"` // none | ngram | model
	DraftPath   string  `json:"draft_path,omitempty"`
	NgramMin    int     `json:"ngram_min"`
	NgramMax    int     `json:"ngram_max"`
	K           int     `json:"k"`
	Tree        int     `json:"tree"` // branching factor; 0 = chain
	Temperature float32 `json:"temperature"`
	TopP        float32 `json:"top_p"`
	Seed        uint64  `json:"seed"`
	MaxTokens   int     `json:"max_tokens"`
	Mode        string  `json:"mode"` // chat | raw
	MarkDrafts  bool    `json:"mark_drafts"`

	// NCCL are the nccl backend's settings, kept while another backend is
	// chosen and given to a run only with nccl.
	NCCL tp.NCCLSettings `json:"nccl,omitzero"`
}

// Drafter kinds offered by the panel.
const (
	DrafterNone  = "none"
	DrafterNgram = "ngram"
	DrafterModel = "model"
	// DrafterEagle3 reads the target's hidden states: an EAGLE-3 head folder.
	DrafterEagle3 = "eagle3"
)

// Prompt modes.
const (
	ModeChat = "chat"
	ModeRaw  = "raw"
)

// DefaultSettings is what a fresh install starts with: the n-gram drafter so
// speculation works with no download.
func DefaultSettings() Settings {
	return Settings{
		Backend:     "ring",
		TP:          1,
		Drafter:     DrafterNgram,
		NgramMin:    1,
		NgramMax:    3,
		K:           4,
		Temperature: 0,
		TopP:        1,
		Seed:        1,
		MaxTokens:   256,
		Mode:        ModeChat,
		MarkDrafts:  true,
	}
}

// Validate reports the first setting that cannot start a run.
func (s Settings) Validate() error {
	switch {
	case s.TP < 1:
		return fmt.Errorf("TP size %d: must be at least 1", s.TP)
	case spec.CheckShape(s.K, 0) != nil:
		return spec.CheckShape(s.K, 0)
	case s.Tree < 0 || s.Tree > 4:
		return fmt.Errorf("tree branching %d: must be 0 (chain) to 4", s.Tree)
	case s.Temperature < 0 || s.Temperature > 5:
		return fmt.Errorf("temperature %g: must be in 0..5", s.Temperature)
	case s.TopP <= 0 || s.TopP > 1:
		return fmt.Errorf("top-p %g: must be in (0, 1]", s.TopP)
	case s.MaxTokens < 1 || s.MaxTokens > 1<<20:
		return fmt.Errorf("max tokens %d: must be in 1..1048576", s.MaxTokens)
	}
	if err := s.NCCL.Check(); err != nil {
		return err
	}
	switch s.Drafter {
	case DrafterNone:
	case DrafterNgram:
		if s.NgramMin < 1 || s.NgramMax < s.NgramMin || s.NgramMax > 8 {
			return fmt.Errorf("n-gram sizes %d..%d: need 1 <= min <= max <= 8", s.NgramMin, s.NgramMax)
		}
	case DrafterModel:
		if strings.TrimSpace(s.DraftPath) == "" {
			return fmt.Errorf("draft model: choose a draft model file first")
		}
	case DrafterEagle3:
		if strings.TrimSpace(s.DraftPath) == "" {
			return fmt.Errorf("eagle3: choose an EAGLE-3 head folder first (Folder…)")
		}
	default:
		return fmt.Errorf("drafter %q: unknown (want none, ngram, model or eagle3)", s.Drafter)
	}
	return nil
}

// RunConfig freezes the settings into the config of one run. prompt is the
// text sent to the model (already formatted with template when template is
// not "").
func (s Settings) RunConfig(prompt, template string) engine.RunConfig {
	d := engine.DrafterConfig{Kind: s.Drafter, K: s.K, Tree: s.Tree}
	switch s.Drafter {
	case DrafterNgram:
		d.NgramMin, d.NgramMax = s.NgramMin, s.NgramMax
	case DrafterModel, DrafterEagle3:
		d.Path = s.DraftPath
	case DrafterNone:
		d.K, d.Tree = 0, 0
	}
	cfg := engine.RunConfig{
		Prompt:    prompt,
		Template:  template,
		MaxTokens: s.MaxTokens,
		Sampling:  engine.Sampling{Temperature: s.Temperature, TopP: s.TopP, Seed: s.Seed},
		Drafter:   d,
		TP:        s.TP,
		AllReduce: s.Backend,
	}
	if s.Backend == "nccl" {
		cfg.NCCL = s.NCCL
	}
	return cfg
}

// Describe is a one-line summary of what a run config does, for labels.
func Describe(c engine.RunConfig) string {
	d := "no drafter"
	switch c.Drafter.Kind {
	case DrafterNgram:
		d = fmt.Sprintf("n-gram %d..%d", c.Drafter.NgramMin, c.Drafter.NgramMax)
	case DrafterModel:
		d = "draft model"
	case DrafterEagle3:
		d = "EAGLE-3 head"
	}
	if c.Drafter.Kind != DrafterNone && c.Drafter.Kind != "" {
		shape := "chain"
		if c.Drafter.Tree > 0 {
			shape = fmt.Sprintf("tree×%d", c.Drafter.Tree)
		}
		d += fmt.Sprintf(", k=%d %s", c.Drafter.K, shape)
	}
	backend := c.AllReduce
	if backend == "nccl" && !c.NCCL.IsZero() {
		backend = c.NCCL.String()
	}
	return fmt.Sprintf("%s TP=%d · %s · T=%g top-p=%g seed=%d · max %d",
		backend, c.TP, d, c.Sampling.Temperature, c.Sampling.TopP, c.Sampling.Seed, c.MaxTokens)
}

// Preference keys under the app ID.
const (
	prefSettings  = "settings"
	prefLastModel = "last_model"
	prefHistory   = "prompt_history"
)

// LoadSettings reads the saved settings, falling back to the defaults for a
// missing or unreadable value.
func LoadSettings(p fyne.Preferences) Settings {
	s := DefaultSettings()
	raw := p.String(prefSettings)
	if raw == "" {
		return s
	}
	saved := s
	if err := json.Unmarshal([]byte(raw), &saved); err != nil || saved.Validate() != nil {
		return s
	}
	return saved
}

// SaveSettings stores the settings as JSON under the app's preferences.
func SaveSettings(p fyne.Preferences, s Settings) {
	b, err := json.Marshal(s)
	if err != nil { // a struct of plain fields always marshals
		return
	}
	p.SetString(prefSettings, string(b))
}
