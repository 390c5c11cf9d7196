package ui

import (
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// stackLayout lays objects out top to bottom like layout.VBox, but caches
// the minimum size of every object except the last. A streaming answer only
// ever grows its last object, so a frame costs the size of that object, not
// of the whole transcript (RichText measures every line in MinSize). The
// cache is dropped when the width changes or invalidate is called.
type stackLayout struct {
	gap   float32 // space between objects; negative = theme padding
	after func()  // called after each Layout
	width float32
	cache map[fyne.CanvasObject]fyne.Size
}

func newStack(gap float32, objs ...fyne.CanvasObject) (*fyne.Container, *stackLayout) {
	l := &stackLayout{gap: gap, cache: map[fyne.CanvasObject]fyne.Size{}}
	return fyne.NewContainerWithLayout(l, objs...), l
}

func (l *stackLayout) invalidate() { clear(l.cache) }

func (l *stackLayout) spacing() float32 {
	if l.gap < 0 {
		return theme.Padding()
	}
	return l.gap
}

func (l *stackLayout) minOf(objs []fyne.CanvasObject, i int) fyne.Size {
	o := objs[i]
	if i == len(objs)-1 {
		return o.MinSize()
	}
	if s, ok := l.cache[o]; ok {
		return s
	}
	s := o.MinSize()
	l.cache[o] = s
	return s
}

func (l *stackLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var w, h float32
	n := 0
	for i, o := range objs {
		if !o.Visible() {
			continue
		}
		s := l.minOf(objs, i)
		w = max(w, s.Width)
		h += s.Height
		n++
	}
	if n > 1 {
		h += l.spacing() * float32(n-1)
	}
	return fyne.NewSize(w, h)
}

func (l *stackLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	if size.Width != l.width {
		l.width = size.Width
		l.invalidate()
	}
	if len(l.cache) > 4*len(objs)+16 { // forget removed objects
		l.invalidate()
	}
	y := float32(0)
	for i, o := range objs {
		if !o.Visible() {
			continue
		}
		h := l.minOf(objs, i).Height
		o.Move(fyne.NewPos(0, y))
		o.Resize(fyne.NewSize(size.Width, h))
		y += h + l.spacing()
	}
	if l.after != nil {
		l.after()
	}
}

// lazyBlock holds one RichText block of an answer and hands it to the
// painter only while it is near the visible part of the transcript: the GL
// painter draws every object in the tree, clipped or not, so a long answer
// would otherwise cost every frame the whole answer's text.
//
// A finished block also carries sel, a selectable Label with the same text
// drawn in a transparent colour over the RichText (which Fyne cannot
// select): the RichText shows the colours (accepted drafts), the Label
// takes the mouse and Ctrl+C. A code block has a tinted background.
type lazyBlock struct {
	widget.BaseWidget
	rt    *widget.RichText
	sel   *widget.Label     // nil while streaming
	selBx fyne.CanvasObject // sel inside its theme override
	bg    *canvas.Rectangle // code blocks only
	shown bool
}

func newLazyBlock() *lazyBlock {
	rt := widget.NewRichText()
	rt.Wrapping = fyne.TextWrapWord
	b := &lazyBlock{rt: rt, shown: true}
	b.ExtendBaseWidget(b)
	return b
}

// makeSelectable lays a selectable copy of text over the block; code
// blocks get a monospace copy and a tinted background.
func (b *lazyBlock) makeSelectable(text string, code bool) {
	b.sel = widget.NewLabel(text)
	b.sel.Wrapping = fyne.TextWrapWord
	b.sel.Selectable = true
	b.sel.TextStyle.Monospace = code
	b.selBx = container.NewThemeOverride(b.sel, clearText{})
	if code {
		b.bg = canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
		b.bg.CornerRadius = theme.InputRadiusSize()
	}
	b.Refresh()
}

// Text returns what the block shows.
func (b *lazyBlock) Text() string {
	if b.sel != nil {
		return b.sel.Text
	}
	var sb strings.Builder
	for _, s := range b.rt.Segments {
		sb.WriteString(s.Textual())
	}
	return sb.String()
}

// show sets whether the block is painted.
func (b *lazyBlock) show(on bool) {
	if on != b.shown {
		b.shown = on
		b.Refresh()
	}
}

func (b *lazyBlock) CreateRenderer() fyne.WidgetRenderer { return &lazyRenderer{b: b} }

type lazyRenderer struct{ b *lazyBlock }

func (r *lazyRenderer) Layout(s fyne.Size) {
	r.b.rt.Resize(s)
	if r.b.selBx != nil {
		r.b.selBx.Resize(s)
	}
	if r.b.bg != nil {
		r.b.bg.Resize(s)
	}
}
func (r *lazyRenderer) MinSize() fyne.Size { return r.b.rt.MinSize() }
func (r *lazyRenderer) Refresh() {
	if r.b.bg != nil {
		r.b.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
		r.b.bg.Refresh()
	}
	r.b.rt.Refresh()
	if r.b.selBx != nil {
		r.b.selBx.Refresh()
	}
}
func (r *lazyRenderer) Destroy() {}
func (r *lazyRenderer) Objects() []fyne.CanvasObject {
	if !r.b.shown {
		return nil
	}
	objs := make([]fyne.CanvasObject, 0, 3)
	if r.b.bg != nil {
		objs = append(objs, r.b.bg)
	}
	objs = append(objs, r.b.rt)
	if r.b.selBx != nil {
		objs = append(objs, r.b.selBx)
	}
	return objs
}

// clearText is the current theme with transparent text: the selectable
// overlay of a lazyBlock shows only its selection and cursor.
type clearText struct{}

func (clearText) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if n == theme.ColorNameForeground {
		return color.Transparent
	}
	return appTheme().Color(n, v)
}
func (clearText) Font(s fyne.TextStyle) fyne.Resource     { return appTheme().Font(s) }
func (clearText) Icon(n fyne.ThemeIconName) fyne.Resource { return appTheme().Icon(n) }
func (clearText) Size(n fyne.ThemeSizeName) float32       { return appTheme().Size(n) }

// appTheme is the app's theme (theme.Current would return the override
// being rendered, i.e. clearText itself).
func appTheme() fyne.Theme {
	if a := fyne.CurrentApp(); a != nil && a.Settings().Theme() != nil {
		return a.Settings().Theme()
	}
	return theme.DefaultTheme()
}
