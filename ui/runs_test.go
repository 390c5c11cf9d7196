//go:build ci

package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

func TestRunsGolden(t *testing.T) {
	test.NewTempApp(t)
	v := NewRunsView()
	w := test.NewTempWindow(t, v.Root)
	w.Resize(fyne.NewSize(1000, 600))
	v.Add(fixedRecord(1, "ring", 101.5))
	v.Add(fixedRecord(2, "tree", 87.25))
	v.Toggle(0)
	v.Toggle(1)
	test.AssertRendersToMarkup(t, "runs.xml", w.Canvas())
}

func TestRunsSelection(t *testing.T) {
	test.NewTempApp(t)
	v := NewRunsView()
	for i := 1; i <= 3; i++ {
		v.Add(fixedRecord(i, "ring", float64(10*i)))
	}
	ids := func() (out []int) {
		for _, r := range v.Selected() {
			out = append(out, r.ID)
		}
		return out
	}
	for _, step := range []struct {
		toggle int
		want   []int
	}{{0, []int{1}}, {1, []int{1, 2}}, {2, []int{2, 3}}, {2, []int{2}}, {7, []int{2}}} {
		v.Toggle(step.toggle)
		if got := ids(); !equalInts(got, step.want) {
			t.Errorf("after Toggle(%d) selected = %v, want %v", step.toggle, got, step.want)
		}
	}
	var exported []*RunRecord
	v.OnExport = func(r []*RunRecord) { exported = r }
	if got := v.Cell(0, 5); got != "10.00" {
		t.Errorf("Cell(0, tok/s) = %q, want 10.00", got)
	}
	v.OnExport(v.Runs())
	if len(exported) != 3 {
		t.Errorf("export all passed %d runs, want 3", len(exported))
	}
}

func TestChange(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"100", "110", "+10.0%"}, {"2", "1", "-50.0%"}, {"1", "1", "="}, {"0", "3", "new"}, {"ring", "tree", "≠"}, {"x", "x", "="},
	} {
		if got := change(tc.a, tc.b); got != tc.want {
			t.Errorf("change(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
