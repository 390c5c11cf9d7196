package widgets

import (
	"math"
	"reflect"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

func TestSeries(t *testing.T) {
	s := NewSeries(3)
	for _, v := range []float64{1, 2, 3, 4} {
		s.Push(v)
	}
	if got := s.Values(nil); !reflect.DeepEqual(got, []float64{2, 3, 4}) {
		t.Errorf("NewSeries(3) after Push 1..4: Values = %v, want [2 3 4]", got)
	}
	s.Reset()
	if s.Len() != 0 {
		t.Errorf("after Reset: Len = %d", s.Len())
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		r     Range
		n     int
		ticks []float64
		out   Range
	}{
		{Range{0, 97}, 5, []float64{0, 50, 100}, Range{0, 100}},
		{Range{3, 17}, 5, []float64{0, 5, 10, 15, 20}, Range{0, 20}},
		{Range{0, 1}, 5, []float64{0, 0.5, 1}, Range{0, 1}},
	}
	for _, tc := range tests {
		ticks, out := NiceTicks(tc.r, tc.n)
		if !reflect.DeepEqual(ticks, tc.ticks) || out != tc.out {
			t.Errorf("NiceTicks(%v, %d) = %v, %v, want %v, %v", tc.r, tc.n, ticks, out, tc.ticks, tc.out)
		}
	}
}

func TestLogTicks(t *testing.T) {
	ticks, out := LogTicks(Range{20e-6, 0.3}, 10, 6)
	want := []float64{1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1}
	for i := range want {
		if i >= len(ticks) || math.Abs(ticks[i]/want[i]-1) > 1e-9 {
			t.Fatalf("LogTicks(20µ..0.3, 10, 6) = %v, want %v", ticks, want)
		}
	}
	if math.Abs(out.Min/1e-5-1) > 1e-9 || math.Abs(out.Max-1) > 1e-9 {
		t.Errorf("LogTicks range = %v, want [1e-5, 1]", out)
	}
	if ticks, _ := LogTicks(Range{1024, 1 << 26}, 4, 6); len(ticks) > 7 {
		t.Errorf("LogTicks(1Ki..64Mi, 4, 6) gave %d ticks, want at most 7", len(ticks))
	}
}

// TestWidgetsDrawEmptyAndTiny renders every widget empty and at sizes too
// small to draw in, which must not panic.
func TestWidgetsDrawEmptyAndTiny(t *testing.T) {
	test.NewTempApp(t)
	objs := []fyne.CanvasObject{
		NewSparkline("x", Plain, SeriesColor(0)),
		NewLineChart("x", Axis{Log: true}, Axis{Log: true}),
		NewBarHistogram("x", "", nil),
		NewStackedBars("x", "", []string{"a"}, nil),
		NewMatrix("x"),
	}
	for _, o := range objs {
		for _, sz := range []fyne.Size{{Width: 1, Height: 1}, {Width: 300, Height: 200}} {
			w := test.NewWindow(o)
			w.Resize(sz)
			w.Canvas().Capture()
			w.Close()
		}
	}
	c := NewLineChart("x", Axis{Log: true}, Axis{Log: true})
	c.Set([]Line{{Name: "a", Points: []Point{{0, 1}, {-1, 2}, {10, math.NaN()}, {100, 0}, {1000, 5}}}}, []Marker{{X: 50, Label: "m"}})
	w := test.NewWindow(c)
	w.Resize(fyne.NewSize(300, 200))
	w.Canvas().Capture()
	w.Close()
}
