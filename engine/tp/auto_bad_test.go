package tp

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A bad calibration cache is named in a warning, moved aside to PATH.bad
// and measured again; the run it belongs to never fails for it.
func TestBadCalibrationCacheIsRepaired(t *testing.T) {
	good := func() *cacheFile {
		return &cacheFile{Machine: MachineKey(), Build: BuildKey(), Tables: map[int]*AutoTable{
			2: {Ranks: 2, Rules: []AutoRule{{1 << 10, "oneshot"}, {1 << 20, "ring"}}, Points: []CalibPoint{{1 << 10, "ring", 3}}},
		}}
	}
	rule := func(f func(*AutoTable)) func(string) error {
		return func(path string) error {
			cf := good()
			f(cf.Tables[2])
			return writeCache(path, cf)
		}
	}
	for _, tc := range []struct {
		name  string
		make  func(path string) error
		inMsg string
	}{
		{"bogus backend", rule(func(t *AutoTable) { t.Rules[0].Backend = "warp-drive" }), `"warp-drive"`},
		{"auto", rule(func(t *AutoTable) { t.Rules[1].Backend = "auto" }), `"auto"`},
		{"compressed", rule(func(t *AutoTable) { t.Rules[0].Backend = "compressed" }), `"compressed"`},
		{"compressed-bf16", rule(func(t *AutoTable) { t.Rules[0].Backend = "compressed-bf16" }), `"compressed-bf16"`},
		{"nccl on CPU", rule(func(t *AutoTable) { t.Rules[0].Backend = "nccl" }), `"nccl"`},
		{"ranks mismatch", rule(func(t *AutoTable) { t.Ranks = 4 }), "says 4 ranks"},
		{"sizes out of order", rule(func(t *AutoTable) { t.Rules[1].MaxBytes = 10 }), "sizes must increase"},
		{"no rules", rule(func(t *AutoTable) { t.Rules = nil }), "no rules"},
		{"negative time", rule(func(t *AutoTable) { t.Points[0].TimeUs = -1 }), "not a measurement"},
		{"corrupt", func(p string) error { return os.WriteFile(p, []byte(`{"tables":`), 0o600) }, "corrupt"},
		{"null table", func(p string) error {
			cf := good()
			b, _ := json.Marshal(cf)
			return os.WriteFile(p, []byte(strings.Replace(string(b), `"2":{`, `"3":null,"2":{`, 1)), 0o600)
		}, "null"},
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "FIFO"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "character device"},
		{"too large", func(p string) error { return os.WriteFile(p, make([]byte, cacheLimit+1), 0o600) }, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warned []string
			opts := GroupOptions{CacheDir: t.TempDir(), CalibrationBudget: 1, Warn: func(m string) { warned = append(warned, m) }}
			path, err := CachePath(opts.CacheDir)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			tab, err := LoadOrCalibrate(context.Background(), 2, opts)
			if err != nil {
				t.Fatalf("LoadOrCalibrate with a bad cache failed: %v", err)
			}
			if tab.Source != "measured" {
				t.Errorf("source %q, want measured", tab.Source)
			}
			if len(warned) != 1 || !strings.Contains(warned[0], path) || !strings.Contains(warned[0], tc.inMsg) || !strings.Contains(warned[0], path+".bad") {
				t.Errorf("warnings %q; want one naming %s, %s.bad and %q", warned, path, path, tc.inMsg)
			}
			if _, err := os.Lstat(path + ".bad"); err != nil {
				t.Errorf("bad cache not moved aside: %v", err)
			}
			// The repaired cache is used as is next time.
			warned = nil
			if tab, err := LoadOrCalibrate(context.Background(), 2, opts); err != nil || tab.Source != "cache" || len(warned) != 0 {
				t.Errorf("after repair: source %v, err %v, warnings %q; want the cache, no warning", tab.Source, err, warned)
			}
		})
	}
	// The good cache itself is accepted.
	opts := GroupOptions{CacheDir: t.TempDir()}
	path, _ := CachePath(opts.CacheDir)
	os.MkdirAll(opts.CacheDir, 0o700)
	if err := writeCache(path, good()); err != nil {
		t.Fatal(err)
	}
	if tab, err := LoadOrCalibrate(context.Background(), 2, opts); err != nil || tab.Source != "cache" {
		t.Errorf("good cache: source %v, err %v", tab.Source, err)
	}
}

// FuzzReadCache: any bytes as the calibration cache are either refused
// (and then moved aside) or give tables an auto group can be built from.
func FuzzReadCache(f *testing.F) {
	good, _ := json.Marshal(&cacheFile{Machine: MachineKey(), Build: BuildKey(), Tables: map[int]*AutoTable{
		2: {Ranks: 2, Rules: []AutoRule{{1 << 10, "oneshot"}, {1 << 20, "ring"}}, Points: []CalibPoint{{1 << 10, "ring", 3}}},
	}})
	f.Add(good)
	f.Add([]byte(`{"tables":{"2":null}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := dir + "/cache.json"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cf, why, bad := readCache(path)
		if cf == nil {
			if why == "" {
				t.Fatalf("refused without a reason")
			}
			return
		}
		if bad {
			t.Fatalf("accepted and bad: %s", why)
		}
		for ranks, tab := range cf.Tables {
			_, err := NewGroup("auto", ranks, GroupOptions{Auto: tab})
			if err != nil {
				t.Fatalf("accepted table for %d ranks cannot build a group: %v", ranks, err)
			}
		}
	})
}
