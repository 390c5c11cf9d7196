package ui

import (
	"encoding/json"

	"fmt"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"rigscope/engine/metrics"
)

// maxLoadedRuns bounds how many earlier runs the runs table reads back at
// start (the newest logs).
const maxLoadedRuns = 200

// LoadRunLogs reads back the runs the engine logged in dir (one JSONL run
// log per run, metrics.ReadRunLog), newest last, at most limit of the most
// recent. A log that cannot be read is skipped and counted in skipped; a
// run cut off mid-way (no run_end) is kept, with its error saying so.
func LoadRunLogs(dir string, limit int) (runs []*RunRecord, skipped int, err error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("run logs: %w", err)
	}
	type logFile struct {
		path string
		mod  int64
	}
	var logs []logFile
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		logs = append(logs, logFile{filepath.Join(dir, e.Name()), info.ModTime().UnixNano()})
	}
	sort.Slice(logs, func(a, b int) bool { return logs[a].mod < logs[b].mod })
	if len(logs) > limit {
		logs = logs[len(logs)-limit:]
	}
	for _, l := range logs {
		evs, rerr := metrics.ReadRunLog(l.path)
		if rerr != nil && len(evs) == 0 {
			skipped++
			continue
		}
		recs, rerr := metrics.Runs(evs)
		if rerr != nil {
			skipped++
			continue
		}
		for _, m := range recs {
			r, cerr := recordFromLog(m, l.path)
			if cerr != nil {
				skipped++
				continue
			}
			runs = append(runs, r)
		}
	}
	return runs, skipped, nil
}

// recordFromLog turns a run read back from its log into the runs table's
// record.
func recordFromLog(m metrics.RunRecord, path string) (*RunRecord, error) {
	r := &RunRecord{Model: m.Model, Started: m.Started, Err: m.Err, LogPath: path, Steps: m.Steps, FromLog: true}
	if len(m.Config) > 0 {
		if err := json.Unmarshal(m.Config, &r.Config); err != nil {
			return nil, fmt.Errorf("run %s: config: %w", m.RunID, err)
		}
	}
	if len(m.Stats) > 0 {
		if err := json.Unmarshal(m.Stats, &r.Stats); err != nil {
			return nil, fmt.Errorf("run %s: stats: %w", m.RunID, err)
		}
	}
	r.Stats.RunID = m.RunID
	if !m.Complete {
		r.Stats.StopReason = "cut off"
		if r.Err == "" {
			r.Err = "the log ends before the run did (the program stopped mid-run)"
		}
	}
	return r, nil
}

// Notes on runs are kept in the preferences, by run id.
const prefRunNotes = "run_notes"

// loadNotes reads the saved run notes.
func loadNotes(raw string) map[string]string {
	notes := map[string]string{}
	if raw != "" {
		_ = json.Unmarshal([]byte(raw), &notes) // unreadable notes start empty
	}
	return notes
}

func saveNotes(notes map[string]string) string {
	b, err := json.Marshal(notes)
	if err != nil {
		return ""
	}
	return string(b)
}

// loadEarlierRuns reads the run logs of earlier sessions into the runs
// table, off the UI goroutine.
func (p *Panel) loadEarlierRuns() {
	dir := p.opts.RunLogDir
	if dir == "" {
		return
	}
	notes := loadNotes(p.app.Preferences().String(prefRunNotes))
	go func() {
		runs, skipped, err := LoadRunLogs(dir, maxLoadedRuns)
		p.post(func() {
			if err != nil {
				p.Runs.hint.SetText("earlier runs not read: " + err.Error())
				return
			}
			for i, r := range runs {
				r.ID = i + 1 - len(runs) // 0 and below: before this session's runs
				r.Note = notes[r.runLogID()]
			}
			p.Runs.Prepend(runs)
			if skipped > 0 {
				p.Runs.hint.SetText(fmt.Sprintf("%d earlier runs read back from %s (%d logs unreadable)", len(runs), dir, skipped))
			} else if len(runs) > 0 {
				p.Runs.hint.SetText(fmt.Sprintf("%d earlier runs read back from %s", len(runs), dir))
			}
		})
	}()
}

// addRun lists a finished run with its saved note, if any.
func (p *Panel) addRun(rec *RunRecord) {
	rec.Note = loadNotes(p.app.Preferences().String(prefRunNotes))[rec.runLogID()]
	p.Runs.Add(rec)
}

// editNote asks for a note on runs and saves it by run id.
func (p *Panel) editNote(runs []*RunRecord) {
	e := widget.NewEntry()
	e.SetText(runs[0].Note)
	e.SetPlaceHolder("e.g. after the BIOS update")
	dialog.ShowForm(fmt.Sprintf("Note on %d run(s)", len(runs)), "Save", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("note", e)}, func(ok bool) {
			if !ok {
				return
			}
			notes := loadNotes(p.app.Preferences().String(prefRunNotes))
			for _, r := range runs {
				r.Note = strings.TrimSpace(e.Text)
				if r.Note == "" {
					delete(notes, r.runLogID())
				} else {
					notes[r.runLogID()] = r.Note
				}
			}
			p.app.Preferences().SetString(prefRunNotes, saveNotes(notes))
			p.Runs.Refresh()
		}, p.win)
}
