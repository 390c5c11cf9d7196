package cuda

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rigscope/engine/tp"
)

// A GPU calibration is used only on the machine, GPU and build that made
// it; anything else is measured again with a message, and a file that is
// not a calibration is moved aside.
func TestReadGPUCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gpu-allreduce.json")
	good := &tp.AutoTable{Ranks: 2, Rules: []tp.AutoRule{{MaxBytes: 16384, Backend: "oneshot"}, {MaxBytes: 65536, Backend: "twoshot"}}}
	write := func(c any) {
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const here = "host=a gpu=\"NVIDIA H200\""
	for _, tc := range []struct {
		name    string
		content any // nil: no file; string: raw bytes
		ok      bool
		why     string
		aside   bool
	}{
		{"missing", nil, false, "", false},
		{"this machine", gpuCache{Machine: here, Build: tp.BuildKey(), Tables: map[string]*tp.AutoTable{"2x4096": good}}, true, "", false},
		{"another machine", gpuCache{Machine: "host=b gpu=\"NVIDIA A100\"", Build: tp.BuildKey()}, false, "another machine or GPU", false},
		{"another build", gpuCache{Machine: here, Build: "old"}, false, "another build", false},
		{"corrupt", "{not json", false, "corrupt", true},
		{"a CPU backend", gpuCache{Machine: here, Build: tp.BuildKey(), Tables: map[string]*tp.AutoTable{"2x4096": {Rules: []tp.AutoRule{{MaxBytes: 10, Backend: "ring"}}}}}, false, "not one auto can use", true},
		{"no rules", gpuCache{Machine: here, Build: tp.BuildKey(), Tables: map[string]*tp.AutoTable{"2x4096": {}}}, false, "no rules", true},
	} {
		os.Remove(path)
		os.Remove(path + ".bad")
		switch c := tc.content.(type) {
		case nil:
		case string:
			if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			write(c)
		}
		cf, why := readGPUCache(path, here)
		if (cf != nil) != tc.ok || !strings.Contains(why, tc.why) || tc.why == "" && why != "" {
			t.Errorf("%s: cache %v, why %q; want ok=%v and a reason saying %q", tc.name, cf != nil, why, tc.ok, tc.why)
		}
		if _, err := os.Stat(path + ".bad"); (err == nil) != tc.aside {
			t.Errorf("%s: moved aside = %v, want %v", tc.name, err == nil, tc.aside)
		}
	}
}
