package widgets

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Matrix is a labelled text grid whose cells may be tinted (the GPU
// topology matrix). Each cell shows Text and, smaller, Sub.
type Matrix struct {
	widget.BaseWidget
	Title string
	Empty string
	rows  []string
	cols  []string
	cells [][]Cell
}

// Cell is one matrix entry.
type Cell struct {
	Text string
	Sub  string
	Tint color.Color // background; nil for none
}

// NewMatrix returns an empty matrix.
func NewMatrix(title string) *Matrix {
	m := &Matrix{Title: title, Empty: "no data"}
	m.ExtendBaseWidget(m)
	return m
}

// Set copies the grid in: cells[r][c] for row label rows[r], column cols[c].
func (m *Matrix) Set(rows, cols []string, cells [][]Cell) {
	m.rows, m.cols = append(m.rows[:0], rows...), append(m.cols[:0], cols...)
	m.cells = m.cells[:0]
	for _, r := range cells {
		m.cells = append(m.cells, append([]Cell(nil), r...))
	}
}

// CreateRenderer implements fyne.Widget.
func (m *Matrix) CreateRenderer() fyne.WidgetRenderer {
	return newRenderer(func() fyne.Size {
		n := float32(len(m.cols) + 1)
		return fyne.NewSize(max(200, n*52), titleSize()+14+float32(len(m.rows)+1)*34)
	}, m.draw)
}

func (m *Matrix) draw(sc *scene, size fyne.Size) {
	ls, ts := labelSize(), titleSize()
	sc.text(m.Title, 0, 0, ts, fg(), fyne.TextAlignLeading, true)
	top := ts + 14
	if len(m.rows) == 0 || len(m.cols) == 0 {
		sc.text(m.Empty, size.Width/2, top+10, ls, dim(), fyne.TextAlignCenter, false)
		return
	}
	cw := min(size.Width/float32(len(m.cols)+1), 110)
	ch := min((size.Height-top)/float32(len(m.rows)+1), 48)
	for c, name := range m.cols {
		sc.text(name, cw*float32(c+1)+cw/2, top+ch/2-ls/2, ls, dim(), fyne.TextAlignCenter, true)
	}
	for r, name := range m.rows {
		y := top + ch*float32(r+1)
		sc.text(name, cw/2, y+ch/2-ls/2, ls, dim(), fyne.TextAlignCenter, true)
		for c := range m.cols {
			if r >= len(m.cells) || c >= len(m.cells[r]) {
				continue
			}
			cell := m.cells[r][c]
			x := cw * float32(c+1)
			if cell.Tint != nil {
				sc.rect(x+1, y+1, cw-2, ch-2, cell.Tint)
			}
			ty := y + ch/2 - ls/2
			if cell.Sub != "" {
				ty = y + ch/2 - ls
			}
			sc.text(cell.Text, x+cw/2, ty, ts*0.9, fg(), fyne.TextAlignCenter, true)
			if cell.Sub != "" {
				sc.text(cell.Sub, x+cw/2, ty+ts, ls*0.9, fg(), fyne.TextAlignCenter, false)
			}
		}
	}
}
