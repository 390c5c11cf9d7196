//go:build ci

package ui

import (
	"testing"

	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
)

func TestProgressText(t *testing.T) {
	for _, tc := range []struct {
		in   engine.Progress
		want string
	}{
		{engine.Progress{What: "calibrating"}, "calibrating…"},
		{engine.Progress{What: "loading weights", Done: 2, Total: 5}, "loading weights: 2 of 5"},
		{engine.Progress{What: "reading", Done: 3 << 20, Total: 8 << 20}, "reading: 3.0 MiB of 8.0 MiB"},
	} {
		if got := ProgressText(tc.in); got != tc.want {
			t.Errorf("ProgressText(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// findButton returns the dialog's button labelled label.
func findButton(t *testing.T, p *ProgressDialog, label string) *widget.Button {
	t.Helper()
	_ = p
	if p.cancelButton == nil || p.cancelButton.Text != label {
		t.Fatalf("no %q button in the progress dialog", label)
	}
	return p.cancelButton
}
