package tp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A rank that fails mid-run aborts the group: the ranks already waiting in
// the next collective return promptly with its error.
func TestRankFailureStopsOthers(t *testing.T) {
	boom := errors.New("rank 1: injected failure")
	for _, backend := range testBackends {
		for _, ranks := range []int{2, 4} {
			g := newTestGroup(t, backend, ranks)
			bufs := RandomInputs(ranks, 100, 3)
			errs := runAll(t, ranks, 20*time.Second, func(r int) error {
				c := g.Comm(r)
				if err := c.AllReduceSum(context.Background(), bufs[r]); err != nil {
					return err
				}
				if r == 1 {
					time.Sleep(10 * time.Millisecond) // let the others block
					g.Abort(boom)
					return boom
				}
				return c.AllReduceSum(context.Background(), bufs[r])
			})
			for r, err := range errs {
				if !errors.Is(err, boom) {
					t.Errorf("%s on %d ranks: rank %d returned %v, want the injected failure", backend, ranks, r, err)
				}
			}
			if err := g.Comm(0).AllReduceSum(context.Background(), bufs[0]); !errors.Is(err, boom) {
				t.Errorf("%s: a call after Abort returned %v, want the injected failure", backend, err)
			}
		}
	}
}

// A rank whose ctx is cancelled returns ctx's error and releases its peers,
// even when another rank never arrives.
func TestCancelReleasesPeers(t *testing.T) {
	for _, backend := range testBackends {
		const ranks = 4
		g := newTestGroup(t, backend, ranks)
		ctx, cancel := context.WithCancel(context.Background())
		bufs := RandomInputs(ranks, 1000, 4)
		time.AfterFunc(20*time.Millisecond, cancel)
		errs := runAll(t, ranks-1, 20*time.Second, func(r int) error { // rank 3 never comes
			c := ctx
			if r != 0 {
				c = context.Background()
			}
			return g.Comm(r).AllReduceSum(c, bufs[r])
		})
		for r, err := range errs {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: rank %d returned %v, want context.Canceled", backend, r, err)
			}
		}
		cancel()
	}
}

func TestLengthMismatchFails(t *testing.T) {
	g := newTestGroup(t, "twoshot", 3)
	errs := runAll(t, 3, 20*time.Second, func(r int) error {
		return g.Comm(r).AllReduceSum(context.Background(), make([]float32, 10+r))
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "different lengths") {
			t.Errorf("rank %d: %v, want a length mismatch", r, err)
		}
	}
}

func TestAllGatherBadOut(t *testing.T) {
	g := newTestGroup(t, "ring", 2)
	errs := runAll(t, 2, 20*time.Second, func(r int) error {
		return g.Comm(r).AllGather(context.Background(), make([]float32, 4), make([]float32, 4+r*4))
	})
	if errs[0] == nil || errs[1] == nil {
		t.Fatalf("AllGather with a short out: %v", errs)
	}
	_ = fmt.Sprint(errs)
}
