package engine

import (
	"context"
	"strings"
	"testing"
)

func TestTimeForward(t *testing.T) {
	ctx := context.Background()
	e, err := Open(ctx, "synthetic:tiny", Options{CtxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fts, err := e.TimeForward(ctx, 2, "ring", []int{1, 3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, ft := range fts {
		if ft.TP != 2 || ft.Backend != "ring" || ft.Tokens != []int{1, 3}[i] || len(ft.Walls) != 2 || len(ft.AllReduce) != 2 || ft.Device != "cpu" {
			t.Errorf("TimeForward(TP 2 ring)[%d] = %+v", i, ft)
		}
		// Two sums per layer, Megatron-style: the planner's count.
		if ft.Calls != 2*e.Config().Layers {
			t.Errorf("a forward made %d allreduce calls, want 2 per layer = %d", ft.Calls, 2*e.Config().Layers)
		}
		for _, w := range ft.Walls {
			if w <= 0 {
				t.Errorf("wall %v", w)
			}
		}
	}
	// The engine is usable after: a run still works.
	if _, err := e.Run(ctx, RunConfig{PromptIDs: []int32{1, 2, 3}, MaxTokens: 4, TP: 2, AllReduce: "ring"}, nil); err != nil {
		t.Fatalf("run after TimeForward: %v", err)
	}
	for _, tc := range []struct {
		tp     int
		tokens []int
		want   string
	}{
		{3, []int{1}, "does not divide"},
		{1, []int{0}, "outside 1.."},
		{1, []int{200}, "outside 1.."},
		{64, []int{1}, "more than this machine can run"},
	} {
		if _, err := e.TimeForward(ctx, tc.tp, "ring", tc.tokens, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TimeForward(TP %d, %v): %v, want an error saying %q", tc.tp, tc.tokens, err, tc.want)
		}
	}
}

func TestTimeDraft(t *testing.T) {
	ctx := context.Background()
	e, err := Open(ctx, "synthetic:tiny", Options{CtxLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ds, err := e.TimeDraft(ctx, DrafterConfig{Kind: "ngram", K: 4}, 64, 3)
	if err != nil || len(ds) != 3 {
		t.Fatalf("TimeDraft(ngram) = %v, %v", ds, err)
	}
	for _, tc := range []struct {
		dc   DrafterConfig
		ctx  int
		want string
	}{
		{DrafterConfig{Kind: "none"}, 64, "no drafter"},
		{DrafterConfig{Kind: "ngram", K: 4}, 1, "context of 1 tokens"},
		{DrafterConfig{Kind: "ngram", K: 4}, 500, "context of 500 tokens"},
		{DrafterConfig{Kind: "ngram", K: 40}, 64, "k=40"},
	} {
		if _, err := e.TimeDraft(ctx, tc.dc, tc.ctx, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TimeDraft(%+v, %d): %v, want an error saying %q", tc.dc, tc.ctx, err, tc.want)
		}
	}
}
