package ui

import (
	"encoding/json"
	"os"
	"sort"
	"sync"
	"time"

	"rigscope/engine/tp"
	"rigscope/internal/safefile"
)

// calibrationFile is the allreduce calibration cache as engine/tp writes it
// (tp.LoadOrCalibrate): one auto table per group size, for one machine and
// build.
type calibrationFile struct {
	Machine string                `json:"machine"`
	Build   string                `json:"build"`
	Tables  map[int]*tp.AutoTable `json:"tables"`
}

// calibrationReader reads the calibration cache for the latency-vs-size
// chart, at most once a second and only again when the file changed, so a
// calibration made during the session shows at once.
type calibrationReader struct {
	path string // "" = tp.CachePath("")

	mu      sync.Mutex
	checked time.Time
	mod     time.Time
	size    int64
	tables  map[int]*tp.AutoTable
}

// curves returns every backend's measured curve from the table for ranks
// (the largest table when there is none for ranks); nil without a cache
// made on this machine by this build.
func (c *calibrationReader) curves(ranks int) []Curve {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= time.Second {
		c.checked = now
		c.reload()
	}
	t := c.tables[ranks]
	if t == nil {
		best := 0
		for r, tt := range c.tables {
			if r > best && tt != nil {
				best, t = r, tt
			}
		}
	}
	if t == nil {
		return nil
	}
	return CurvesFromTable(t)
}

func (c *calibrationReader) reload() {
	path := c.path
	if path == "" {
		p, err := tp.CachePath("")
		if err != nil {
			c.tables = nil
			return
		}
		path = p
	}
	st, err := os.Stat(path)
	if err != nil {
		c.tables, c.mod, c.size = nil, time.Time{}, 0
		return
	}
	if st.ModTime().Equal(c.mod) && st.Size() == c.size {
		return
	}
	c.mod, c.size = st.ModTime(), st.Size()
	data, err := safefile.ReadFile(path, "calibration cache", 1<<20)
	if err != nil {
		c.tables = nil
		return
	}
	var f calibrationFile
	if json.Unmarshal(data, &f) != nil || f.Machine != tp.MachineKey() || f.Build != tp.BuildKey() {
		c.tables = nil // another machine's or build's figures are not this one's
		return
	}
	c.tables = f.Tables
}

// CurvesFromTable turns a calibration table's measured points into one
// latency-vs-size curve per backend, backends in name order.
func CurvesFromTable(t *tp.AutoTable) []Curve {
	idx := map[string]int{}
	var out []Curve
	for _, p := range t.Points {
		i, ok := idx[p.Backend]
		if !ok {
			i = len(out)
			idx[p.Backend] = i
			out = append(out, Curve{Backend: p.Backend})
		}
		out[i].Points = append(out[i].Points, CurvePoint{Bytes: p.Bytes, Latency: time.Duration(p.TimeUs * float64(time.Microsecond))})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Backend < out[b].Backend })
	for i := range out {
		sort.Slice(out[i].Points, func(a, b int) bool { return out[i].Points[a].Bytes < out[i].Points[b].Bytes })
	}
	return out
}
