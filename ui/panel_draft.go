package ui

import (
	"fmt"

	"rigscope/engine"
	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec/eagle3"
)

// draftTargetInfo is what checking a draft against the loaded target
// reads; *engine.Engine has it (the main package's adapter embeds it).
type draftTargetInfo interface {
	tokenizing
	Config() model.Config
}

// draftKind says which drafter a path can be (the model drafter for a
// model file or folder, eagle3 for an EAGLE-3 head folder), or why it
// cannot be used at all.
func draftKind(path string) (string, error) {
	format, err := CheckModelPath(path)
	if err != nil {
		return "", err
	}
	if format == FormatEagle3 || eagle3.IsHead(path) {
		return DrafterEagle3, nil
	}
	return DrafterModel, nil
}

// CheckDraftFor says whether path can draft for eng (nil: no target loaded
// yet, only the file is checked) and as which drafter: the file must be a
// model the engine opens, a draft model must have the target's
// vocabulary, piece for piece, and an EAGLE-3 head must have been trained
// for the target's hidden size, vocabulary and layers.
func CheckDraftFor(eng Engine, path string) (string, error) {
	kind, err := draftKind(path)
	if err != nil {
		return "", err
	}
	t, ok := eng.(draftTargetInfo)
	if eng == nil || !ok {
		return kind, nil
	}
	cfg := t.Config()
	if kind == DrafterEagle3 {
		hc, err := eagle3.ReadConfig(path)
		if err != nil {
			return "", err
		}
		if err := hc.Resolve(cfg, true); err != nil {
			return "", fmt.Errorf("EAGLE-3 head %s does not fit %s: %w", baseName(path), eng.Info().Name, err)
		}
		return kind, nil
	}
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return "", fmt.Errorf("draft model: %w", err)
	}
	defer src.Close()
	ttok, _ := t.Tokenizer()
	dtok, dErr := src.Tokenizer()
	if err := engine.CompareVocab(cfg.Vocab, ttok, src.Config().Vocab, dtok, dErr, baseName(path)); err != nil {
		return "", fmt.Errorf("%w: a draft model must share the target's (%s) vocabulary", err, eng.Info().Name)
	}
	return kind, nil
}

func clearDraft(s Settings) Settings {
	s.DraftPath = ""
	if s.Drafter == DrafterModel || s.Drafter == DrafterEagle3 {
		s.Drafter = DrafterNone
	}
	return s
}

// ChooseDraft checks path against the loaded target and, when it can
// draft for it, selects it; otherwise the reason shows beside the drafter
// control and nothing is saved.
func (p *Panel) ChooseDraft(path string) {
	var eng Engine
	if p.session != nil {
		eng = p.session.Engine()
	}
	kind, err := CheckDraftFor(eng, path)
	if err != nil {
		p.Controls.SetDraftProblem(err)
		return
	}
	p.Controls.SetDraft(path, kind)
}

// ClearDraft forgets the chosen draft model or head.
func (p *Panel) ClearDraft() {
	p.Controls.SetDraft("", "")
}

// recheckDraft checks the chosen draft against a newly loaded target and
// drops it, saying why, when it cannot draft for it.
func (p *Panel) recheckDraft() {
	s := p.Controls.Settings()
	if s.DraftPath == "" || p.session == nil {
		return
	}
	if _, err := CheckDraftFor(p.session.Engine(), s.DraftPath); err != nil {
		p.Controls.SetDraft("", "")
		p.Controls.SetDraftProblem(fmt.Errorf("%s cannot draft for this model and was cleared: %w", baseName(s.DraftPath), err))
	}
}
