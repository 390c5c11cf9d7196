package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/tensor"
	"rigscope/internal/fixtures"
)

// gemma2GGUF is tiny-gemma3.F16.gguf relabelled as a gemma2 file (an
// architecture the engine does not implement): general.architecture and
// every gemma3.* key renamed.
func gemma2GGUF(t *testing.T) string {
	t.Helper()
	f, err := gguf.Open(fixtures.Path(t, "arch/tiny-gemma3.F16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kv []gguf.KV
	for _, e := range f.KV {
		if e.Key == "general.architecture" {
			e.Value = "gemma2"
		}
		if rest, ok := strings.CutPrefix(e.Key, "gemma3."); ok {
			e.Key = "gemma2." + rest
		}
		kv = append(kv, e)
	}
	var ts []*tensor.Tensor
	for _, ti := range f.Tensors {
		tt, err := f.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tt)
	}
	out := filepath.Join(t.TempDir(), "tiny-gemma2.gguf")
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := gguf.Write(w, kv, ts); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDraftRefusedByName: a draft model the engine does not implement is
// refused through the same named refusal as a target.
func TestDraftRefusedByName(t *testing.T) {
	draft := gemma2GGUF(t)
	e := openTiny(t)
	_, err := e.Run(context.Background(), RunConfig{PromptIDs: tinyPrompt, MaxTokens: 4, Drafter: DrafterConfig{Path: draft}}, nil)
	ref, ok := unsupported.As(err)
	if !ok || !ref.Has(unsupported.Architecture) || !ref.Has(unsupported.SlidingWindow) ||
		!strings.Contains(err.Error(), "draft model: ") || !strings.Contains(err.Error(), draft) {
		t.Errorf("Run(draft %s) error = %v; want a draft-model refusal naming the file, its architecture and its sliding window", draft, err)
	}
}
