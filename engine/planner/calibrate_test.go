package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"rigscope/engine"
)

// fakeTimer records the forwards asked of it; each backend's forward
// takes a fixed time, plus 1 ms per token.
type fakeTimer struct {
	Timer
	calls []string
	us    map[string]int
}

func (f *fakeTimer) TimeForward(_ context.Context, tpSize int, backend string, tokens []int, reps int) ([]engine.ForwardTiming, error) {
	f.calls = append(f.calls, fmt.Sprintf("%s:%d", backend, reps))
	var out []engine.ForwardTiming
	for _, n := range tokens {
		ft := engine.ForwardTiming{Device: "cpu", TP: tpSize, Backend: backend, Tokens: n, Calls: 8}
		for range reps {
			ft.Walls = append(ft.Walls, time.Duration(f.us[backend]+1000*n)*time.Microsecond)
			ft.AllReduce = append(ft.AllReduce, 100*time.Microsecond)
		}
		out = append(out, ft)
	}
	return out, nil
}

// TestTimeForwardsInterleaves: the backends of a TP size take turns a
// few repetitions at a time, the order reversed each pass, and every
// backend ends with all its repetitions at every size.
func TestTimeForwardsInterleaves(t *testing.T) {
	for _, tc := range []struct {
		backends      []string
		reps, perPass int
		want          string
	}{
		{[]string{"ring", "tree"}, 5, 2, "ring:2 tree:2 tree:2 ring:2 ring:1 tree:1"},
		{[]string{"ring", "tree", "oneshot"}, 3, 3, "ring:3 tree:3 oneshot:3"},
		{[]string{"ring"}, 7, 2, "ring:7"},
	} {
		f := &fakeTimer{us: map[string]int{"ring": 3000, "tree": 2000, "oneshot": 1000}}
		pts, err := timeForwards(context.Background(), f, 4, tc.backends, []int{1, 3}, tc.reps, tc.perPass)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(f.calls, " "); got != tc.want {
			t.Errorf("%v reps %d per pass %d: calls %s, want %s", tc.backends, tc.reps, tc.perPass, got, tc.want)
		}
		if len(pts) != 2*len(tc.backends) {
			t.Fatalf("%d points, want %d", len(pts), 2*len(tc.backends))
		}
		for _, p := range pts {
			if want := float64(f.us[p.Backend] + 1000*p.Tokens); p.WallUs.V != want || p.Calls != 8 || p.AllReduceUs.V != 100 || p.TP != 4 {
				t.Errorf("point %+v, want wall %v us, 8 calls of 100 us in all", p, want)
			}
		}
	}
}

// TestPassLevels: a pass that ran every backend slower (load from
// elsewhere) is scaled back; a backend slower in every pass (its own
// cost) stays slower; one backend disturbed in one pass moves the level
// little.
func TestPassLevels(t *testing.T) {
	cells := [][][]float64{ // backend, pass, samples
		{{100}, {200}, {100}, {100}}, // pass 1 twice as slow for everyone
		{{150}, {300}, {150}, {150}}, // 1.5x the first backend throughout
		{{100}, {200}, {400}, {100}}, // and disturbed alone in pass 2
	}
	levels := passLevels(cells)
	for p, want := range []float64{1, 2, 1, 1} {
		if !near(levels[p], want, 1e-9) {
			t.Errorf("levels %v, want [1 2 1 1]", levels)
			break
		}
	}
	if l := passLevels(cells[:1]); l[1] != 1 {
		t.Errorf("one backend: levels %v, want all 1", l)
	}
}
