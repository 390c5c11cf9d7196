package planner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"rigscope/engine"
	"rigscope/engine/tp"
)

func TestCacheRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c, warn, err := LoadCache(dir)
	if err != nil || warn != "" || !strings.Contains(c.Note, "no planner calibration") {
		t.Fatalf("LoadCache(empty) = %+v, %q, %v", c, warn, err)
	}
	in := cpuInputs()
	c.AllReduce, c.Compute, c.Draft = *in.AllReduce, *in.Compute, *in.Draft
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	back, warn, err := LoadCache(dir)
	if err != nil || warn != "" || len(back.AllReduce.Points) != len(c.AllReduce.Points) || !strings.HasPrefix(back.Note, "from ") {
		t.Fatalf("LoadCache after Save = %d points, note %q, warn %q, err %v", len(back.AllReduce.Points), back.Note, warn, err)
	}
}

// TestBadCacheIsRepaired: a cache that cannot be right is moved aside
// with a warning and the tables start empty; one from another machine or
// build is redone with a note; none of them is fatal.
func TestBadCacheIsRepaired(t *testing.T) {
	good := func() Cache {
		in := cpuInputs()
		return Cache{Format: cacheFormat, Machine: tp.MachineKey(), Build: buildKey(), AllReduce: *in.AllReduce, Compute: *in.Compute, Draft: *in.Draft}
	}
	write := func(t *testing.T, path string, c Cache) {
		data, _ := json.Marshal(c)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		moved bool
		note  string
	}{
		{"corrupt", func(t *testing.T, p string) { os.WriteFile(p, []byte("{not json"), 0o600) }, true, ""},
		{"directory", func(t *testing.T, p string) { os.Mkdir(p, 0o700) }, true, ""},
		{"fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}, true, ""},
		{"too large", func(t *testing.T, p string) { os.WriteFile(p, make([]byte, cacheLimit+1), 0o600) }, true, ""},
		{"negative time", func(t *testing.T, p string) {
			c := good()
			data, _ := json.Marshal(c)
			data = []byte(strings.Replace(string(data), `"v":10,`, `"v":-10,`, 1))
			os.WriteFile(p, data, 0o600)
		}, true, ""},
		{"lo above v", func(t *testing.T, p string) {
			c := good()
			c.Compute.Points[0].WallUs = Range{5, 9, 10}
			write(t, p, c)
		}, true, ""},
		{"unknown backend", func(t *testing.T, p string) {
			c := good()
			c.AllReduce.Points[0].Backend = "teleport"
			write(t, p, c)
		}, true, ""},
		{"auto as a measured backend", func(t *testing.T, p string) {
			c := good()
			c.AllReduce.Points[0].Backend = "auto"
			write(t, p, c)
		}, true, ""},
		{"one rank", func(t *testing.T, p string) {
			c := good()
			c.AllReduce.Points[0].Ranks = 1
			write(t, p, c)
		}, true, ""},
		{"k 99", func(t *testing.T, p string) {
			c := good()
			c.Draft.Points[0].K = 99
			write(t, p, c)
		}, true, ""},
		{"another machine", func(t *testing.T, p string) {
			c := good()
			c.Machine = "host=elsewhere"
			write(t, p, c)
		}, false, "another machine"},
		{"another build", func(t *testing.T, p string) {
			c := good()
			c.Build = "planner-calibration/0 go1.1"
			write(t, p, c)
		}, false, "another build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, err := CachePath(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.make(t, path)
			c, warn, err := LoadCache(dir)
			if err != nil {
				t.Fatalf("LoadCache: %v (a bad cache must not be fatal)", err)
			}
			if n := len(c.AllReduce.Points) + len(c.Compute.Points) + len(c.Draft.Points); n != 0 {
				t.Errorf("kept %d points from a cache that cannot be used", n)
			}
			_, statErr := os.Lstat(path + ".bad")
			if tc.moved != (statErr == nil) || tc.moved != strings.Contains(warn, "moved it to") {
				t.Errorf("moved aside = %v (warning %q), want %v", statErr == nil, warn, tc.moved)
			}
			if tc.note != "" && !strings.Contains(c.Note, tc.note) {
				t.Errorf("note %q, want it to say %q", c.Note, tc.note)
			}
			if err := c.Save(); err != nil { // and the next save works
				t.Errorf("Save after repair: %v", err)
			}
		})
	}
}

func FuzzLoadCache(f *testing.F) {
	in := cpuInputs()
	good, _ := json.Marshal(Cache{Format: cacheFormat, Machine: tp.MachineKey(), Build: buildKey(), AllReduce: *in.AllReduce, Compute: *in.Compute})
	f.Add(good)
	f.Add([]byte(`{"format":"planner-calibration/1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path, _ := CachePath(dir)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, _, err := LoadCache(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.validate(); err != nil {
			t.Fatalf("LoadCache kept an invalid cache: %v", err)
		}
		// Whatever it kept predicts without panicking.
		in := Inputs{Shape: in.Shape, AllReduce: &c.AllReduce, Compute: &c.Compute, Draft: &c.Draft, Accept: &Book{}}
		for _, cfg := range (Grid{Device: "cpu", TP: []int{1, 2}, Backends: []string{"ring", "oneshot"}, Drafters: []string{"none", "ngram"}, K: []int{2}}).Configs() {
			p := Predict(in, cfg)
			if p.OK() && !p.TokS.valid() {
				t.Fatalf("Predict(%s) = %+v", cfg, p.TokS)
			}
		}
	})
}

// TestMeasureSynthetic runs the calibration through a real engine on a
// synthetic model: every missing measurement is measured, cached, and
// the predictions then complete.
func TestMeasureSynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("times forwards")
	}
	ctx := context.Background()
	e, err := engine.Open(ctx, "synthetic:tiny", engine.Options{CtxLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	info := e.Info()
	shape := ShapeOf(info.Path, info.DType, info.Config, 4)
	c, _, err := LoadCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var book Book
	in := Inputs{Shape: shape, AllReduce: &c.AllReduce, Compute: &c.Compute, Draft: &c.Draft, Accept: &book, Fits: e.CheckFit}
	grid := Grid{Device: "cpu", TP: []int{1, 2}, Backends: []string{"ring", "compressed"}, Drafters: []string{"none", "ngram"}, K: []int{2}}
	preds := Plan(in, grid.Configs())
	if len(MissingOf(preds)) == 0 {
		t.Fatal("an empty cache predicted everything")
	}
	if err := Measure(ctx, c, e, shape, nil, preds, Calibration{Reps: 2}); err != nil {
		t.Fatal(err)
	}
	preds = Plan(in, grid.Configs())
	for _, p := range preds {
		if !p.OK() || p.TokS.V <= 0 || !p.TokS.valid() {
			t.Errorf("after Measure, %s: %+v missing %v unfit %q", p.Config, p.TokS, p.Missing, p.Unfit)
		}
		if p.Config.Speculative() && !p.Acceptance.Default {
			t.Errorf("%s: acceptance %q, want the default (no runs logged)", p.Config, p.Acceptance.Source)
		}
	}
	// Every backend's forward was timed, and its allreduce calls are the
	// shape's.
	for _, b := range []string{"ring", "compressed"} {
		if _, m := c.Compute.Lookup(shape.Key, "cpu", 2, b, 3); m != nil {
			t.Errorf("no timed forward with %s: %s", b, m)
		}
	}
	for _, cp := range c.Compute.Points {
		if cp.TP > 1 && cp.Calls != shape.AllReduces() {
			t.Errorf("TP %d forward of %d tokens made %d allreduce calls, the shape says %d", cp.TP, cp.Tokens, cp.Calls, shape.AllReduces())
		}
	}
	if _, err := os.Stat(filepath.Clean(c.Path)); err != nil {
		t.Errorf("cache not saved: %v", err)
	}
}
