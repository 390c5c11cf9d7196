//go:build ci

package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"rigscope/engine"
	"rigscope/engine/stepstats"
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
	if got := v.Cell(0, 6); got != "10.0 tok/s" {
		t.Errorf("Cell(0, speed) = %q, want 10.0 tok/s", got)
	}
	v.OnExport(v.Runs())
	if len(exported) != 3 {
		t.Errorf("export all passed %d runs, want 3", len(exported))
	}
}

// TestRunFieldsText: the runs table's human units, "—" where a figure
// does not apply, and auto resolved to the backend it used per size.
func TestRunFieldsText(t *testing.T) {
	spec := fixedRecord(1, "auto", 101.5)
	spec.Stats.AllReduceBySize = []engine.BackendUse{{Bytes: 4096, Backend: "ring", Calls: 10}, {Bytes: 1 << 20, Backend: "twoshot", Calls: 2}}
	spec.Stats.TimeToFirstTokenMs = 22.0436
	spec.Stats.AllReduceP50Us = 22043.6
	plain := fixedRecord(2, "ring", 80)
	plain.Config.TP, plain.Config.Drafter = 1, engine.DrafterConfig{Kind: DrafterNone}
	for _, tc := range []struct {
		r           *RunRecord
		field, want string
	}{
		{spec, "ttft_ms", "22.0 ms"},
		{spec, "allreduce_p50_us", "22.0 ms"},
		{spec, "allreduce_p99_us", "70.0 µs"},
		{spec, "allreduce", "auto: ring ≤ 4.0 KiB, twoshot ≤ 1.0 MiB"},
		{spec, "allreduce_used", "4096:ring 1048576:twoshot"},
		{spec, "decode_tokens_per_s", "101.5 tok/s"},
		{spec, "draft_accept_rate", "55%"},
		{spec, "mean_accept_len", "3.20 tokens/step"},
		{spec, "verdict", "pays 1.42x (1.31–1.55)"},
		{spec, "baseline_source", "plain run in this session"},
		{spec, "bytes_moved", "8.0 KiB"},
		{spec, "drafter", "ngram k=4"},
		{plain, "allreduce", "— (1 rank)"},
		{plain, "allreduce_p50_us", "—"},
		{plain, "bytes_moved", "—"},
		{plain, "k", "—"},
		{plain, "verdict", "—"},
		{plain, "mean_accept_len", "—"},
		{plain, "error", "—"},
	} {
		if got := runFields[fieldIndex(tc.field)].text(tc.r); got != tc.want {
			t.Errorf("run %d %s = %q, want %q", tc.r.ID, tc.field, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    stepstats.Verdict
		want string
	}{
		{stepstats.Verdict{State: stepstats.Measuring}, "measuring"},
		{stepstats.Verdict{State: stepstats.CannotPay}, "cannot pay at k=4"},
		{stepstats.Verdict{State: stepstats.TooClose, Speedup: 1.01, SpeedupLo: 0.9, SpeedupHi: 1.1}, "too close 1.01x (0.90–1.10)"},
		{stepstats.Verdict{State: stepstats.DoesNotPay, Speedup: 0.8, SpeedupLo: 0.7, SpeedupHi: 0.9}, "does not pay 0.80x (0.70–0.90)"},
	} {
		spec.Stats.Verdict = tc.v
		if got := verdictText(spec); got != tc.want {
			t.Errorf("verdictText(%s) = %q, want %q", tc.v.State, got, tc.want)
		}
	}
}

// TestChange: the compare view's change names the direction of figures
// that have one.
func TestChange(t *testing.T) {
	a, b := fixedRecord(1, "ring", 100), fixedRecord(2, "tree", 110)
	b.Stats.TimeToFirstTokenMs = 24 // 12 -> 24 ms
	plain := fixedRecord(3, "ring", 100)
	plain.Config.Drafter = engine.DrafterConfig{Kind: DrafterNone}
	for _, tc := range []struct {
		field string
		a, b  *RunRecord
		want  string
	}{
		{"decode_tokens_per_s", a, b, "+10.0% better"},
		{"decode_tokens_per_s", b, a, "-9.1% worse"},
		{"ttft_ms", a, b, "+100.0% worse"},
		{"ttft_ms", b, a, "-50.0% better"},
		{"generated_tokens", a, b, "="},
		{"allreduce", a, b, "differs"},
		{"model", a, b, "="},
		{"mean_accept_len", a, plain, "differs"},
		{"tp", a, b, "="},
	} {
		if got := change(runFields[fieldIndex(tc.field)], tc.a, tc.b); got != tc.want {
			t.Errorf("change(%s, run %d, run %d) = %q, want %q", tc.field, tc.a.ID, tc.b.ID, got, tc.want)
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
