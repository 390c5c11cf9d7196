package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"rigscope/engine/metrics"
	"rigscope/gpu"
	"rigscope/ui/widgets"
)

// pushEvery is the run-time spacing of the dashboard's own time series.
const pushEvery = 500 * time.Millisecond

// history is what the dashboard accumulates across frames, all in ring
// buffers so memory stays flat however long the session.
type history struct {
	runID    string
	runStart time.Time
	lastPush time.Time

	arX, arP50, arP99 *widgets.Series // run seconds, seconds, seconds
	arBytes           int64           // the bucket arP50/arP99 follow
	tokX, tokY        *widgets.Series // run seconds, tokens/s

	final finishedRun // the last finished run's own figures (RunFinished)

	rankSent, rankRecv []int64           // previous totals
	rankAt             time.Time         // when they were read
	rankTX, rankRX     []*widgets.Series // bytes/s per rank
}

func newHistory() history {
	return history{
		arX: widgets.NewSeries(historyLen), arP50: widgets.NewSeries(historyLen), arP99: widgets.NewSeries(historyLen),
		tokX: widgets.NewSeries(historyLen), tokY: widgets.NewSeries(historyLen),
	}
}

// finishedRun is what the chat's stats row said about a finished run.
type finishedRun struct {
	runID  string
	tokS   float64
	tokens int
	stop   string
	set    bool
}

// startRun resets the per-run series for a new run.
func (h *history) startRun(id string, at time.Time) {
	h.runID, h.runStart, h.lastPush = id, at, time.Time{}
	h.arX.Reset()
	h.arP50.Reset()
	h.arP99.Reset()
	h.tokX.Reset()
	h.tokY.Reset()
	h.final = finishedRun{}
}

// frameKey changes whenever anything shown may have changed.
type frameKey struct {
	taken  time.Time
	gen    int
	gpuSeq uint64
	ngpu   int
	nRuns  string
	// running: a run starting or ending changes the frame even when the
	// counters do not.
	running bool
	// final: the finished run's own figures arrived (RunFinished), so a
	// frame collected just before them, applied after, is replaced.
	final bool
}

// frame is everything one redraw needs, computed off the UI goroutine.
type frame struct {
	key    frameKey
	snap   metrics.Snapshot
	gpus   []gpu.GPUSnapshot
	gpuErr error
	topo   *gpu.Topology

	arTitle    string
	arTime     []widgets.Line
	arEmpty    string // what the over-time chart says without points ("" = its default)
	curves     []widgets.Line
	crossovers []widgets.Marker
	curveNote  string

	acceptCats []string
	acceptCur  []float64
	acceptPrev []float64
	posCats    []string
	posRate    []float64
	perStep    float64 // tokens per step so far
	verdict    string

	stepBars    [][]float64 // (step, [draft, verify, allreduce, other]) seconds
	stepSummary string
	tokLine     []widgets.Point

	rankTX, rankRX [][]float64  // per rank, bytes/s series
	gpuEngine      []gpuTraffic // per GPU (as gpus): the engine's bytes of the ranks on it
}

// gpuTraffic is what the engine counted for the ranks on one GPU, shown
// beside that GPU's NVML PCIe counters: the rates of the latest interval
// and the run's totals.
type gpuTraffic struct {
	ranks      []int
	tx, rx     float64 // bytes/s
	sent, recv int64
}

// fillGPUTraffic sums, per GPU, the latest rate and total of the ranks the
// engine placed on it (snap.RankGPU).
func fillGPUTraffic(f *frame) {
	f.gpuEngine = make([]gpuTraffic, len(f.gpus))
	for r, ord := range f.snap.RankGPU {
		for i, g := range f.gpus {
			if g.Index != ord {
				continue
			}
			t := &f.gpuEngine[i]
			t.ranks = append(t.ranks, r)
			t.tx += lastRate(f.rankTX, r)
			t.rx += lastRate(f.rankRX, r)
			if r < len(f.snap.RankBytesSent) && r < len(f.snap.RankBytesRecv) {
				t.sent += f.snap.RankBytesSent[r]
				t.recv += f.snap.RankBytesRecv[r]
			}
		}
	}
}

// lastRate is rank r's latest rate (0 when none or unknown).
func lastRate(series [][]float64, r int) float64 {
	if r >= len(series) || len(series[r]) == 0 {
		return 0
	}
	v := series[r][len(series[r])-1]
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// collect reads the source and folds it into the history; safe off the UI
// goroutine.
func (d *Dashboard) collect(now time.Time) *frame {
	snap := d.src.Snapshot()
	f := &frame{snap: snap, gpus: d.src.GPUs(), gpuErr: d.src.GPUError(), topo: d.src.Topology()}
	f.key = frameKey{gen: snap.Generated, ngpu: len(f.gpus), nRuns: snap.RunID, running: snap.Running}
	if snap.Running { // between runs nothing moves: an idle dashboard does not redraw
		f.key.taken = snap.Taken
	}
	for _, g := range f.gpus {
		f.key.gpuSeq += g.Seq
	}
	at := snap.Taken
	if at.IsZero() {
		at = now
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	h := &d.hist
	if snap.RunID != h.runID {
		h.startRun(snap.RunID, at)
	}
	if snap.Running && (h.lastPush.IsZero() || at.Sub(h.lastPush) >= pushEvery) {
		h.lastPush = at
		x := at.Sub(h.runStart).Seconds()
		if b, ok := metrics.DominantBucket(snap.AllReduce, snap.Backend); ok {
			h.arBytes = b.Bytes
			h.arX.Push(x)
			h.arP50.Push(b.P50.Seconds())
			h.arP99.Push(b.P99.Seconds())
		}
		h.tokX.Push(x)
		h.tokY.Push(snap.TokensPerS)
	}
	h.rankRates(snap, at)
	d.fillAllReduce(f, h)
	fillAcceptance(f, snap)
	fillSteps(f, snap, h.final)
	f.key.final = h.final.set
	f.tokLine = points(h.tokX.Values(nil), h.tokY.Values(nil))
	f.rankTX, f.rankRX = make([][]float64, len(h.rankTX)), make([][]float64, len(h.rankRX))
	for i := range h.rankTX {
		f.rankTX[i], f.rankRX[i] = h.rankTX[i].Values(nil), h.rankRX[i].Values(nil)
	}
	fillGPUTraffic(f)
	return f
}

// rankRates turns the engine's cumulative per-rank byte counts into rates.
func (h *history) rankRates(s metrics.Snapshot, at time.Time) {
	n := len(s.RankBytesSent)
	if len(s.RankBytesRecv) != n {
		return
	}
	if len(h.rankTX) != n {
		h.rankTX, h.rankRX = make([]*widgets.Series, n), make([]*widgets.Series, n)
		for i := range n {
			h.rankTX[i], h.rankRX[i] = widgets.NewSeries(historyLen/4), widgets.NewSeries(historyLen/4)
		}
		h.rankSent, h.rankRecv = nil, nil
	}
	dt := at.Sub(h.rankAt).Seconds()
	if h.rankSent != nil && dt < pushEvery.Seconds() {
		return
	}
	if h.rankSent != nil && dt > 0 {
		for i := range n {
			ds, dr := s.RankBytesSent[i]-h.rankSent[i], s.RankBytesRecv[i]-h.rankRecv[i]
			if ds < 0 || dr < 0 { // a new run reset the counters
				h.rankTX[i].Push(math.NaN())
				h.rankRX[i].Push(math.NaN())
				continue
			}
			h.rankTX[i].Push(float64(ds) / dt)
			h.rankRX[i].Push(float64(dr) / dt)
		}
	}
	h.rankSent = append(h.rankSent[:0], s.RankBytesSent...)
	h.rankRecv = append(h.rankRecv[:0], s.RankBytesRecv...)
	h.rankAt = at
}

func points(xs, ys []float64) []widgets.Point {
	out := make([]widgets.Point, min(len(xs), len(ys)))
	for i := range out {
		out[i] = widgets.Point{X: xs[i], Y: ys[i]}
	}
	return out
}

func (d *Dashboard) fillAllReduce(f *frame, h *history) {
	backend := f.snap.Backend
	if backend == "" {
		backend = "allreduce"
	}
	f.arTitle = fmt.Sprintf("Allreduce latency over time: %s", backend)
	if h.arBytes > 0 {
		f.arTitle += fmt.Sprintf(", %s messages", fmtBytes(float64(h.arBytes)))
	}
	xs := h.arX.Values(nil)
	f.arTime = []widgets.Line{
		{Name: "p50", Points: points(xs, h.arP50.Values(nil)), Color: widgets.SeriesColor(0)},
		{Name: "p99", Points: points(xs, h.arP99.Values(nil)), Color: widgets.SeriesColor(1)},
	}
	if f.snap.Replayed != "" {
		// A run made elsewhere: its own measurements, not this machine's
		// calibration, and no course over time (its log keeps the run's
		// histograms, not their history).
		if len(xs) == 0 {
			f.arEmpty = "replayed run: its log keeps the run's histograms, not their course over time"
			if b, ok := metrics.DominantBucket(f.snap.AllReduce, f.snap.Backend); ok {
				f.arEmpty = fmt.Sprintf("replayed run, %s messages: p50 %s, p99 %s (%d calls); no course over time",
					fmtBytes(float64(b.Bytes)), fmtSeconds(b.P50.Seconds()), fmtSeconds(b.P99.Seconds()), b.Count)
			}
		}
		d.fillCurves(f, CurvesFromSnapshot(f.snap), "the replayed run's own p50 per message-size bucket (this machine's calibration is not that machine's)")
		return
	}
	curves := d.src.AllReduceCurves()
	f.curveNote = "every backend, from this machine's allreduce calibration"
	if len(curves) == 0 {
		curves = CurvesFromSnapshot(f.snap)
		f.curveNote = "live p50 per size bucket of the backends runs used (no calibration on this machine yet: a TP run with auto measures one)"
	}
	d.fillCurves(f, curves, f.curveNote)
}

// fillCurves draws the latency-vs-size curves, the backend in use bold,
// with auto's crossovers.
func (d *Dashboard) fillCurves(f *frame, curves []Curve, note string) {
	f.curveNote = note
	for i, c := range curves {
		l := widgets.Line{Name: c.Backend, Color: widgets.SeriesColor(i)}
		if c.Backend == f.snap.Backend {
			l.Name, l.Bold = c.Backend+" (in use)", true
		}
		for _, p := range c.Points {
			l.Points = append(l.Points, widgets.Point{X: float64(p.Bytes), Y: p.Latency.Seconds()})
		}
		f.curves = append(f.curves, l)
	}
	for _, x := range Crossovers(curves) {
		f.crossovers = append(f.crossovers, widgets.Marker{X: x.Bytes, Label: fmt.Sprintf("auto: %s→%s at %s", x.From, x.To, fmtBytes(x.Bytes))})
	}
}

// fillAcceptance formats the engine's acceptance figures and verdict
// (computed once, by engine/stepstats).
func fillAcceptance(f *frame, s metrics.Snapshot) {
	n := max(len(s.AcceptHist), len(s.PrevAcceptHist))
	for i := range n {
		f.acceptCats = append(f.acceptCats, fmt.Sprint(i))
	}
	f.acceptCur, f.acceptPrev = Fractions(s.AcceptHist), Fractions(s.PrevAcceptHist)
	f.posRate = s.AcceptPerPos
	for i := range f.posRate {
		f.posCats = append(f.posCats, fmt.Sprint(i+1))
	}
	f.perStep = s.Verdict.TokensPerStep
	f.verdict = s.Verdict.String()
	if s.Drafter == "" || s.Drafter == "none" {
		f.perStep = 0
	}
}

// stepWindow is how many recent steps the stacked chart shows.
const stepWindow = 64

func fillSteps(f *frame, s metrics.Snapshot, final finishedRun) {
	steps := s.Steps[max(0, len(s.Steps)-stepWindow):]
	totals := make([]float64, 0, len(steps))
	for _, st := range steps {
		verify := max(st.Verify-st.AllReduce, 0) // Verify includes AllReduce
		bar := []float64{st.Draft.Seconds(), verify.Seconds(), st.AllReduce.Seconds(), st.Other.Seconds()}
		f.stepBars = append(f.stepBars, bar)
		totals = append(totals, bar[0]+bar[1]+bar[2]+bar[3])
	}
	var parts []string
	if s.Replayed != "" {
		parts = append(parts, fmt.Sprintf("replayed: run %s of %s (TP %d, %s) from %s", s.RunID, nameOrDash(s.ReplayedModel), s.TP, nameOrDash(s.Backend), s.Replayed))
	}
	switch {
	case s.Running:
		parts = append(parts, fmt.Sprintf("running: %.1f tokens/s so far", s.TokensPerS))
	case final.set && final.runID == s.RunID:
		parts = append(parts, fmt.Sprintf("last run: %d tokens at %.1f tokens/s (decode, as in its stats row), stop: %s", final.tokens, final.tokS, final.stop))
	case s.RunID != "":
		parts = append(parts, fmt.Sprintf("last run: %.1f tokens/s over its steps", s.TokensPerS))
	}
	if len(totals) > 0 {
		parts = append(parts, fmt.Sprintf("last %d steps: median %s, p99 %s per step",
			len(totals), fmtSeconds(Quantile(totals, 0.5)), fmtSeconds(Quantile(totals, 0.99))))
	}
	f.stepSummary = strings.Join(parts, "; ")
}

func nameOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
