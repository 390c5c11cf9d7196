package ui

import (
	"fyne.io/fyne/v2"
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
type lazyBlock struct {
	widget.BaseWidget
	rt    *widget.RichText
	shown bool
}

func newLazyBlock() *lazyBlock {
	rt := widget.NewRichText()
	rt.Wrapping = fyne.TextWrapWord
	b := &lazyBlock{rt: rt, shown: true}
	b.ExtendBaseWidget(b)
	return b
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

func (r *lazyRenderer) Layout(s fyne.Size) { r.b.rt.Resize(s) }
func (r *lazyRenderer) MinSize() fyne.Size { return r.b.rt.MinSize() }
func (r *lazyRenderer) Refresh()           { r.b.rt.Refresh() }
func (r *lazyRenderer) Destroy()           {}
func (r *lazyRenderer) Objects() []fyne.CanvasObject {
	if r.b.shown {
		return []fyne.CanvasObject{r.b.rt}
	}
	return nil
}
