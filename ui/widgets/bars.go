package widgets

import (
	"image/color"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// BarSeries is one named set of bar heights, one per category.
type BarSeries struct {
	Name   string
	Values []float64
	Color  color.Color
}

// BarHistogram draws categories along x with the series' bars side by side
// in each (e.g. this run's and the previous run's histogram).
type BarHistogram struct {
	widget.BaseWidget
	Title      string
	Format     Formatter // y values
	XLabel     string
	Categories []string
	Empty      string
	series     []BarSeries
	Ref        float64 // a horizontal reference line when > 0
	RefLabel   string
}

// NewBarHistogram returns an empty histogram.
func NewBarHistogram(title, xLabel string, format Formatter) *BarHistogram {
	b := &BarHistogram{Title: title, XLabel: xLabel, Format: format, Empty: "no data yet"}
	b.ExtendBaseWidget(b)
	return b
}

// Set copies categories and series in; it does not refresh.
func (b *BarHistogram) Set(categories []string, series []BarSeries) {
	b.Categories = append(b.Categories[:0], categories...)
	b.series = b.series[:0]
	for _, s := range series {
		s.Values = append([]float64(nil), s.Values...)
		b.series = append(b.series, s)
	}
}

// CreateRenderer implements fyne.Widget.
func (b *BarHistogram) CreateRenderer() fyne.WidgetRenderer {
	return newRenderer(func() fyne.Size { return fyne.NewSize(240, 160) }, b.draw)
}

// legend draws swatch+name pairs right-aligned on the title row when they
// fit beside the title, else in rows under it that wrap at right; it
// returns the height it added under the title row.
func legend(sc *scene, title string, names []string, colors []color.Color, right float32, swatch func(x, y float32, c color.Color)) float32 {
	ls, ts := labelSize(), titleSize()
	widths := make([]float32, len(names))
	width := float32(0)
	for i, n := range names {
		widths[i] = fyne.MeasureText(n, ls, fyne.TextStyle{}).Width + 24
		width += widths[i]
	}
	titleW := fyne.MeasureText(title, ts, fyne.TextStyle{Bold: true}).Width
	if titleW+12+width <= right { // one row, right-aligned beside the title
		x := right
		for i := len(names) - 1; i >= 0; i-- {
			w := sc.text(names[i], x, 2, ls, fg(), fyne.TextAlignTrailing, false).Width
			x -= w + 4
			swatch(x, 2, colors[i])
			x -= 20
		}
		return 0
	}
	// Rows under the title, left to right, wrapping inside the widget so
	// that no entry is cut off at either edge.
	y, x, rows := ts+6, float32(0), float32(1)
	for i, n := range names {
		if x > 0 && x+widths[i] > right {
			x, y, rows = 0, y+ls+6, rows+1
		}
		swatch(x+14, y, colors[i])
		sc.text(n, x+18, y, ls, fg(), fyne.TextAlignLeading, false)
		x += widths[i]
	}
	return rows * (ls + 6)
}

// boxSwatch is the legend mark of bar charts.
func boxSwatch(sc *scene) func(x, y float32, c color.Color) {
	return func(x, y float32, c color.Color) { sc.rect(x-10, y+2, 10, labelSize()-2, c) }
}

// emptyPlot shades the plot band [top, bottom) and centres msg in it.
func emptyPlot(sc *scene, msg string, size fyne.Size, top, bottom, ls float32) {
	sc.rect(0, top, size.Width, max(bottom-top, 1), fade(gridCol(), 40))
	sc.text(msg, size.Width/2, (top+bottom)/2-ls/2, ls, dim(), fyne.TextAlignCenter, false)
}

// valueAxis draws the gridlines and labels of a vertical axis from 0 to
// hi (rounded up to nice ticks) over [top, bottom) and returns the plot's
// left and right edges and the value-to-y scale.
func valueAxis(sc *scene, format Formatter, hi float64, size fyne.Size, top, bottom, ls float32) (left, right float32, ys scale) {
	ticks, rr := NiceTicks(Range{0, hi}, 4)
	for _, t := range ticks {
		left = max(left, fyne.MeasureText(format(t), ls, fyne.TextStyle{}).Width)
	}
	left += 6
	right = size.Width - 2
	ys = scale{r: Range{0, rr.Max}, p0: bottom, p1: top}
	for _, t := range ticks {
		y := ys.at(t)
		sc.line(left, y, right, y, gridCol(), 1)
		sc.text(format(t), left-4, y-ls/2-1, ls, dim(), fyne.TextAlignTrailing, false)
	}
	return left, right, ys
}

func (b *BarHistogram) draw(sc *scene, size fyne.Size) {
	ls, ts := labelSize(), titleSize()
	sc.text(b.Title, 0, 0, ts, fg(), fyne.TextAlignLeading, true)
	names, cols := make([]string, len(b.series)), make([]color.Color, len(b.series))
	var all []float64
	for i, s := range b.series {
		names[i], cols[i] = s.Name, s.Color
		all = append(all, s.Values...)
	}
	extra := legend(sc, b.Title, names, cols, size.Width, boxSwatch(sc))
	top, bottom := ts+14+extra, size.Height-ls-6
	if b.XLabel != "" {
		bottom -= ls + 2
	}
	r, ok := dataRange(append(all, b.Ref))
	if !ok || len(b.Categories) == 0 || r.Max <= 0 || bottom-top < 20 {
		emptyPlot(sc, b.Empty, size, top, bottom, ls)
		return
	}
	left, right, ys := valueAxis(sc, orPlain(b.Format), r.Max, size, top, bottom, ls)
	n := len(b.Categories)
	slot := (right - left) / float32(n)
	groupW := min(slot*0.8, 70*float32(max(len(b.series), 1)))
	barW := groupW / float32(max(len(b.series), 1))
	for c := 0; c < n; c++ {
		x0 := left + float32(c)*slot + (slot-groupW)/2
		for s, ser := range b.series {
			if c >= len(ser.Values) || math.IsNaN(ser.Values[c]) {
				continue
			}
			y := ys.at(ser.Values[c])
			sc.rect(x0+float32(s)*barW, y, max(barW-1, 1), bottom-y, ser.Color)
		}
		if slot >= fyne.MeasureText(b.Categories[c], ls, fyne.TextStyle{}).Width+2 || c%max(1, int(40/slot)) == 0 {
			sc.text(b.Categories[c], left+float32(c)*slot+slot/2, bottom+2, ls, dim(), fyne.TextAlignCenter, false)
		}
	}
	sc.line(left, bottom, right, bottom, dim(), 1)
	if b.Ref > 0 {
		y := ys.at(b.Ref)
		dashed(sc, left, y, right, y, fg())
		sc.text(b.RefLabel, left+4, y-ls-5, ls, fg(), fyne.TextAlignLeading, false)
	}
	if b.XLabel != "" {
		sc.text(b.XLabel, (left+right)/2, bottom+ls+4, ls, dim(), fyne.TextAlignCenter, false)
	}
}

// StackedBars draws one bar per x position, split into named segments
// (e.g. draft, verify, allreduce, other per step).
type StackedBars struct {
	widget.BaseWidget
	Title    string
	Format   Formatter // y values
	XLabel   string
	Segments []string      // segment names, bottom first
	Colors   []color.Color // one per segment
	Empty    string
	bars     [][]float64 // (bar, segment)
}

// NewStackedBars returns an empty chart with the given segments.
func NewStackedBars(title, xLabel string, segments []string, format Formatter) *StackedBars {
	s := &StackedBars{Title: title, XLabel: xLabel, Segments: segments, Format: format, Empty: "no steps yet"}
	for i := range segments {
		s.Colors = append(s.Colors, SeriesColor(i))
	}
	s.ExtendBaseWidget(s)
	return s
}

// Set copies bars (bar, segment) in, reusing storage; it does not refresh.
func (s *StackedBars) Set(bars [][]float64) {
	for len(s.bars) < len(bars) {
		s.bars = append(s.bars, nil)
	}
	s.bars = s.bars[:len(bars)]
	for i, b := range bars {
		s.bars[i] = append(s.bars[i][:0], b...)
	}
}

// CreateRenderer implements fyne.Widget.
func (s *StackedBars) CreateRenderer() fyne.WidgetRenderer {
	return newRenderer(func() fyne.Size { return fyne.NewSize(280, 160) }, s.draw)
}

func (s *StackedBars) draw(sc *scene, size fyne.Size) {
	ls, ts := labelSize(), titleSize()
	sc.text(s.Title, 0, 0, ts, fg(), fyne.TextAlignLeading, true)
	extra := legend(sc, s.Title, s.Segments, s.Colors, size.Width, boxSwatch(sc))
	top, bottom := ts+14+extra, size.Height-ls-6
	if s.XLabel != "" {
		bottom -= ls + 2
	}
	hi := 0.0
	for _, b := range s.bars {
		t := 0.0
		for _, v := range b {
			if v > 0 {
				t += v
			}
		}
		hi = math.Max(hi, t)
	}
	if hi <= 0 || bottom-top < 20 {
		emptyPlot(sc, s.Empty, size, top, bottom, ls)
		return
	}
	left, right, ys := valueAxis(sc, orPlain(s.Format), hi, size, top, bottom, ls)
	slot := (right - left) / float32(len(s.bars))
	gap := min(slot*0.2, 2)
	for i, b := range s.bars {
		x := left + float32(i)*slot
		acc := 0.0
		for j, v := range b {
			if v <= 0 || j >= len(s.Colors) {
				continue
			}
			y0, y1 := ys.at(acc), ys.at(acc+v)
			sc.rect(x, y1, max(slot-gap, 1), y0-y1, s.Colors[j])
			acc += v
		}
	}
	sc.line(left, bottom, right, bottom, dim(), 1)
	if s.XLabel != "" {
		sc.text(s.XLabel, (left+right)/2, bottom+4, ls, dim(), fyne.TextAlignCenter, false)
	}
}
