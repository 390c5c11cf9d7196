package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"rigscope/engine/metrics"
	"rigscope/engine/tp"
	"rigscope/internal/safefile"
)

// cacheFormat changes when what the cache holds or how it is measured
// changes, so an older build's cache is redone.
const cacheFormat = "planner-calibration/2"

// cacheLimit bounds the cache file (a full grid's is tens of KB).
const cacheLimit = 8 << 20

// maxPoints bounds each table read from a cache.
const maxPoints = 100000

// Cache is the planner's measurements on this machine and build: the
// allreduce, compute and draft tables.
type Cache struct {
	Format    string         `json:"format"`
	Machine   string         `json:"machine"`
	Build     string         `json:"build"`
	AllReduce AllReduceTable `json:"allreduce"`
	Compute   ComputeTable   `json:"compute"`
	Draft     DraftTable     `json:"draft"`
	// Auto is a device's auto tables, imported with its allreduce table
	// (CPU ranks' come from engine/tp's own calibration cache).
	Auto []DeviceAuto `json:"auto,omitempty"`

	// Path is the file; Note says where the tables came from (read, or
	// why they are being measured again).
	Path string `json:"-"`
	Note string `json:"-"`
}

// CachePath is the planner's cache file beside the allreduce calibration
// cache: dir, else $RIGSCOPE_CACHE_DIR, else the user cache folder's
// rigscope, one file per machine.
func CachePath(dir string) (string, error) {
	p, err := tp.CachePath(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "planner-"+strings.TrimPrefix(filepath.Base(p), "allreduce-")), nil
}

func buildKey() string { return cacheFormat + " " + tp.BuildKey() }

// LoadCache reads the cache in dir (see CachePath). A missing cache, or one
// made on another machine or by another build, gives empty tables and a
// Note that says so (they are measured again). A bad cache (not a regular
// file, too large, corrupt, or holding values that cannot be
// measurements) is never fatal: it is moved aside to PATH.bad and named in
// warn, and the tables start empty.
func LoadCache(dir string) (c *Cache, warn string, err error) {
	path, err := CachePath(dir)
	if err != nil {
		return nil, "", err
	}
	fresh := &Cache{Format: cacheFormat, Machine: tp.MachineKey(), Build: buildKey(), Path: path}
	data, err := safefile.ReadFile(path, "planner calibration cache", cacheLimit)
	if errors.Is(err, fs.ErrNotExist) {
		fresh.Note = "no planner calibration at " + path
		return fresh, "", nil
	}
	if err != nil {
		return fresh, moveAside(path, err.Error()), nil
	}
	c = new(Cache)
	if err := json.Unmarshal(data, c); err != nil {
		return fresh, moveAside(path, fmt.Sprintf("planner calibration cache %s is corrupt (%v)", path, err)), nil
	}
	switch {
	case c.Machine != fresh.Machine:
		fresh.Note = fmt.Sprintf("planner calibration %s was made on another machine (%s; this is %s), so none of it is used; it is measured again here", path, c.Machine, fresh.Machine)
		return fresh, "", nil
	case c.Format != cacheFormat || c.Build != fresh.Build:
		fresh.Note = fmt.Sprintf("planner calibration %s was made by another build (%s; this is %s), so none of it is used; it is measured again here", path, c.Build, fresh.Build)
		return fresh, "", nil
	}
	if err := c.validate(); err != nil {
		return fresh, moveAside(path, fmt.Sprintf("planner calibration cache %s is invalid (%v)", path, err)), nil
	}
	c.Path, c.Note = path, "from "+path
	return c, "", nil
}

// moveAside renames a bad cache to PATH.bad and returns the warning.
func moveAside(path, why string) string {
	aside := path + ".bad"
	if err := os.Rename(path, aside); err != nil {
		return fmt.Sprintf("%s; could not move it aside (%v); measuring again", why, err)
	}
	return fmt.Sprintf("%s; moved it to %s and measuring again", why, aside)
}

// Save writes the cache atomically.
func (c *Cache) Save() error {
	data, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return fmt.Errorf("planner cache: %w", err)
	}
	if err := metrics.WriteFileAtomic(c.Path, data); err != nil {
		return fmt.Errorf("planner cache: %w", err)
	}
	return nil
}

// validate checks every point is a measurement the planner could have
// made: known exact names, sizes in range, finite non-negative times with
// lo <= v <= hi.
func (c *Cache) validate() error {
	if n := len(c.AllReduce.Points) + len(c.Compute.Points) + len(c.Draft.Points); n > 3*maxPoints {
		return fmt.Errorf("%d points; a cache holds at most %d", n, 3*maxPoints)
	}
	for i, p := range c.AllReduce.Points {
		switch {
		case p.Device == "":
			return fmt.Errorf("allreduce point %d names no device", i)
		case p.Ranks < 2 || p.Ranks > tp.MaxRanks:
			return fmt.Errorf("allreduce point %d: %d ranks, a group has 2 to %d", i, p.Ranks, tp.MaxRanks)
		case p.Backend == "auto" || p.Device == "cpu" && tp.CheckBackend(p.Backend) != nil:
			return fmt.Errorf("allreduce point %d names backend %q, which is not a measured CPU backend", i, p.Backend)
		case p.Device != "cpu" && !slices.Contains(GPUBackends, p.Backend):
			return fmt.Errorf("allreduce point %d names backend %q, which is not a GPU backend", i, p.Backend)
		case p.Bytes <= 0 || p.Bytes > 1<<40:
			return fmt.Errorf("allreduce point %d: message of %d bytes", i, p.Bytes)
		case !p.Us.valid():
			return fmt.Errorf("allreduce point %d: time %+v us is not a measurement", i, p.Us)
		}
	}
	for i, p := range c.Compute.Points {
		switch {
		case p.Model == "" || p.Device == "":
			return fmt.Errorf("compute point %d names no model or device", i)
		case p.TP < 1 || p.TP > tp.MaxRanks:
			return fmt.Errorf("compute point %d: TP %d outside 1..%d", i, p.TP, tp.MaxRanks)
		case p.TP > 1 && (p.Backend == "" || p.Backend == "auto"):
			return fmt.Errorf("compute point %d: TP %d timed with backend %q", i, p.TP, p.Backend)
		case p.Tokens < 1 || p.Tokens > 1+16*8:
			return fmt.Errorf("compute point %d: batch of %d tokens", i, p.Tokens)
		case !p.WallUs.valid() || !p.AllReduceUs.valid() || p.Calls < 0:
			return fmt.Errorf("compute point %d: times %+v / %+v us are not measurements", i, p.WallUs, p.AllReduceUs)
		}
	}
	for i, a := range c.Auto {
		if a.Device == "" || a.Table == nil {
			return fmt.Errorf("auto table %d names no device or has no table", i)
		}
		if err := checkAuto(a.Table, a.Table.Ranks); err != nil {
			return fmt.Errorf("auto table %d: %w", i, err)
		}
	}
	for i, p := range c.Draft.Points {
		switch {
		case p.Drafter == "" || p.Device == "":
			return fmt.Errorf("draft point %d names no drafter or device", i)
		case p.K < 1 || p.K > 16 || p.Tree < 0 || p.Tree > 8:
			return fmt.Errorf("draft point %d: k=%d tree=%d", i, p.K, p.Tree)
		case !p.Us.valid():
			return fmt.Errorf("draft point %d: time %+v us is not a measurement", i, p.Us)
		}
	}
	return nil
}

// clone is a deep copy.
func (c *Cache) clone() *Cache {
	d := *c
	d.AllReduce.Points = slices.Clone(c.AllReduce.Points)
	d.Compute.Points = slices.Clone(c.Compute.Points)
	d.Draft.Points = slices.Clone(c.Draft.Points)
	d.Auto = slices.Clone(c.Auto)
	return &d
}

// putAllReduce adds or replaces a point.
func (c *Cache) putAllReduce(p AllReducePoint) {
	c.AllReduce.Points = put(c.AllReduce.Points, p, func(q AllReducePoint) bool {
		return q.Device == p.Device && q.Ranks == p.Ranks && q.Backend == p.Backend && q.Bytes == p.Bytes
	})
}

func (c *Cache) putCompute(p ComputePoint) {
	c.Compute.Points = put(c.Compute.Points, p, func(q ComputePoint) bool {
		return q.Model == p.Model && q.Device == p.Device && q.TP == p.TP && q.Backend == p.Backend && q.Tokens == p.Tokens
	})
}

func (c *Cache) putDraft(p DraftPoint) {
	c.Draft.Points = put(c.Draft.Points, p, func(q DraftPoint) bool {
		return q.Drafter == p.Drafter && q.Device == p.Device && q.K == p.K && q.Tree == p.Tree
	})
}

// putAuto adds or replaces a device's auto table for its group size.
func (c *Cache) putAuto(a DeviceAuto) {
	c.Auto = put(c.Auto, a, func(q DeviceAuto) bool {
		return q.Device == a.Device && q.Step == a.Step && q.Table.Ranks == a.Table.Ranks
	})
}

// put replaces the first point same matches with p, or appends p.
func put[P any](points []P, p P, same func(P) bool) []P {
	if i := slices.IndexFunc(points, same); i >= 0 {
		points[i] = p
		return points
	}
	return append(points, p)
}
