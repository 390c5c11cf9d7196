package ui

import (
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"rigscope/engine/metrics"
	"rigscope/engine/stepstats"
	"rigscope/gpu"
)

// fixedSource is a DashboardSource with fixed contents.
type fixedSource struct {
	snap   metrics.Snapshot
	gpus   []gpu.GPUSnapshot
	gpuErr error
	topo   *gpu.Topology
	curves []Curve
}

func (s *fixedSource) Snapshot() metrics.Snapshot { return s.snap }
func (s *fixedSource) GPUs() []gpu.GPUSnapshot    { return s.gpus }
func (s *fixedSource) GPUError() error            { return s.gpuErr }
func (s *fixedSource) Topology() *gpu.Topology    { return s.topo }
func (s *fixedSource) AllReduceCurves() []Curve   { return s.curves }

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// richSnapshot is a TP=2 speculative run mid-way, at time at.
func richSnapshot(at time.Duration) metrics.Snapshot {
	s := metrics.Snapshot{
		Taken: t0.Add(at), RunID: "run-2", Running: true, Backend: "ring", TP: 2,
		Drafter: "ngram", K: 4, TokensPerS: 180 + 20*math.Sin(at.Seconds()/3), Generated: int(at.Seconds() * 180),
		AcceptHist:     []int{30, 25, 20, 15, 10},
		PrevAcceptHist: []int{50, 25, 12, 8, 5},
		AcceptPerPos:   []float64{0.70, 0.45, 0.25, 0.10},
		MeanAcceptLen:  2.5,
		BreakEven:      1.8,
		Verdict: stepstats.Verdict{State: stepstats.Pays, BaselineSource: stepstats.BaselineInRun, BaselineSteps: 12, BaselineTokS: 70,
			Steps: 100, TokensPerStep: 2.4, MaxPerStep: 5, BreakEven: 1.8, BreakEvenLo: 1.6, BreakEvenHi: 2.0, Speedup: 1.33, SpeedupLo: 1.2, SpeedupHi: 1.5},
		AllReduce: []metrics.LatencySummary{
			{Backend: "ring", Bytes: 16384, Count: 5000, P50: 40*time.Microsecond + time.Duration(at.Seconds())*time.Microsecond, P99: 95 * time.Microsecond, Mean: 45 * time.Microsecond},
			{Backend: "ring", Bytes: 1 << 20, Count: 20, P50: 600 * time.Microsecond, P99: 900 * time.Microsecond},
			{Backend: "tree", Bytes: 16384, Count: 10, P50: 30 * time.Microsecond, P99: 50 * time.Microsecond},
		},
		RankBytesSent: []int64{int64(at.Seconds() * 3e6), int64(at.Seconds() * 2.5e6)},
		RankBytesRecv: []int64{int64(at.Seconds() * 2.5e6), int64(at.Seconds() * 3e6)},
	}
	for i := range 80 {
		ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
		s.Steps = append(s.Steps, stepstats.Step{
			At: ms(float64(i) * 20), Draft: ms(1 + float64(i%3)), Verify: ms(12 + float64(i%5)),
			AllReduce: ms(3 + float64(i%2)), Other: ms(1), Tokens: 1 + i%4, Accepted: i % 4,
		})
	}
	return s
}

func richGPUs() ([]gpu.GPUSnapshot, *gpu.Topology) {
	var gs []gpu.GPUSnapshot
	for i := range 2 {
		g := gpu.GPUSnapshot{
			Info: gpu.Info{Index: i, Name: "NVIDIA H200", BusID: "0000:1" + string(rune('0'+i)) + ":00.0",
				MaxLinkGen: gpu.Val(5), MaxLinkWidth: gpu.Val(16)},
			Seq: 40, ThroughputSource: gpu.SourceCounters,
		}
		for k := range 40 {
			g.TX = append(g.TX, 2e9+1e9*math.Sin(float64(k+i)/4))
			g.RX = append(g.RX, 1.5e9+8e8*math.Cos(float64(k)/5))
			g.Util = append(g.Util, 70+20*math.Sin(float64(k)/6))
		}
		g.Latest = gpu.Sample{At: t0, LinkGen: gpu.Val(5), LinkWidth: gpu.Val(16),
			TX: gpu.Val(g.TX[39]), RX: gpu.Val(g.RX[39]), Util: gpu.Val(g.Util[39]), MemUtil: gpu.Val(40),
			MemUsed: gpu.Val(61 << 30), MemTotal: gpu.Val(141 << 30), Power: gpu.Val(512), SMClock: gpu.Val(1980), Temp: gpu.Val(58)}
		if i == 1 {
			g.Latest.Power = gpu.Unavailable("not supported on this GPU")
		}
		gs = append(gs, g)
	}
	topo := &gpu.Topology{GPUs: []string{"GPU0", "GPU1"}, Links: [][]gpu.Link{
		{{Level: "X", P2PRead: "X", P2PWrite: "X"}, {Level: "NV18", NVLinks: 18, P2PRead: "OK", P2PWrite: "OK"}},
		{{Level: "NV18", NVLinks: 18, P2PRead: "OK", P2PWrite: "OK"}, {Level: "X", P2PRead: "X", P2PWrite: "X"}},
	}}
	return gs, topo
}

func richCurves() []Curve {
	mk := func(name string, base, perByte float64) Curve {
		c := Curve{Backend: name}
		for b := int64(1 << 10); b <= 1<<26; b <<= 2 {
			c.Points = append(c.Points, CurvePoint{Bytes: b, Latency: time.Duration((base + perByte*float64(b)) * 1e3)})
		}
		return c
	}
	return []Curve{mk("ring", 40, 0.004), mk("tree", 8, 0.012), mk("nccl", 25, 0.002)}
}

// runFrames feeds the dashboard n frames of a run 1 s apart, ending at the
// returned snapshot's time.
func runFrames(d *Dashboard, src *fixedSource, n int) {
	for i := range n {
		src.snap = richSnapshot(time.Duration(i) * time.Second)
		d.Refresh()
	}
}

func newRichDashboard(t *testing.T, withGPUs bool) (*Dashboard, *fixedSource) {
	t.Helper()
	src := &fixedSource{curves: richCurves()}
	if withGPUs {
		src.gpus, src.topo = richGPUs()
	} else {
		src.gpuErr = &gpu.UnavailableError{Op: "nvmlInit", Ret: 12} // ERROR_LIBRARY_NOT_FOUND
	}
	d := NewDashboard(src)
	runFrames(d, src, 30)
	return d, src
}

func TestDashboardViewsMarkup(t *testing.T) {
	test.NewTempApp(t)
	d, _ := newRichDashboard(t, true)
	nd, _ := newRichDashboard(t, false)
	views := []struct {
		golden string
		obj    fyne.CanvasObject
	}{
		{"dashboard/gpus.xml", d.views.gpuSection},
		{"dashboard/ranks_no_gpu.xml", nd.views.gpuSection},
		{"dashboard/allreduce.xml", d.views.allreduceSection},
		{"dashboard/acceptance.xml", d.views.acceptSection},
		{"dashboard/steps.xml", d.views.stepsSection},
		{"dashboard/topology.xml", d.views.topoSection},
		{"dashboard/topology_no_gpu.xml", nd.views.topoSection},
	}
	for _, v := range views {
		w := test.NewWindow(v.obj)
		w.Resize(fyne.NewSize(900, 520))
		test.AssertRendersToMarkup(t, v.golden, w.Canvas(), "view %s", v.golden)
		w.Close()
	}
}

func TestDashboardImage(t *testing.T) {
	test.NewTempApp(t)
	// The whole dashboard, and the first screen of it in the two window
	// sizes the panel is checked at (the tab's share of 1600x1000 and
	// 1280x800).
	for _, c := range []struct {
		golden string
		size   fyne.Size
	}{
		{"dashboard/full.png", fyne.NewSize(1100, 1700)},
		{"dashboard/window-1600x1000.png", fyne.NewSize(1600, 900)},
		{"dashboard/window-1280x800.png", fyne.NewSize(1280, 700)},
	} {
		d, _ := newRichDashboard(t, true)
		w := test.NewWindow(d)
		w.Resize(c.size)
		d.Refresh()
		test.AssertRendersToImage(t, c.golden, w.Canvas())
		w.Close()
	}
}

func TestDashboardTexts(t *testing.T) {
	test.NewTempApp(t)
	d, _ := newRichDashboard(t, true)
	nd, _ := newRichDashboard(t, false)
	checks := []struct {
		name, got, want string
	}{
		{"verdict", d.views.verdict.Text, "Speculation pays: 1.33x plain decoding (95% CI 1.20–1.50); 2.40 tokens/step against a break-even of 1.80 (95% CI 1.60–2.00)"},
		{"gpu header", d.views.gpuHeader.Text, "GPUs (2, NVML, TX/RX via PCIe byte counters)"},
		{"no-gpu header", nd.views.gpuHeader.Text, "Engine-counted interconnect traffic (no GPU: NVML unavailable: nvmlInit: libnvidia-ml.so not found (no NVIDIA driver installed))"},
		{"rank card", nd.cardsText(), "rank 0|engine-counted interconnect traffic|total sent 83 MiB · received 69 MiB"},
		{"allreduce title", d.views.arTime.Title, "Allreduce latency over time: ring, 16 KiB messages"},
		{"card stats", d.views.cards[1].stats.Text, "memory 61 GiB / 141 GiB\npower n/a (not supported on this GPU) · SM 1980 MHz · 58 °C"},
	}
	for _, c := range checks {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s = %q, want it to contain %q", c.name, c.got, c.want)
		}
	}
}

func (d *Dashboard) cardsText() string {
	c := d.views.cards[0]
	return c.title.Text + "|" + c.link.Text + "|" + c.stats.Text
}

func TestCrossovers(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		name   string
		curves []Curve
		want   []Crossover
	}{
		// log10 latency of A rises 1 -> 3 over 1 KiB..1 MiB, B stays at 2:
		// they meet halfway in log size, at sqrt(2^10 * 2^20) = 32 KiB.
		{"two lines", []Curve{
			{Backend: "A", Points: []CurvePoint{{1 << 10, 10 * us}, {1 << 20, 1000 * us}}},
			{Backend: "B", Points: []CurvePoint{{1 << 10, 100 * us}, {1 << 20, 100 * us}}},
		}, []Crossover{{Bytes: 32768, From: "A", To: "B"}}},
		{"one backend", []Curve{{Backend: "A", Points: []CurvePoint{{1, us}, {2, 2 * us}}}}, nil},
		{"never crosses", []Curve{
			{Backend: "A", Points: []CurvePoint{{1 << 10, 10 * us}, {1 << 20, 20 * us}}},
			{Backend: "B", Points: []CurvePoint{{1 << 10, 100 * us}, {1 << 20, 200 * us}}},
		}, nil},
		{"empty", nil, nil},
	}
	for _, tc := range tests {
		got := Crossovers(tc.curves)
		if len(got) != len(tc.want) {
			t.Errorf("%s: Crossovers(%v) = %v, want %v", tc.name, tc.curves, got, tc.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i].Bytes-tc.want[i].Bytes) > 1e-6*tc.want[i].Bytes || got[i].From != tc.want[i].From || got[i].To != tc.want[i].To {
				t.Errorf("%s: Crossovers(%v)[%d] = %+v, want %+v", tc.name, tc.curves, i, got[i], tc.want[i])
			}
		}
	}
}

func TestFractions(t *testing.T) {
	for _, tc := range []struct {
		hist  []int
		fracs []float64
	}{
		{[]int{2, 3, 5}, []float64{0.2, 0.3, 0.5}},
		{[]int{4}, []float64{1}},
		{[]int{0, 0, 0}, nil},
		{nil, nil},
	} {
		if got := Fractions(tc.hist); !reflect.DeepEqual(got, tc.fracs) {
			t.Errorf("Fractions(%v) = %v, want %v", tc.hist, got, tc.fracs)
		}
	}
}

func TestQuantile(t *testing.T) {
	tests := []struct {
		vals []float64
		q    float64
		want float64
	}{
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},   // between 2 and 3
		{[]float64{4, 1, 3, 2}, 0.99, 3.97}, // h = 2.97: 3 + 0.97*(4-3)
		{[]float64{4, 1, 3, 2}, 0, 1},
		{[]float64{4, 1, 3, 2}, 1, 4},
		{[]float64{7}, 0.5, 7},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100}, 0.9, 10}, // h = 9
	}
	for _, tc := range tests {
		if got := Quantile(tc.vals, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tc.vals, tc.q, got, tc.want)
		}
	}
	if got := Quantile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("Quantile(nil, 0.5) = %v, want NaN", got)
	}
}

// TestDashboardVerdictStates: the dashboard shows the engine's verdict
// in each of its states, in words with the interval, and its tokens per
// step against the break-even; it computes none of them.
func TestDashboardVerdictStates(t *testing.T) {
	base := stepstats.Verdict{BaselineSource: stepstats.BaselineInRun, BaselineSteps: 9, BaselineTokS: 240, Steps: 40,
		TokensPerStep: 2.6, MaxPerStep: 5, BreakEven: 2.2, BreakEvenLo: 2.0, BreakEvenHi: 2.4, Speedup: 1.18, SpeedupLo: 1.05, SpeedupHi: 1.32}
	for _, tc := range []struct {
		drafter, state string
		want           []string
	}{
		{"none", stepstats.NoSpec, []string{"No speculation"}},
		{"ngram", stepstats.Measuring, []string{"Measuring", "1.18x", "95% CI 1.05–1.32", "9 plain steps interleaved"}},
		{"model", stepstats.Pays, []string{"Speculation pays", "2.60 tokens/step against a break-even of 2.20 (95% CI 2.00–2.40)"}},
		{"model", stepstats.DoesNotPay, []string{"does not pay", "plain decoding would be faster"}},
		{"eagle3", stepstats.CannotPay, []string{"cannot pay at this k", "above k+1 = 5"}},
		{"ngram", stepstats.TooClose, []string{"Too close to call"}},
	} {
		v := base
		v.State = tc.state
		f := &frame{}
		fillAcceptance(f, metrics.Snapshot{Drafter: tc.drafter, K: 4, Verdict: v, MeanAcceptLen: 2.7})
		for _, w := range tc.want {
			if !strings.Contains(f.verdict, w) {
				t.Errorf("verdict %s: %q lacks %q", tc.state, f.verdict, w)
			}
		}
		if want := map[bool]float64{true: 0, false: 2.6}[tc.drafter == "none"]; f.perStep != want {
			t.Errorf("verdict %s: tokens per step shown %v, want %v", tc.state, f.perStep, want)
		}
	}
}

func TestDominantBucket(t *testing.T) {
	s := richSnapshot(0)
	b, ok := metrics.DominantBucket(s.AllReduce, s.Backend)
	if !ok || b.Bytes != 16384 || b.Backend != "ring" {
		t.Errorf("DominantBucket(ring run) = %+v, %v, want the 16 KiB ring bucket", b, ok)
	}
	s.Backend = "nccl"
	if _, ok := metrics.DominantBucket(s.AllReduce, s.Backend); ok {
		t.Errorf("DominantBucket(backend without samples) ok = true")
	}
}

func TestFormatters(t *testing.T) {
	tests := []struct {
		f    func(float64) string
		v    float64
		want string
	}{
		{fmtSeconds, 42e-6, "42µs"}, {fmtSeconds, 1.5e-3, "1.5ms"}, {fmtSeconds, 0.25, "250ms"},
		{fmtSeconds, 2, "2s"}, {fmtSeconds, 0, "0"}, {fmtBytes, 16384, "16 KiB"},
		{fmtRate, 2.5e9, "2.5 GB/s"}, {fmtFraction, 0.45, "45%"},
	}
	for i, tc := range tests {
		if got := tc.f(tc.v); got != tc.want {
			t.Errorf("case %d: format(%v) = %q, want %q", i, tc.v, got, tc.want)
		}
	}
}

// TestDashboardMemoryFlat feeds an hour of 15 Hz frames (54,000 collects,
// one redraw in 300) and checks the live heap does not grow after the
// rings have filled.
func TestDashboardMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("an hour of frames")
	}
	test.NewTempApp(t)
	src := &fixedSource{curves: richCurves()}
	src.gpus, src.topo = richGPUs()
	d := NewDashboard(src)
	w := test.NewWindow(d)
	defer w.Close()
	w.Resize(fyne.NewSize(1000, 1400))
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const frames = 3600 * RefreshRate
	var atQuarter uint64
	base := richSnapshot(0)
	for i := range frames {
		at := time.Duration(i) * time.Second / RefreshRate
		base.Taken, base.Generated = t0.Add(at), i
		base.RankBytesSent[0] = int64(i) * 1000
		src.snap = base
		f := d.collect(t0.Add(at))
		if i%300 == 0 {
			d.views.apply(f)
		}
		if i == frames/4 {
			atQuarter = heap()
		}
	}
	end := heap()
	runtime.KeepAlive(d)
	t.Logf("dashboard heap after 15 min: %d KiB, after 60 min: %d KiB (%d frames)", atQuarter>>10, end>>10, frames)
	if end > atQuarter+512<<10 {
		t.Errorf("heap grew from %d to %d bytes between minute 15 and minute 60", atQuarter, end)
	}
}
