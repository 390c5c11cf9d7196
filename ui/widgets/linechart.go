package widgets

import (
	"image/color"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Point is one (x, y) datum; NaN y breaks the line.
type Point struct{ X, Y float64 }

// Line is one named series of a LineChart.
type Line struct {
	Name   string
	Points []Point // x ascending
	Color  color.Color
	Dashed bool
	Bold   bool // drawn thicker: the series in use
}

// Marker is a labelled vertical line at X (e.g. a crossover).
type Marker struct {
	X     float64
	Label string
}

// Axis configures one axis of a LineChart.
type Axis struct {
	Label   string
	Format  Formatter
	Log     bool    // logarithmic scale; values <= 0 are dropped
	LogBase float64 // tick spacing on a log axis (default 10)
	Min     float64 // with Fixed: the shown range
	Max     float64
	Fixed   bool
	Zero    bool // a linear axis always includes 0
}

// LineChart draws lines over linear or logarithmic axes, with vertical
// markers, a legend and a caption for when there is nothing to draw.
type LineChart struct {
	widget.BaseWidget
	Title   string
	X, Y    Axis
	Empty   string // shown when there are no points
	lines   []Line
	markers []Marker
}

// NewLineChart returns an empty chart.
func NewLineChart(title string, x, y Axis) *LineChart {
	c := &LineChart{Title: title, X: x, Y: y, Empty: "no data yet"}
	c.ExtendBaseWidget(c)
	return c
}

// Set copies lines and markers in; it does not refresh.
func (c *LineChart) Set(lines []Line, markers []Marker) {
	c.lines = c.lines[:0]
	for _, l := range lines {
		l.Points = append([]Point(nil), l.Points...)
		c.lines = append(c.lines, l)
	}
	c.markers = append(c.markers[:0], markers...)
}

// CreateRenderer implements fyne.Widget.
func (c *LineChart) CreateRenderer() fyne.WidgetRenderer {
	return newRenderer(func() fyne.Size { return fyne.NewSize(280, 170) }, c.draw)
}

func (c *LineChart) axisScale(a Axis, vals []float64, p0, p1 float32) (scale, []float64) {
	if a.Log {
		pos := vals[:0:0]
		for _, v := range vals {
			if v > 0 {
				pos = append(pos, v)
			}
		}
		vals = pos
	}
	r, ok := dataRange(vals)
	if a.Fixed {
		r, ok = Range{a.Min, a.Max}, true
	}
	if !ok {
		return scale{invalid: true}, nil
	}
	if a.Zero && !a.Log {
		r.Min = math.Min(r.Min, 0)
		if r.Max <= r.Min { // all zero: show 0 to 1, never below zero
			r.Max = r.Min + 1
		}
	}
	format := orPlain(a.Format)
	var ticks []float64
	switch {
	case a.Log:
		base := a.LogBase
		if base <= 1 {
			base = 10
		}
		ticks, r = LogTicks(r, base, 6)
		for len(ticks) < 3 && base > 2.01 { // a narrow range: finer powers
			base = math.Sqrt(base)
			ticks, r = LogTicks(r, base, 6)
		}
	case a.Fixed:
		ticks, _ = NiceTicks(r, 5)
		kept := ticks[:0]
		for _, t := range ticks {
			if t >= r.Min-1e-12 && t <= r.Max+1e-12 {
				kept = append(kept, t)
			}
		}
		ticks = kept
	default:
		// Fewer ticks until every label differs (a formatter that rounds,
		// e.g. to whole seconds, would otherwise repeat labels).
		all := r
		for n := 5; n >= 2; n-- {
			ticks, r = NiceTicks(all, n)
			if distinctLabels(ticks, format) {
				break
			}
		}
	}
	return scale{r: r, log: a.Log, p0: p0, p1: p1}, ticks
}

// distinctLabels says whether no two ticks format to the same label.
func distinctLabels(ticks []float64, f Formatter) bool {
	seen := map[string]bool{}
	for _, t := range ticks {
		l := f(t)
		if seen[l] {
			return false
		}
		seen[l] = true
	}
	return true
}

// TickLabels returns the labels the chart draws on its x and y axes for its
// current data (tests).
func (c *LineChart) TickLabels() (x, y []string) {
	var xs, ys []float64
	for _, l := range c.lines {
		for _, p := range l.Points {
			if !math.IsNaN(p.Y) {
				xs, ys = append(xs, p.X), append(ys, p.Y)
			}
		}
	}
	_, xt := c.axisScale(c.X, xs, 0, 1)
	_, yt := c.axisScale(c.Y, ys, 1, 0)
	for _, t := range xt {
		x = append(x, orPlain(c.X.Format)(t))
	}
	for _, t := range yt {
		y = append(y, orPlain(c.Y.Format)(t))
	}
	return x, y
}

func (c *LineChart) draw(sc *scene, size fyne.Size) {
	ls, ts := labelSize(), titleSize()
	sc.text(c.Title, 0, 0, ts, fg(), fyne.TextAlignLeading, true)
	names, cols := make([]string, len(c.lines)), make([]color.Color, len(c.lines))
	for i, l := range c.lines {
		names[i], cols[i] = l.Name, l.Color
	}
	extra := legend(sc, c.Title, names, cols, size.Width, func(x, y float32, col color.Color) {
		sc.line(x-14, y+ls/2+1, x, y+ls/2+1, col, 3)
	})
	var xs, ys []float64
	for _, l := range c.lines {
		for _, p := range l.Points {
			if math.IsNaN(p.Y) {
				continue
			}
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	top := ts + 14 + extra
	if c.Y.Label != "" {
		top += ls // the unit sits above the top tick
	}
	bottom := size.Height - ls - 8
	if c.X.Label != "" {
		bottom -= ls + 2
	}
	yFmt, xFmt := orPlain(c.Y.Format), orPlain(c.X.Format)
	ysc, yticks := c.axisScale(c.Y, ys, bottom, top)
	left := float32(0)
	for _, t := range yticks {
		left = max(left, fyne.MeasureText(yFmt(t), ls, fyne.TextStyle{}).Width)
	}
	left += 6
	right := size.Width - 4
	// The outermost points sit a few pixels inside the plot, never on its
	// edge (a dot there is half cut off).
	xsc, xticks := c.axisScale(c.X, xs, left+5, right-5)
	if len(xs) == 0 || ysc.invalid || xsc.invalid || bottom-top < 20 || right-left < 40 {
		sc.rect(0, top, size.Width, max(bottom-top, 1), fade(gridCol(), 40))
		sc.text(c.Empty, size.Width/2, (top+bottom)/2-ls/2, ls, dim(), fyne.TextAlignCenter, false)
		return
	}
	for _, t := range yticks {
		y := ysc.at(t)
		sc.line(left, y, right, y, gridCol(), 1)
		sc.text(yFmt(t), left-4, y-ls/2-1, ls, dim(), fyne.TextAlignTrailing, false)
	}
	lastRight := float32(-1e9)
	for _, t := range xticks {
		x := xsc.at(t)
		sc.line(x, bottom, x, bottom+3, dim(), 1)
		lbl := xFmt(t)
		w := fyne.MeasureText(lbl, ls, fyne.TextStyle{}).Width
		lx := min(max(x, w/2), size.Width-w/2) // the end labels stay inside the widget
		if lx-w/2 < lastRight+6 {
			continue // no overlapping tick labels
		}
		sc.text(lbl, lx, bottom+3, ls, dim(), fyne.TextAlignCenter, false)
		lastRight = lx + w/2
	}
	sc.line(left, bottom, right, bottom, dim(), 1)
	if c.X.Label != "" {
		sc.text(c.X.Label, (left+right)/2, bottom+ls+6, ls, dim(), fyne.TextAlignCenter, false)
	}
	if c.Y.Label != "" {
		sc.text(c.Y.Label, 0, top-ls-ls/2-4, ls, dim(), fyne.TextAlignLeading, false)
	}
	for i, m := range c.markers {
		if m.X < xsc.r.Min || m.X > xsc.r.Max {
			continue
		}
		x := xsc.at(m.X)
		for y := top; y < bottom; y += 6 {
			sc.line(x, y, x, min(y+3, bottom), fg(), 1)
		}
		ly := top + 2 + float32(i%3)*(ls+3)
		align := fyne.TextAlignLeading
		if x > (left+right)/2 {
			align = fyne.TextAlignTrailing
			x -= 3
		} else {
			x += 3
		}
		sc.text(m.Label, x, ly, ls, fg(), align, false)
	}
	for _, l := range c.lines {
		var prev Point
		have := false
		for _, p := range l.Points {
			ok := !math.IsNaN(p.Y) && (!c.Y.Log || p.Y > 0) && (!c.X.Log || p.X > 0)
			if ok && have {
				x1, y1, x2, y2 := xsc.at(prev.X), clampY(ysc.at(prev.Y), top, bottom), xsc.at(p.X), clampY(ysc.at(p.Y), top, bottom)
				if l.Dashed {
					dashed(sc, x1, y1, x2, y2, l.Color)
				} else {
					sc.line(x1, y1, x2, y2, l.Color, map[bool]float32{true: 3.5, false: 2}[l.Bold])
				}
			}
			prev, have = p, ok
		}
		if have && len(l.Points) == 1 {
			x, y := xsc.at(prev.X), ysc.at(prev.Y)
			sc.rect(x-2, y-2, 4, 4, l.Color)
		}
	}
}

func clampY(y, top, bottom float32) float32 { return min(max(y, top), bottom) }

func dashed(sc *scene, x1, y1, x2, y2 float32, c color.Color) {
	dx, dy := x2-x1, y2-y1
	n := float32(math.Hypot(float64(dx), float64(dy)))
	if n < 1 {
		return
	}
	for s := float32(0); s < n; s += 8 {
		e := min(s+4, n)
		sc.line(x1+dx*s/n, y1+dy*s/n, x1+dx*e/n, y1+dy*e/n, c, 2)
	}
}

func orPlain(f Formatter) Formatter {
	if f == nil {
		return Plain
	}
	return f
}
