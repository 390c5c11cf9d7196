package engine

import (
	"context"
	"strings"
	"testing"

	"rigscope/engine/loader/unsupported"
	"rigscope/internal/fixtures/ggufedit"
)

// TestDraftRefusedByName: a draft model the engine does not implement is
// refused through the same named refusal as a target.
func TestDraftRefusedByName(t *testing.T) {
	draft := ggufedit.Relabel(t, "arch/tiny-gemma3.F16.gguf", "gemma3", "gemma2") // an architecture the engine does not implement
	e := openTiny(t)
	_, err := e.Run(context.Background(), RunConfig{PromptIDs: tinyPrompt, MaxTokens: 4, Drafter: DrafterConfig{Path: draft}}, nil)
	ref, ok := unsupported.As(err)
	if !ok || !ref.Has(unsupported.Architecture) || !ref.Has(unsupported.SlidingWindow) ||
		!strings.Contains(err.Error(), "draft model: ") || !strings.Contains(err.Error(), draft) {
		t.Errorf("Run(draft %s) error = %v; want a draft-model refusal naming the file, its architecture and its sliding window", draft, err)
	}
}
