package widgets

import (
	"image/color"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// Sparkline is a small line of recent values under a caption and the
// latest value ("TX  1.2 GB/s"). Gaps (NaN) break the line; with no value
// it shows Why (e.g. "n/a (not supported on this GPU)").
type Sparkline struct {
	widget.BaseWidget
	Caption string
	Format  Formatter
	Color   color.Color
	Note    string // shown instead of the latest value when set (e.g. "idle")
	vals    []float64
	why     string
}

// NewSparkline returns an empty sparkline.
func NewSparkline(caption string, format Formatter, c color.Color) *Sparkline {
	s := &Sparkline{Caption: caption, Format: format, Color: c}
	s.ExtendBaseWidget(s)
	return s
}

// Set copies vals (oldest first) and sets the reason shown when the latest
// value is missing; it does not refresh.
func (s *Sparkline) Set(vals []float64, why string) {
	s.vals = append(s.vals[:0], vals...)
	s.why = why
}

// CreateRenderer implements fyne.Widget.
func (s *Sparkline) CreateRenderer() fyne.WidgetRenderer {
	return newRenderer(func() fyne.Size { return fyne.NewSize(140, 44) }, s.draw)
}

func (s *Sparkline) draw(sc *scene, size fyne.Size) {
	ls := labelSize()
	sc.text(s.Caption, 0, 0, ls, dim(), fyne.TextAlignLeading, false)
	value := s.why
	if s.Note != "" {
		value = s.Note
	} else if n := len(s.vals); n > 0 && !math.IsNaN(s.vals[n-1]) {
		value = s.Format(s.vals[n-1])
	} else if value == "" {
		value = "n/a"
	}
	sc.text(value, size.Width, 0, ls, fg(), fyne.TextAlignTrailing, true)
	top := ls + 6
	h := size.Height - top - 2
	sc.line(0, size.Height-1, size.Width, size.Height-1, gridCol(), 1)
	r, ok := dataRange(s.vals)
	if !ok || h <= 2 || len(s.vals) < 2 {
		return
	}
	r.Min = math.Min(r.Min, 0) // rates and percentages: anchor at zero
	if r.Max <= r.Min {
		r.Max = r.Min + 1
	}
	ys := scale{r: r, p0: top + h, p1: top}
	// The scale: the plot's top line is the peak, written after the caption.
	sc.line(0, top, size.Width, top, fade(gridCol(), 90), 1)
	capW := fyne.MeasureText(s.Caption, ls, fyne.TextStyle{}).Width
	sc.text("· peak "+s.Format(r.Max), capW+6, 0, ls, dim(), fyne.TextAlignLeading, false)
	step := size.Width / float32(len(s.vals)-1)
	for i := 1; i < len(s.vals); i++ {
		a, b := s.vals[i-1], s.vals[i]
		if math.IsNaN(a) || math.IsNaN(b) {
			continue
		}
		sc.line(float32(i-1)*step, ys.at(a), float32(i)*step, ys.at(b), s.Color, 1.5)
	}
}
