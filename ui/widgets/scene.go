package widgets

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
)

// scene is a renderer's pool of primitives. draw code calls reset, then
// line/rect/text in painting order; objects() is the z-ordered list. Pooled
// objects are reused across frames so a redraw allocates nothing once warm.
type scene struct {
	lines []*canvas.Line
	rects []*canvas.Rectangle
	texts []*canvas.Text
	nl    int
	nr    int
	nt    int
	objs  []fyne.CanvasObject
}

func (s *scene) reset() {
	s.nl, s.nr, s.nt = 0, 0, 0
	s.objs = s.objs[:0]
}

func (s *scene) line(x1, y1, x2, y2 float32, c color.Color, width float32) {
	if s.nl == len(s.lines) {
		s.lines = append(s.lines, canvas.NewLine(c))
	}
	l := s.lines[s.nl]
	s.nl++
	l.StrokeColor, l.StrokeWidth = c, width
	l.Position1, l.Position2 = fyne.NewPos(x1, y1), fyne.NewPos(x2, y2)
	s.objs = append(s.objs, l)
}

func (s *scene) rect(x, y, w, h float32, fill color.Color) {
	if w <= 0 || h <= 0 {
		return
	}
	if s.nr == len(s.rects) {
		s.rects = append(s.rects, canvas.NewRectangle(fill))
	}
	r := s.rects[s.nr]
	s.nr++
	r.FillColor = fill
	r.Move(fyne.NewPos(x, y))
	r.Resize(fyne.NewSize(w, h))
	s.objs = append(s.objs, r)
}

// text places str with its top-left at (x, y), or right/centre aligned to x.
func (s *scene) text(str string, x, y, size float32, c color.Color, align fyne.TextAlign, bold bool) fyne.Size {
	if s.nt == len(s.texts) {
		s.texts = append(s.texts, canvas.NewText("", c))
	}
	t := s.texts[s.nt]
	s.nt++
	t.Text, t.Color, t.TextSize = str, c, size
	t.TextStyle = fyne.TextStyle{Bold: bold}
	t.Alignment = fyne.TextAlignLeading
	sz := fyne.MeasureText(str, size, t.TextStyle)
	switch align {
	case fyne.TextAlignTrailing:
		x -= sz.Width
	case fyne.TextAlignCenter:
		x -= sz.Width / 2
	}
	t.Move(fyne.NewPos(x, y))
	t.Resize(sz)
	s.objs = append(s.objs, t)
	return sz
}

func (s *scene) objects() []fyne.CanvasObject { return s.objs }

func (s *scene) refresh() {
	for _, o := range s.objs {
		o.Refresh()
	}
}

// Palette is the series colours, in order (Okabe-Ito, legible on dark and
// light themes).
var Palette = []color.Color{
	color.NRGBA{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	color.NRGBA{0xe6, 0x9f, 0x00, 0xff}, // orange
	color.NRGBA{0x00, 0x9e, 0x73, 0xff}, // green
	color.NRGBA{0xcc, 0x79, 0xa7, 0xff}, // pink
	color.NRGBA{0xf0, 0xe4, 0x42, 0xff}, // yellow
	color.NRGBA{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	color.NRGBA{0x00, 0x72, 0xb2, 0xff}, // blue
}

// SeriesColor is Palette[i] cycling.
func SeriesColor(i int) color.Color { return Palette[((i%len(Palette))+len(Palette))%len(Palette)] }

func fg() color.Color      { return theme.Color(theme.ColorNameForeground) }
func dim() color.Color     { return theme.Color(theme.ColorNameDisabled) }
func gridCol() color.Color { return theme.Color(theme.ColorNameSeparator) }
func labelSize() float32   { return theme.CaptionTextSize() }
func titleSize() float32   { return theme.TextSize() }

// fade returns c with alpha a (0..255).
func fade(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), a}
}

// baseRenderer adapts a draw function over a scene to fyne.WidgetRenderer.
type baseRenderer struct {
	sc   scene
	size fyne.Size
	min  func() fyne.Size
	draw func(sc *scene, size fyne.Size)
}

func newRenderer(min func() fyne.Size, draw func(*scene, fyne.Size)) *baseRenderer {
	return &baseRenderer{min: min, draw: draw}
}

func (r *baseRenderer) Layout(size fyne.Size) {
	r.size = size
	r.sc.reset()
	r.draw(&r.sc, size)
}
func (r *baseRenderer) MinSize() fyne.Size { return r.min() }
func (r *baseRenderer) Refresh() {
	r.sc.reset()
	r.draw(&r.sc, r.size)
	r.sc.refresh()
}
func (r *baseRenderer) Objects() []fyne.CanvasObject { return r.sc.objects() }
func (r *baseRenderer) Destroy()                     {}
