package tp

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestCalibrationCache(t *testing.T) {
	ctx := context.Background()
	opts := GroupOptions{CacheDir: t.TempDir(), CalibrationBudget: 1} // budget: the first size only
	path, err := CachePath(opts.CacheDir)
	if err != nil {
		t.Fatal(err)
	}
	load := func(step string, wantSource, wantNote string) *AutoTable {
		t.Helper()
		tab, err := LoadOrCalibrate(ctx, 2, opts)
		if err != nil {
			t.Fatalf("%s: LoadOrCalibrate(2 ranks): %v", step, err)
		}
		if tab.Source != wantSource || !strings.Contains(tab.Note, wantNote) {
			t.Fatalf("%s: LoadOrCalibrate(2 ranks) source %q note %q, want %q and a note with %q", step, tab.Source, tab.Note, wantSource, wantNote)
		}
		return tab
	}
	tamper := func(f func(*cacheFile)) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cf cacheFile
		if err := json.Unmarshal(data, &cf); err != nil {
			t.Fatal(err)
		}
		f(&cf)
		if err := writeCache(path, &cf); err != nil {
			t.Fatal(err)
		}
	}
	load("first", "measured", "no calibration cache")
	tab := load("second", "cache", path)
	if len(tab.Rules) == 0 || tab.Pick(1) == "" {
		t.Fatalf("cached table has no rules: %+v", tab)
	}
	tamper(func(cf *cacheFile) { cf.Build = "some other build" })
	load("other build", "measured", "made by another build")
	tamper(func(cf *cacheFile) { cf.Machine = "host=elsewhere" })
	load("other machine", "measured", "made on another machine")
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	load("corrupt", "measured", "corrupt")
	load("no 4", "cache", path)
	if _, err := LoadOrCalibrate(ctx, 4, opts); err != nil {
		t.Fatal(err)
	}
	if tab, err := Recalibrate(ctx, 2, opts); err != nil || !strings.Contains(tab.Note, "recalibration requested") {
		t.Fatalf("Recalibrate: %v, note %q", err, tab.Note)
	}
	load("after recalibrate", "cache", path)

	// An auto group built from the cache works.
	g, err := NewGroup("auto", 2, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkAllReduce(t, g, "auto", 1000, 1)
}

func TestAutoTablePick(t *testing.T) {
	tab := testAuto(2)
	tests := []struct {
		bytes int64
		want  string
	}{{4, "oneshot"}, {16, "oneshot"}, {20, "tree"}, {4096, "tree"}, {4097, "ring"}, {1 << 20, "twoshot"}, {1 << 50, "twoshot"}}
	for _, tc := range tests {
		if got := tab.Pick(tc.bytes); got != tc.want {
			t.Errorf("Pick(%d) = %q, want %q", tc.bytes, got, tc.want)
		}
	}
	if x := tab.Crossovers(); len(x) != 3 || x[0].AfterBytes != 16 || x[2].To != "twoshot" {
		t.Errorf("Crossovers() = %+v", x)
	}
	if _, err := NewGroup("auto", 3, GroupOptions{Auto: tab}); err == nil {
		t.Errorf("NewGroup(auto, 3) with a 2-rank table succeeded")
	}
}

// The Calibrating hook fires around a sweep that runs, and not for a table
// read from the cache.
func TestCalibratingHook(t *testing.T) {
	var calls []bool
	opts := GroupOptions{CacheDir: t.TempDir(), CalibrationBudget: 1,
		Calibrating: func(_ string, done bool) { calls = append(calls, done) }}
	for i, want := range [][]bool{{false, true}, nil} {
		calls = nil
		if _, err := LoadOrCalibrate(context.Background(), 2, opts); err != nil {
			t.Fatal(err)
		}
		if len(calls) != len(want) || (len(want) == 2 && (calls[0] != false || calls[1] != true)) {
			t.Errorf("LoadOrCalibrate call %d: Calibrating called with %v, want %v", i+1, calls, want)
		}
	}
}
