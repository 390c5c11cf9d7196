package main

// The files and folders the hostile cases are made of (see hostile_test.go).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/tp"
	"rigscope/internal/sysmem"
)

// hostileDir is one case's scratch folder and the fixtures it builds from.
type hostileDir struct {
	t      *testing.T
	dir    string
	models string
}

func (d *hostileDir) path(name string) string { return filepath.Join(d.dir, name) }

func (d *hostileDir) model(rel string) string { return filepath.Join(d.models, rel) }

func (d *hostileDir) fifo(name string) string {
	p := d.path(name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		d.t.Fatal(err)
	}
	return p
}

func (d *hostileDir) link(name, target string) string {
	p := d.path(name)
	if err := os.Symlink(target, p); err != nil {
		d.t.Fatal(err)
	}
	return p
}

func (d *hostileDir) write(name string, b []byte) string {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		d.t.Fatal(err)
	}
	return p
}

// hf builds a Hugging Face folder from gocoder-14m-hf: every file linked,
// except those in files (written with that content; a nil value makes a
// FIFO, the string "->/dev/zero" a link to it).
func (d *hostileDir) hf(files map[string][]byte) string {
	dir := d.path("hf")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		d.t.Fatal(err)
	}
	src := d.model("gocoder-14m-hf")
	entries, err := os.ReadDir(src)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok {
			d.link("hf/"+e.Name(), filepath.Join(src, e.Name()))
		}
	}
	for name, b := range files {
		switch {
		case b == nil:
			d.fifo("hf/" + name)
		case string(b) == "->/dev/zero":
			d.link("hf/"+name, "/dev/zero")
		default:
			d.write("hf/"+name, b)
		}
	}
	return dir
}

// config returns gocoder-14m-hf's config.json with edit applied.
func (d *hostileDir) config(edit func(map[string]any)) []byte {
	var c map[string]any
	b, err := os.ReadFile(d.model("gocoder-14m-hf/config.json"))
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	edit(c)
	out, err := json.Marshal(c)
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}

// tokenizerJSON is a minimal byte-level BPE tokenizer.json with n tokens
// and the given merges.
func tokenizerJSON(n int, merges []string) []byte {
	vocab := map[string]int{}
	for i := range n {
		vocab[fmt.Sprintf("t%d", i)] = i
	}
	vocab["t"], vocab["0"] = 0, 1 // keep ids < n; a merge "t 0" is valid
	m := map[string]any{"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
		"pre_tokenizer": map[string]any{"type": "ByteLevel"}}
	b, _ := json.Marshal(m)
	return b
}

// gguf copies gocoder-14m.Q8_0.gguf with patch applied to its bytes.
func (d *hostileDir) gguf(patch func(data []byte) []byte) string {
	b, err := os.ReadFile(d.model("gocoder-14m.Q8_0.gguf"))
	if err != nil {
		d.t.Fatal(err)
	}
	return d.write("m.gguf", patch(b))
}

// ggufFloatKV overwrites the float32 value of a metadata key.
func ggufFloatKV(t *testing.T, key string, v float32) func([]byte) []byte {
	return func(b []byte) []byte {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			t.Fatalf("gguf: no key %s", key)
		}
		at := i + len(key)
		if typ := binary.LittleEndian.Uint32(b[at:]); typ != 6 { // GGUF_TYPE_FLOAT32
			t.Fatalf("gguf: %s has type %d, not float32", key, typ)
		}
		binary.LittleEndian.PutUint32(b[at+4:], math.Float32bits(v))
		return b
	}
}

// ggufRelabelF32 relabels the first Q8_0 tensor whose bytes as F32 would
// still lie inside the file.
func ggufRelabelF32(t *testing.T) func([]byte) []byte {
	return func(b []byte) []byte {
		f, err := gguf.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range f.Tensors {
			elems := uint64(1)
			for _, s := range ti.Shape {
				elems *= uint64(s)
			}
			if ti.Type != gguf.GGMLType(8) || f.DataOffset+ti.Offset+4*elems > uint64(len(b)) { // 8 = GGML_TYPE_Q8_0
				continue
			}
			at := bytes.Index(b[:f.DataOffset], []byte(ti.Name))
			if at < 0 {
				continue
			}
			at += len(ti.Name)
			nd := int(binary.LittleEndian.Uint32(b[at:]))
			binary.LittleEndian.PutUint32(b[at+4+8*nd:], 0) // GGML_TYPE_F32
			return b
		}
		t.Fatal("gguf: no Q8_0 tensor to relabel")
		return nil
	}
}

// cache writes a calibration cache for 2 ranks (with this binary's
// machine and build keys) with edit applied, in the case's cache folder.
func (d *hostileDir) cache(edit func(rules []map[string]any, table map[string]any)) {
	rules := []map[string]any{{"max_bytes": 1024, "backend": "oneshot"}, {"max_bytes": 4 << 20, "backend": "ring"}}
	table := map[string]any{"ranks": 2, "rules": rules, "points": []any{}}
	edit(rules, table)
	cf := map[string]any{"machine": tp.MachineKey(), "build": tp.BuildKey(), "tables": map[string]any{"2": table}}
	b, _ := json.Marshal(cf)
	d.write(filepath.Base(d.cachePath()), b)
}

func (d *hostileDir) cachePath() string {
	p, err := tp.CachePath(d.dir)
	if err != nil {
		d.t.Fatal(err)
	}
	return p
}

// cacheRepaired checks that the bad cache was moved aside and a good one
// written in its place.
func cacheRepaired(t *testing.T, d *hostileDir) {
	p := d.cachePath()
	if _, err := os.Lstat(p + ".bad"); err != nil {
		t.Errorf("the bad cache was not moved aside: %v", err)
	}
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("no recalibrated cache at %s: %v", p, err)
	}
}

// memoryHogLayers returns a layer count for synthetic:llama-8b whose
// weights and KV cache exceed this machine's available memory, or why the
// case cannot be made here.
func memoryHogLayers() (int, string) {
	avail, err := sysmem.Available()
	if err != nil {
		return 256, "no MemAvailable here: the memory check does not apply"
	}
	const perLayer = 218_000_000 * 2 // llama-8b: parameters per layer, bf16
	for layers := 8; layers <= 256; layers *= 2 {
		if int64(layers)*perLayer > avail+avail/4 {
			return layers, ""
		}
	}
	return 256, "this machine has " + sysmem.GiB(avail) + " available; synthetic:llama-8b at 256 layers fits"
}

func cmdArgs(args ...string) func(*hostileDir) []string {
	return func(*hostileDir) []string { return args }
}

func tpRun(d *hostileDir) []string {
	return []string{"generate", "--model", "synthetic:tiny", "--prompt-ids", "1,2,3", "--max-tokens", "3", "--tp", "2", "--allreduce", "auto"}
}

func cacheRun(edit func(rules []map[string]any, table map[string]any)) func(d *hostileDir) []string {
	return func(d *hostileDir) []string {
		d.cache(edit)
		return tpRun(d)
	}
}
