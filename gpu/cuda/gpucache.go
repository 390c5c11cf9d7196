package cuda

// The GPU allreduce calibration cache (auto's tables inside a step), read
// and checked on the host: no CUDA needed, so it is tested everywhere.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"rigscope/engine/tp"
	"rigscope/internal/safefile"
)

func rulesOf(a *tp.AutoTable) string {
	if a == nil {
		return ""
	}
	return fmt.Sprint(a.Rules)
}

// gpuCache is the GPU allreduce calibration cache: auto's tables per
// (ranks, hidden size), valid for one machine, GPU and build.
type gpuCache struct {
	Machine string                   `json:"machine"`
	Build   string                   `json:"build"`
	Tables  map[string]*tp.AutoTable `json:"tables"`
}

func gpuCachePath(dir, machine string) (string, error) {
	p, err := tp.CachePath(dir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(machine))
	return filepath.Join(filepath.Dir(p), "gpu-allreduce-"+hex.EncodeToString(sum[:6])+".json"), nil
}

// readGPUCache returns the cache when it is this machine's and build's,
// else nil and why not (a missing file is not worth a warning).
func readGPUCache(path, machine string) (*gpuCache, string) {
	data, err := safefile.ReadFile(path, "GPU allreduce calibration", 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	bad := func(why string) (*gpuCache, string) {
		if e := os.Rename(path, path+".bad"); e == nil {
			why += "; moved it to " + path + ".bad"
		}
		return nil, why + "; measuring again"
	}
	if err != nil {
		return bad(err.Error())
	}
	cf := new(gpuCache)
	if err := json.Unmarshal(data, cf); err != nil {
		return bad(fmt.Sprintf("GPU allreduce calibration %s is corrupt (%v)", path, err))
	}
	if cf.Machine != machine {
		return nil, fmt.Sprintf("GPU allreduce calibration %s was made on another machine or GPU (%s; this is %s); measuring again", path, cf.Machine, machine)
	}
	if b := tp.BuildKey(); cf.Build != b {
		return nil, fmt.Sprintf("GPU allreduce calibration %s was made by another build (%s; this is %s); measuring again", path, cf.Build, b)
	}
	for k, a := range cf.Tables {
		if a == nil || len(a.Rules) == 0 {
			return bad(fmt.Sprintf("GPU allreduce calibration %s: table %s has no rules", path, k))
		}
		for i, r := range a.Rules {
			if !slices.Contains(stepCandidates, r.Backend) || r.MaxBytes <= 0 || i > 0 && r.MaxBytes <= a.Rules[i-1].MaxBytes {
				return bad(fmt.Sprintf("GPU allreduce calibration %s: table %s rule %d (%s up to %d bytes) is not one auto can use", path, k, i, r.Backend, r.MaxBytes))
			}
		}
	}
	if cf.Tables == nil {
		cf.Tables = map[string]*tp.AutoTable{}
	}
	return cf, ""
}

// stepCandidates are the backends auto picks from inside a step.
var stepCandidates = []string{"oneshot", "twoshot", "host"}
