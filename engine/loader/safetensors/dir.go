package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"rigscope/engine/tensor"
)

// IndexName and SingleName are the file names OpenDir looks for.
const (
	IndexName  = "model.safetensors.index.json"
	SingleName = "model.safetensors"
)

// Model is the set of safetensors files of one model directory.
type Model struct {
	Dir    string
	Files  []*File
	byName map[string]*File // tensor name -> file holding it
}

// OpenDir opens dir/model.safetensors.index.json and its shards when the
// index exists, else dir/model.safetensors.
func OpenDir(dir string) (*Model, error) {
	m := &Model{Dir: dir, byName: map[string]*File{}}
	idxPath := filepath.Join(dir, IndexName)
	idx, err := os.ReadFile(idxPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err := Open(filepath.Join(dir, SingleName))
		if err != nil {
			return nil, err
		}
		m.add(f)
		return m, nil
	case err != nil:
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(idx, &index); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", idxPath, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: empty weight_map", idxPath)
	}
	shards := map[string]*File{}
	names := make([]string, 0, len(index.WeightMap))
	for name := range index.WeightMap {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		shard := index.WeightMap[name]
		if shard == "" || filepath.Base(shard) != shard || strings.HasPrefix(shard, ".") {
			m.Close()
			return nil, fmt.Errorf("safetensors: %s: tensor %q: shard %q is not a file name in the directory", idxPath, name, shard)
		}
		f, ok := shards[shard]
		if !ok {
			f, err = Open(filepath.Join(dir, shard))
			if err != nil {
				m.Close()
				return nil, err
			}
			shards[shard] = f
			m.Files = append(m.Files, f)
		}
		if _, ok := f.Info(name); !ok {
			m.Close()
			return nil, fmt.Errorf("safetensors: %s: tensor %q is listed in %s but absent from the shard", f.Path, name, IndexName)
		}
	}
	for _, f := range m.Files {
		for _, ti := range f.Tensors {
			if prev, dup := m.byName[ti.Name]; dup {
				m.Close()
				return nil, fmt.Errorf("safetensors: tensor %q is in both %s and %s", ti.Name, prev.Path, f.Path)
			}
			m.byName[ti.Name] = f
		}
	}
	return m, nil
}

func (m *Model) add(f *File) {
	m.Files = append(m.Files, f)
	for _, ti := range f.Tensors {
		m.byName[ti.Name] = f
	}
}

// Has reports whether a tensor exists in any shard.
func (m *Model) Has(name string) bool { _, ok := m.byName[name]; return ok }

// Info returns a tensor's description.
func (m *Model) Info(name string) (TensorInfo, bool) {
	f, ok := m.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Info(name)
}

// Names lists every tensor name, sorted.
func (m *Model) Names() []string {
	out := make([]string, 0, len(m.byName))
	for n := range m.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Tensor returns the named tensor from whichever shard holds it.
func (m *Model) Tensor(name string) (*tensor.Tensor, error) {
	f, ok := m.byName[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: no tensor %q", m.Dir, name)
	}
	return f.Tensor(name)
}

// Raw returns any tensor's bytes (see File.Raw).
func (m *Model) Raw(name string) (TensorInfo, []byte, error) {
	f, ok := m.byName[name]
	if !ok {
		return TensorInfo{}, nil, fmt.Errorf("safetensors: %s: no tensor %q", m.Dir, name)
	}
	return f.Raw(name)
}

// Close closes every shard.
func (m *Model) Close() error {
	var errs []error
	for _, f := range m.Files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// FP8Tensor returns the named F8_E4M3 tensor without scales (see
// File.FP8Tensor).
func (m *Model) FP8Tensor(name string) (*tensor.Tensor, error) {
	f, ok := m.byName[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %s: no tensor %q", m.Dir, name)
	}
	return f.FP8Tensor(name)
}
