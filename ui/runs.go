package ui

import (
	"fmt"
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// runsColumns are the columns of the runs table: a short title, a width
// and the run field shown (its human text: runFields, the same figures the
// CSV export carries raw).
var runsColumns = []struct {
	title string
	width float32
	field int // index into runFields
}{
	{"#", 40, fieldIndex("run_id")},
	{"time", 100, fieldIndex("time")},
	{"model", 115, fieldIndex("model")},
	{"allreduce", 100, fieldIndex("allreduce")},
	{"TP", 35, fieldIndex("tp")},
	{"drafter", 90, fieldIndex("drafter")},
	{"speed", 105, fieldIndex("decode_tokens_per_s")},
	{"tokens", 60, fieldIndex("generated_tokens")},
	{"accept len", 125, fieldIndex("mean_accept_len")},
	{"verdict", 150, fieldIndex("verdict")},
	{"AR p50", 75, fieldIndex("allreduce_p50_us")},
	{"AR p99", 75, fieldIndex("allreduce_p99_us")},
	{"stop", 95, fieldIndex("stop_reason")},
	{"note", 90, fieldIndex("note")},
}

// RunsView is the runs table with up to two runs selected for comparison
// and the export buttons.
type RunsView struct {
	Root fyne.CanvasObject

	table   *widget.Table
	compare *fyne.Container
	hint    *widget.Label
	runs    []*RunRecord
	picked  []int // indexes into runs, at most two, oldest pick first

	// OnExport is called with the runs to export (the selection or all).
	OnExport func(runs []*RunRecord)
	// OnNote is called when the user edits the note of the selected runs.
	OnNote func(runs []*RunRecord)
}

// NewRunsView returns an empty runs table.
func NewRunsView() *RunsView {
	v := &RunsView{}
	v.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.runs), len(runsColumns) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("0000000000")
			l.Truncation = fyne.TextTruncateEllipsis // the compare view shows it whole
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) {
			l := o.(*widget.Label)
			l.SetText(v.Cell(id.Row, id.Col))
			l.TextStyle.Bold = slices.Contains(v.picked, id.Row)
			l.Refresh()
		})
	v.table.ShowHeaderColumn = false
	v.table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("header") }
	v.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		if id.Row < 0 && id.Col >= 0 {
			l.SetText(runsColumns[id.Col].title)
			l.TextStyle.Bold = true
		}
	}
	for i, c := range runsColumns {
		v.table.SetColumnWidth(i, c.width)
	}
	v.table.OnSelected = func(id widget.TableCellID) {
		v.Toggle(id.Row)
		v.table.UnselectAll()
	}
	v.hint = widget.NewLabel("Click runs to select up to two and compare them side by side.")
	v.compare = container.NewVBox()
	exportSel := widget.NewButton("Export selected…", func() {
		if v.OnExport != nil && len(v.picked) > 0 {
			v.OnExport(v.Selected())
		}
	})
	exportAll := widget.NewButton("Export all…", func() {
		if v.OnExport != nil && len(v.runs) > 0 {
			v.OnExport(v.Runs())
		}
	})
	note := widget.NewButton("Note…", func() {
		if v.OnNote != nil && len(v.picked) > 0 {
			v.OnNote(v.Selected())
		}
	})
	bar := container.NewHBox(exportSel, exportAll, note, v.hint)
	split := container.NewVSplit(v.table, container.NewVScroll(v.compare))
	split.Offset = 0.55
	v.Root = container.NewBorder(bar, nil, nil, nil, split)
	return v
}

// Add appends a finished run.
func (v *RunsView) Add(r *RunRecord) {
	v.runs = append(v.runs, r)
	v.table.Refresh()
}

// Prepend lists earlier runs (read back from their logs) before the
// session's.
func (v *RunsView) Prepend(runs []*RunRecord) {
	v.runs = append(slices.Clone(runs), v.runs...)
	for i := range v.picked {
		v.picked[i] += len(runs)
	}
	v.table.Refresh()
}

// Refresh redraws the table and the comparison (a note changed).
func (v *RunsView) Refresh() {
	v.table.Refresh()
	v.refreshCompare()
}

// MaxID is the highest run number in the table.
func (v *RunsView) MaxID() int {
	n := 0
	for _, r := range v.runs {
		n = max(n, r.ID)
	}
	return n
}

// Runs returns every run, oldest first.
func (v *RunsView) Runs() []*RunRecord { return slices.Clone(v.runs) }

// Cell is the text the table shows at (row, col).
func (v *RunsView) Cell(row, col int) string {
	if row < 0 || row >= len(v.runs) || col < 0 || col >= len(runsColumns) {
		return ""
	}
	return runFields[runsColumns[col].field].text(v.runs[row])
}

// Toggle adds row to the comparison, or removes it if already there; a
// third pick drops the oldest.
func (v *RunsView) Toggle(row int) {
	if row < 0 || row >= len(v.runs) {
		return
	}
	if i := slices.Index(v.picked, row); i >= 0 {
		v.picked = slices.Delete(v.picked, i, i+1)
	} else {
		v.picked = append(v.picked, row)
		if len(v.picked) > 2 {
			v.picked = v.picked[1:]
		}
	}
	v.table.Refresh()
	v.refreshCompare()
}

// Selected returns the picked runs in pick order.
func (v *RunsView) Selected() []*RunRecord {
	out := make([]*RunRecord, len(v.picked))
	for i, p := range v.picked {
		out[i] = v.runs[p]
	}
	return out
}

// refreshCompare lays the picked runs side by side, one row per figure
// named in words, with how the second differs from the first (better or
// worse where the figure has a direction) when two are picked.
func (v *RunsView) refreshCompare() {
	v.compare.RemoveAll()
	if len(v.picked) == 0 {
		v.hint.SetText("Click runs to select up to two and compare them side by side.")
		return
	}
	v.hint.SetText(fmt.Sprintf("%d selected", len(v.picked)))
	runs := v.Selected()
	cols := 1 + len(runs)
	if len(runs) == 2 {
		cols++
	}
	grid := container.NewGridWithColumns(cols)
	grid.Add(heading("figure"))
	for _, r := range runs {
		grid.Add(heading(runName(r)))
	}
	if len(runs) == 2 {
		grid.Add(heading(fmt.Sprintf("%s vs %s", runName(runs[1]), runName(runs[0]))))
	}
	for _, f := range runFields {
		if f.csv == "run_id" || f.csv == "started" || f.csv == "time" || f.csv == "allreduce_used" {
			continue
		}
		grid.Add(widget.NewLabel(f.words))
		for _, r := range runs {
			grid.Add(widget.NewLabel(f.text(r)))
		}
		if len(runs) == 2 {
			grid.Add(widget.NewLabel(change(f, runs[0], runs[1])))
		}
	}
	v.compare.Add(grid)
}

// runName names a run in the compare view: its number in this session, or
// for a run read back from its log, when it ran.
func runName(r *RunRecord) string {
	if r.FromLog {
		return "run of " + r.Started.Local().Format("Jan 2 15:04")
	}
	return fmt.Sprintf("run %d", r.ID)
}
