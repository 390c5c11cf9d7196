package ui

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine/stepstats"
	"rigscope/gpu"
	"rigscope/ui/widgets"
)

// views holds the dashboard's widgets; touched only on the UI goroutine.
type views struct {
	root fyne.CanvasObject

	gpuSection *fyne.Container // header + cards
	gpuHeader  *widget.Label
	cardGrid   *fyne.Container
	cards      []*gpuCard

	allreduceSection fyne.CanvasObject
	arTime, arSize   *widgets.LineChart
	arNote           *widget.Label

	acceptSection         fyne.CanvasObject
	acceptHist, acceptPos *widgets.BarHistogram
	acceptMean            *widgets.BarHistogram
	verdict               *widget.Label

	stepsSection fyne.CanvasObject
	steps        *widgets.StackedBars
	tokS         *widgets.LineChart
	stepSummary  *widget.Label

	topoSection fyne.CanvasObject
	topo        *widgets.Matrix
	topoNote    *widget.Label

	layouts []*cellsLayout // height-for-width grids; see cellsLayout
}

func (v *views) grid(l *cellsLayout, objs ...fyne.CanvasObject) *fyne.Container {
	v.layouts = append(v.layouts, l)
	return container.New(l, objs...)
}

func newViews() *views {
	v := &views{}
	v.gpuHeader = widget.NewLabelWithStyle("GPUs", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.gpuHeader.Wrapping = fyne.TextWrapWord
	v.cardGrid = v.grid(&cellsLayout{minW: 230, minH: 150, aspect: 0})
	v.gpuSection = container.NewVBox(v.gpuHeader, v.cardGrid)

	v.arTime = widgets.NewLineChart("Allreduce latency over time",
		widgets.Axis{Label: "run time", Format: fmtRunSeconds, Zero: true},
		widgets.Axis{Label: "latency", Format: fmtSeconds, Zero: true})
	v.arTime.Empty = arTimeEmpty
	v.arSize = widgets.NewLineChart("Latency vs message size",
		widgets.Axis{Label: "message size", Format: fmtBytes, Log: true, LogBase: 4},
		widgets.Axis{Label: "latency", Format: fmtSeconds, Log: true})
	v.arSize.Empty = "no calibration or bench yet"
	v.arNote = smallLabel("")
	v.allreduceSection = container.NewBorder(nil, v.arNote, nil, nil,
		v.grid(&cellsLayout{minW: 300, minH: 200, aspect: 0.6}, v.arTime, v.arSize))

	v.acceptHist = widgets.NewBarHistogram("Accepted drafts per step", "accepted drafts", fmtFraction)
	v.acceptHist.Empty = "no speculative steps yet"
	v.acceptPos = widgets.NewBarHistogram("Acceptance rate by draft position", "draft position", fmtFraction)
	v.acceptPos.Empty = "no speculative steps yet"
	v.acceptMean = widgets.NewBarHistogram("Tokens per step vs break-even", "", widgets.Plain)
	v.acceptMean.Empty = "no speculative steps yet"
	v.verdict = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.verdict.Wrapping = fyne.TextWrapWord
	v.acceptSection = container.NewBorder(nil, v.verdict, nil, nil,
		v.grid(&cellsLayout{minW: 240, minH: 190, aspect: 0.6}, v.acceptHist, v.acceptPos, v.acceptMean))

	v.steps = widgets.NewStackedBars("Time per step", fmt.Sprintf("last %d steps", stepWindow),
		[]string{"draft", "verify", "allreduce", "other"}, fmtSeconds)
	v.tokS = widgets.NewLineChart("Tokens/s",
		widgets.Axis{Label: "run time", Format: fmtRunSeconds, Zero: true},
		widgets.Axis{Label: "tokens/s", Format: fmtTokS, Zero: true})
	v.tokS.Empty = "no run yet"
	v.stepSummary = smallLabel("")
	v.stepsSection = container.NewBorder(nil, v.stepSummary, nil, nil,
		v.grid(&cellsLayout{minW: 300, minH: 200, aspect: 0.6}, v.steps, v.tokS))

	v.topo = widgets.NewMatrix("Topology")
	v.topoNote = smallLabel(gpu.TopologyLegend)
	v.topoNote.TextStyle = fyne.TextStyle{Monospace: true}
	v.topoSection = container.NewBorder(nil, nil, nil, nil, container.NewVBox(v.topo, v.topoNote))

	v.root = container.NewVBox(v.gpuSection, widget.NewSeparator(),
		v.allreduceSection, widget.NewSeparator(),
		v.acceptSection, widget.NewSeparator(),
		v.stepsSection, widget.NewSeparator(),
		v.topoSection)
	return v
}

// arTimeEmpty is what the over-time chart says before any allreduce.
const arTimeEmpty = "no allreduce yet (runs with TP > 1 show it)"

func smallLabel(s string) *widget.Label {
	l := widget.NewLabel(s)
	l.Wrapping = fyne.TextWrapWord
	l.SizeName = theme.SizeNameCaptionText
	return l
}

// apply shows f; UI goroutine only.
func (v *views) apply(f *frame) {
	v.applyGPUs(f)

	v.arTime.Title = f.arTitle
	v.arTime.Empty = arTimeEmpty
	if f.arEmpty != "" {
		v.arTime.Empty = f.arEmpty
	}
	v.arTime.Set(f.arTime, nil)
	v.arSize.Set(f.curves, f.crossovers)
	note := "Latency vs size: " + f.curveNote + "."
	if len(f.crossovers) > 0 {
		var xs []string
		for _, m := range f.crossovers {
			xs = append(xs, strings.TrimPrefix(m.Label, "auto: "))
		}
		note += " auto switches " + strings.Join(xs, "; ") + "."
	}
	v.arNote.SetText(note)

	var hist []widgets.BarSeries
	if f.acceptCur != nil {
		hist = append(hist, widgets.BarSeries{Name: "this run", Values: f.acceptCur, Color: widgets.SeriesColor(0)})
	}
	if f.acceptPrev != nil {
		hist = append(hist, widgets.BarSeries{Name: "previous run", Values: f.acceptPrev, Color: widgets.SeriesColor(1)})
	}
	v.acceptHist.Set(f.acceptCats, hist)
	var pos []widgets.BarSeries
	if f.posRate != nil {
		pos = []widgets.BarSeries{{Name: "this run", Values: f.posRate, Color: widgets.SeriesColor(0)}}
	}
	v.acceptPos.Set(f.posCats, pos)
	var mean []widgets.BarSeries
	if f.perStep > 0 {
		c := widgets.SeriesColor(0) // neutral while measuring or too close
		switch f.snap.Verdict.State {
		case stepstats.Pays:
			c = widgets.SeriesColor(2) // green
		case stepstats.DoesNotPay, stepstats.CannotPay:
			c = widgets.SeriesColor(5) // vermillion
		}
		mean = []widgets.BarSeries{{Name: fmt.Sprintf("%.2f tokens/step (mean acceptance length %.2f)", f.perStep, f.snap.MeanAcceptLen), Values: []float64{f.perStep}, Color: c}}
	}
	v.acceptMean.Ref, v.acceptMean.RefLabel = 0, ""
	if be := f.snap.Verdict; be.BreakEven > 0 {
		v.acceptMean.Ref = be.BreakEven
		v.acceptMean.RefLabel = fmt.Sprintf("break-even %.2f (%.2f–%.2f)", be.BreakEven, be.BreakEvenLo, be.BreakEvenHi)
	}
	v.acceptMean.Set([]string{"tokens per step"}, mean)
	v.verdict.SetText(f.verdict)

	v.steps.Set(f.stepBars)
	v.tokS.Empty = "no run yet"
	if f.snap.Replayed != "" && len(f.tokLine) == 0 {
		v.tokS.Empty = fmt.Sprintf("replayed run: %.1f tokens/s over its steps; no course over time", f.snap.TokensPerS)
	}
	v.tokS.Set([]widgets.Line{{Name: "tokens/s", Points: f.tokLine, Color: widgets.SeriesColor(0)}}, nil)
	v.stepSummary.SetText(f.stepSummary)

	v.applyTopology(f)
	for _, w := range []fyne.Widget{v.arTime, v.arSize, v.acceptHist, v.acceptPos, v.acceptMean, v.steps, v.tokS, v.topo} {
		w.Refresh()
	}
}

func (v *views) applyGPUs(f *frame) {
	n := len(f.gpus)
	ranks := n == 0
	if ranks {
		n = len(f.rankTX)
	}
	for len(v.cards) < n {
		c := newGPUCard()
		v.cards = append(v.cards, c)
	}
	if len(v.cardGrid.Objects) != n {
		objs := make([]fyne.CanvasObject, n)
		for i := range n {
			objs[i] = v.cards[i].root
		}
		v.cardGrid.Objects = objs
		v.cardGrid.Refresh()
	}
	if !ranks {
		v.gpuHeader.SetText(fmt.Sprintf("GPUs (%d, NVML, TX/RX via %s)", n, f.gpus[0].ThroughputSource))
		for i, g := range f.gpus {
			v.cards[i].showGPU(g, f.gpuEngine[i], f.snap.Running)
		}
		return
	}
	why := "no NVIDIA GPU"
	if f.gpuErr != nil {
		why = f.gpuErr.Error()
	}
	if n == 0 {
		v.gpuHeader.SetText("No GPU telemetry (" + why + ") and no engine traffic yet.")
		return
	}
	v.gpuHeader.SetText("Engine-counted interconnect traffic (no GPU: " + why + ")")
	for i := range n {
		var sent, recv int64
		if i < len(f.snap.RankBytesSent) && i < len(f.snap.RankBytesRecv) {
			sent, recv = f.snap.RankBytesSent[i], f.snap.RankBytesRecv[i]
		}
		v.cards[i].showRank(i, f.rankTX[i], f.rankRX[i], sent, recv, f.snap.Running)
	}
}

// gpuCard is one GPU (or, without GPUs, one TP rank).
type gpuCard struct {
	root         fyne.CanvasObject
	title, link  *widget.Label
	tx, rx, util *widgets.Sparkline
	stats        *widget.Label
}

func newGPUCard() *gpuCard {
	c := &gpuCard{
		title: widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		link:  smallLabel(""),
		tx:    widgets.NewSparkline("PCIe TX", fmtRate, widgets.SeriesColor(0)),
		rx:    widgets.NewSparkline("PCIe RX", fmtRate, widgets.SeriesColor(1)),
		util:  widgets.NewSparkline("utilization", fmtPercent, widgets.SeriesColor(2)),
		stats: smallLabel(""),
	}
	c.title.Truncation = fyne.TextTruncateEllipsis
	c.root = widget.NewCard("", "", container.NewVBox(c.title, c.link, c.tx, c.rx, c.util, c.stats))
	return c
}

func (c *gpuCard) showGPU(g gpu.GPUSnapshot, eng gpuTraffic, running bool) {
	l := g.Latest
	c.title.SetText(fmt.Sprintf("GPU%d  %s", g.Index, g.Name))
	c.link.SetText(fmt.Sprintf("PCIe %s (max %s)", gpu.LinkString(l.LinkGen, l.LinkWidth), gpu.LinkString(g.MaxLinkGen, g.MaxLinkWidth)))
	c.tx.Caption, c.rx.Caption = "PCIe TX", "PCIe RX"
	c.tx.Set(g.TX, naWhy(l.TX))
	c.rx.Set(g.RX, naWhy(l.RX))
	c.util.Set(g.Util, naWhy(l.Util))
	mem := l.MemUsed.Format(fmtBytes)
	if l.MemUsed.OK && l.MemTotal.OK {
		mem += " / " + fmtBytes(l.MemTotal.Value)
	}
	c.stats.SetText(fmt.Sprintf("memory %s\npower %s · SM %s · %s",
		mem, l.Power.Format(func(v float64) string { return fmt.Sprintf("%.0f W", v) }),
		l.SMClock.Format(func(v float64) string { return fmt.Sprintf("%.0f MHz", v) }),
		l.Temp.Format(func(v float64) string { return fmt.Sprintf("%.0f °C", v) })) + engineLine(eng, running))
	c.refresh()
}

// engineLine is the engine's own count of the allreduce traffic of the
// ranks on a GPU, for the same interval as the PCIe lines above it.
func engineLine(t gpuTraffic, running bool) string {
	if len(t.ranks) == 0 {
		return ""
	}
	who := fmt.Sprintf("rank %d", t.ranks[0])
	if n := len(t.ranks); n > 1 {
		who = fmt.Sprintf("ranks %d–%d", t.ranks[0], t.ranks[n-1])
	}
	rate := "idle"
	if running {
		rate = fmt.Sprintf("sent %s · received %s", fmtRate(t.tx), fmtRate(t.rx))
	}
	return fmt.Sprintf("\nengine, %s: %s (run total %s / %s)", who, rate, fmtBytes(float64(t.sent)), fmtBytes(float64(t.recv)))
}

func (c *gpuCard) showRank(i int, tx, rx []float64, sent, recv int64, running bool) {
	c.title.SetText(fmt.Sprintf("rank %d", i))
	c.link.SetText("engine-counted interconnect traffic")
	c.tx.Caption, c.rx.Caption = "sent", "received"
	c.tx.Set(tx, "measuring")
	c.rx.Set(rx, "measuring")
	c.tx.Note, c.rx.Note = "", ""
	if !running { // between runs the rate is 0: say so, the line keeps its peak
		c.tx.Note, c.rx.Note = "idle", "idle"
	}
	c.util.Set(nil, "n/a (no GPU)")
	c.stats.SetText(fmt.Sprintf("total sent %s · received %s", fmtBytes(float64(sent)), fmtBytes(float64(recv))))
	c.refresh()
}

func (c *gpuCard) refresh() {
	c.tx.Refresh()
	c.rx.Refresh()
	c.util.Refresh()
}

func naWhy(m gpu.Metric) string {
	if m.OK {
		return ""
	}
	return m.Format(nil)
}

// Topology cell tints by link class.
var (
	tintNV    = color.NRGBA{0x00, 0x9e, 0x73, 0x70}
	tintPCIe  = color.NRGBA{0x56, 0xb4, 0xe9, 0x60}
	tintHost  = color.NRGBA{0xe6, 0x9f, 0x00, 0x60}
	tintSys   = color.NRGBA{0xd5, 0x5e, 0x00, 0x70}
	tintSelf  = color.NRGBA{0x80, 0x80, 0x80, 0x40}
	tintUnkwn = color.NRGBA{0x80, 0x80, 0x80, 0x20}
)

func levelTint(level string) color.Color {
	switch {
	case level == "X":
		return tintSelf
	case strings.HasPrefix(level, "NV"):
		return tintNV
	case level == "PIX" || level == "PXB":
		return tintPCIe
	case level == "PHB" || level == "NODE":
		return tintHost
	case level == "SYS":
		return tintSys
	}
	return tintUnkwn
}

func (v *views) applyTopology(f *frame) {
	t := f.topo
	if t == nil || len(t.GPUs) == 0 {
		why := "no GPUs"
		if f.gpuErr != nil {
			why = f.gpuErr.Error()
		}
		v.topo.Empty = "Topology unavailable: " + why
		v.topo.Set(nil, nil, nil)
		v.topoNote.Hide()
		return
	}
	v.topoNote.Show()
	cells := make([][]widgets.Cell, len(t.Links))
	for i, row := range t.Links {
		cells[i] = make([]widgets.Cell, len(row))
		for j, lk := range row {
			c := widgets.Cell{Text: lk.Level, Tint: levelTint(lk.Level)}
			if i != j {
				c.Sub = "P2P " + lk.P2PRead + "/" + lk.P2PWrite
			}
			cells[i][j] = c
		}
	}
	v.topo.Title = "Topology (nvidia-smi topo -m)"
	v.topo.Set(t.GPUs, t.GPUs, cells)
}

// cellsLayout lays its objects in equal cells, as many columns as fit at
// minW each (at most len(objects)); rows are minH tall, or aspect times the
// cell width (capped at 1.6 minH) when aspect > 0. Fyne has no
// height-for-width, so MinSize answers for the columns of the last Layout
// and a change of columns calls relayout to let the parents re-measure.
type cellsLayout struct {
	minW, minH, aspect float32
	cols, lastCW       float32 // from the last Layout; 0 before
	relayout           func()
}

func (l *cellsLayout) colsFor(width float32, n int) int {
	return max(1, min(n, int(math.Floor(float64(width/l.minW)))))
}

func (l *cellsLayout) rowH(cellW float32) float32 {
	if l.aspect > 0 {
		return max(l.minH, min(cellW*l.aspect, l.minH*1.6))
	}
	return l.minH
}

const cellGap = 6

// Layout implements fyne.Layout.
func (l *cellsLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	vis := visible(objs)
	if len(vis) == 0 {
		return
	}
	cols := l.colsFor(size.Width, len(vis))
	cw := (size.Width - cellGap*float32(cols-1)) / float32(cols)
	rh := l.rowH(cw)
	for i, o := range vis {
		r, c := i/cols, i%cols
		o.Move(fyne.NewPos(float32(c)*(cw+cellGap), float32(r)*(rh+cellGap)))
		o.Resize(fyne.NewSize(cw, max(rh, o.MinSize().Height)))
	}
	changed := float32(cols) != l.cols || math.Abs(float64(l.rowH(cw)-l.rowH(l.lastCW))) > 1
	l.cols, l.lastCW = float32(cols), cw
	if changed && l.relayout != nil {
		l.relayout()
	}
}

// MinSize implements fyne.Layout.
func (l *cellsLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	vis := visible(objs)
	if len(vis) == 0 {
		return fyne.Size{}
	}
	cols := int(l.cols)
	if cols == 0 {
		cols = min(len(vis), 2)
	}
	cols = min(cols, len(vis))
	rh := l.minH
	if l.lastCW > 0 {
		rh = l.rowH(l.lastCW)
	}
	for _, o := range vis {
		rh = max(rh, o.MinSize().Height)
	}
	rows := (len(vis) + cols - 1) / cols
	return fyne.NewSize(l.minW, float32(rows)*rh+float32(rows-1)*cellGap)
}

func visible(objs []fyne.CanvasObject) []fyne.CanvasObject {
	var out []fyne.CanvasObject
	for _, o := range objs {
		if o.Visible() {
			out = append(out, o)
		}
	}
	return out
}
