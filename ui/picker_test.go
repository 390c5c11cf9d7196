//go:build ci

package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"rigscope/internal/fixtures"
)

func TestPickerRefusesWithMessage(t *testing.T) {
	test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	var picked string
	p := NewPicker(w, func(path, _ string) { picked = path })
	var refused error
	p.Refused = func(err error) { refused = err }
	bad := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(bad, []byte("hello, this is definitely not a model file"), 0o644)
	if p.Choose(bad) || picked != "" {
		t.Errorf("Choose(%s) accepted a text file", bad)
	}
	if refused == nil || !strings.Contains(refused.Error(), "not GGUF") {
		t.Errorf("Choose(%s) refusal = %v, want one explaining it is not GGUF", bad, refused)
	}
	good := fixtures.Llama2C(t, t.TempDir(), false)
	if !p.Choose(good) || picked != good {
		t.Errorf("Choose(%s) = refused (%v), want accepted", good, refused)
	}
}
