package planner

import (
	"context"
	"testing"
	"time"

	"rigscope/engine"
)

// gateTimer holds TimeForward until released.
type gateTimer struct {
	Timer
	entered, release chan struct{}
}

func (g gateTimer) TimeForward(ctx context.Context, tpSize int, backend string, tokens []int, reps int) ([]engine.ForwardTiming, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Timer.TimeForward(ctx, tpSize, backend, tokens, reps)
}

// TestPlanWhileMeasuring: the panel predicts from the tables at hand while
// a calibration runs in the background; the measured tables arrive whole.
func TestPlanWhileMeasuring(t *testing.T) {
	ctx := context.Background()
	e, err := engine.Open(ctx, "synthetic:tiny", engine.Options{CtxLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := NewSession(e, "cpu", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := gateTimer{Timer: e, entered: make(chan struct{}), release: make(chan struct{})}
	s.timer = g
	grid := Grid{TP: []int{1}, Drafters: []string{"none"}}
	done := make(chan error, 1)
	go func() {
		_, err := s.Measure(ctx, grid, Calibration{Reps: 2})
		done <- err
	}()
	<-g.entered
	planned := make(chan []Prediction, 1)
	go func() {
		p, _ := s.Plan(ctx, grid)
		planned <- p
	}()
	select {
	case p := <-planned:
		if len(p) != 1 || p[0].OK() {
			t.Errorf("Plan during Measure = %+v, want the one row, still missing its measurement", p)
		}
	case <-time.After(20 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("Plan waited for Measure")
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Plan(ctx, grid); !p[0].OK() {
		t.Errorf("after Measure: %+v", p[0])
	}
}
