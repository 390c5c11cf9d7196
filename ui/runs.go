package ui

import (
	"fmt"
	"slices"
	"strconv"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"
)

// runsColumns are the columns of the runs table: a title and how to show a
// run (values come from RunRow, so the table and the CSV export agree).
var runsColumns = []struct {
	title string
	width float32
	cell  func(r *RunRecord, row []string) string
}{
	{"#", 40, func(_ *RunRecord, row []string) string { return row[0] }},
	{"allreduce", 90, func(_ *RunRecord, row []string) string { return row[3] }},
	{"TP", 40, func(_ *RunRecord, row []string) string { return row[4] }},
	{"drafter", 80, func(r *RunRecord, row []string) string {
		if r.Config.Drafter.Kind == DrafterNone {
			return row[5]
		}
		return row[5] + " k=" + row[6]
	}},
	{"T", 45, func(_ *RunRecord, row []string) string { return row[8] }},
	{"tok/s", 80, func(_ *RunRecord, row []string) string { return row[13] }},
	{"tokens", 65, func(_ *RunRecord, row []string) string { return row[12] }},
	{"accept len", 85, func(_ *RunRecord, row []string) string { return row[17] }},
	{"AR p50 µs", 85, func(_ *RunRecord, row []string) string { return row[18] }},
	{"AR p99 µs", 85, func(_ *RunRecord, row []string) string { return row[19] }},
	{"bytes moved", 95, func(r *RunRecord, _ []string) string { return humanize.IBytes(uint64(r.BytesMoved)) }},
	{"stop", 90, func(_ *RunRecord, row []string) string { return row[15] }},
}

// RunsView is the runs table with up to two runs selected for comparison
// and the export buttons.
type RunsView struct {
	Root fyne.CanvasObject

	table   *widget.Table
	compare *fyne.Container
	hint    *widget.Label
	runs    []*RunRecord
	rows    [][]string // RunRow of each run, computed once
	picked  []int      // indexes into runs, at most two, oldest pick first

	// OnExport is called with the runs to export (the selection or all).
	OnExport func(runs []*RunRecord)
}

// NewRunsView returns an empty runs table.
func NewRunsView() *RunsView {
	v := &RunsView{}
	v.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.runs), len(runsColumns) },
		func() fyne.CanvasObject { return widget.NewLabel("0000000000") },
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
	bar := container.NewHBox(exportSel, exportAll, v.hint)
	split := container.NewVSplit(v.table, container.NewVScroll(v.compare))
	split.Offset = 0.55
	v.Root = container.NewBorder(bar, nil, nil, nil, split)
	return v
}

// Add appends a finished run.
func (v *RunsView) Add(r *RunRecord) {
	v.runs = append(v.runs, r)
	v.rows = append(v.rows, RunRow(r))
	v.table.Refresh()
}

// Runs returns every run, oldest first.
func (v *RunsView) Runs() []*RunRecord { return slices.Clone(v.runs) }

// Cell is the text the table shows at (row, col).
func (v *RunsView) Cell(row, col int) string {
	if row < 0 || row >= len(v.runs) || col < 0 || col >= len(runsColumns) {
		return ""
	}
	return runsColumns[col].cell(v.runs[row], v.rows[row])
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

// refreshCompare lays the picked runs side by side, one row per summary
// field, with the relative change of numeric fields when two are picked.
func (v *RunsView) refreshCompare() {
	v.compare.RemoveAll()
	if len(v.picked) == 0 {
		v.hint.SetText("Click runs to select up to two and compare them side by side.")
		return
	}
	v.hint.SetText(fmt.Sprintf("%d selected", len(v.picked)))
	cols := 1 + len(v.picked)
	if len(v.picked) == 2 {
		cols++
	}
	grid := container.NewGridWithColumns(cols)
	grid.Add(heading("field"))
	for _, p := range v.picked {
		grid.Add(heading(fmt.Sprintf("run %d", v.runs[p].ID)))
	}
	if len(v.picked) == 2 {
		grid.Add(heading("change"))
	}
	for f, name := range RunsCSVHeader {
		if name == "run_id" || name == "started" || name == "error" {
			continue
		}
		grid.Add(widget.NewLabel(name))
		for _, p := range v.picked {
			grid.Add(widget.NewLabel(v.rows[p][f]))
		}
		if len(v.picked) == 2 {
			grid.Add(widget.NewLabel(change(v.rows[v.picked[0]][f], v.rows[v.picked[1]][f])))
		}
	}
	v.compare.Add(grid)
}

// change is the relative change from a to b when both are numbers.
func change(a, b string) string {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	switch {
	case err1 != nil || err2 != nil:
		if a == b {
			return "="
		}
		return "≠"
	case x == y:
		return "="
	case x == 0:
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", 100*(y-x)/x)
}
