package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/internal/safefile"
)

// runLogLimit bounds one run log the planner reads.
const runLogLimit = 64 << 20

// maxLogs bounds how many run logs one read looks at (the newest).
const maxLogs = 500

// logConfig is the part of a run's logged RunConfig the planner reads.
type logConfig struct {
	Drafter struct {
		Kind string `json:"kind"`
		Path string `json:"path"`
		K    int    `json:"k"`
		Tree int    `json:"tree"`
	} `json:"drafter"`
}

// ReadRunLogs adds to b the steps of every complete speculative run of
// model (its path as the engine logs it; "" = any) in the run logs
// (*.jsonl) of dir, the newest maxLogs files. Files that are not regular
// or not run logs are skipped and named in the returned notes.
func ReadRunLogs(b *Book, dir, model string) (runs int, notes []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("planner: run logs: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".jsonl") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names) // run ids start with their time
	if len(names) > maxLogs {
		names = names[len(names)-maxLogs:]
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		if _, err := safefile.CheckFile(path, "run log", runLogLimit); err != nil {
			notes = append(notes, fmt.Sprintf("skipped %s: %v", path, err))
			continue
		}
		events, err := metrics.ReadRunLog(path)
		if err != nil {
			notes = append(notes, fmt.Sprintf("skipped %s: %v", path, err))
			continue
		}
		recs, err := metrics.Runs(events)
		if err != nil {
			notes = append(notes, fmt.Sprintf("skipped %s: %v", path, err))
			continue
		}
		for _, r := range recs {
			if AddRecord(b, r, model) {
				runs++
			}
		}
	}
	return runs, notes, nil
}

// AddRecord adds one logged run to b if it is a complete, error-free run
// of model ("" = any): every such run's loop time per step (AddLoop), and
// a speculative run's steps to the acceptance model; it reports whether
// the run was speculative and added.
func AddRecord(b *Book, r metrics.RunRecord, model string) bool {
	if !r.Complete || r.Err != "" || (model != "" && r.Model != "" && r.Model != model) {
		return false
	}
	var c logConfig
	if json.Unmarshal(r.Config, &c) != nil {
		return false
	}
	if c.Drafter.Kind == "" && c.Drafter.Path != "" {
		c.Drafter.Kind = "model" // --draft alone
	}
	if c.Drafter.Kind == "" || c.Drafter.Kind == "none" {
		b.AddLoop(ranOnGPU(r), "none", 0, r.Steps)
		return false
	}
	d := c.Drafter
	if d.K == 0 {
		d.K = engine.DefaultK // a logged config keeps the run's zero (the default)
	}
	key := Config{Drafter: d.Kind, DrafterPath: d.Path}.DrafterKey()
	b.AddLoop(ranOnGPU(r), key, d.K, r.Steps)
	b.AddRun(key, d.K, d.Tree, r.Steps)
	return true
}
