package spec

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/spec/spectest"
)

// pendingTokens is a chain "left on the device": its tokens.
type pendingTokens []int32

func (p pendingTokens) Len() int { return len(p) }

// chainFree is a FreeTarget that verifies pending chains, logging calls.
type chainFree struct {
	*spectest.FreeTarget
	log *[]string
}

func (t chainFree) VerifyChain(ctx context.Context, next int32, p PendingChain) ([]int32, []int32, error) {
	drafts := []int32(p.(pendingTokens))
	*t.log = append(*t.log, fmt.Sprintf("verify %d", next))
	ids, err := t.ForwardIDs(ctx, model.Batch{Tokens: append([]int32{next}, drafts...), Logits: model.LogitsAll})
	return slices.Clone(ids), drafts, err
}

// deviceDrafter proposes t+1, t+2, ... after the last token (what the
// FreeTarget decodes), wrong at every third sequence length so that
// acceptance varies, and leaves its chains "on the device".
type deviceDrafter struct{ log *[]string }

func (d deviceDrafter) Name() string { return "device" }
func (d deviceDrafter) Propose(ctx context.Context, seq []int32, req Request) (Proposal, error) {
	return Proposal{}, fmt.Errorf("deviceDrafter: Propose called (seq %d)", len(seq))
}
func (d deviceDrafter) Accept([]int) {}
func (d deviceDrafter) Reset()       {}
func (d deviceDrafter) ProposeOnDevice(ctx context.Context, seq []int32, req Request) (PendingChain, error) {
	*d.log = append(*d.log, fmt.Sprintf("propose %d", len(seq)))
	p := make(pendingTokens, req.K)
	t := seq[len(seq)-1]
	for i := range p {
		t++
		p[i] = t
		if len(seq)%3 == 0 && i == 1 {
			p[i] = 0 // rejected: the rest of the chain is cut
		}
	}
	return p, nil
}

// TestRunAhead: a step whose chain was verified on the device enqueues the
// next step's chain before its tokens are emitted (runAhead), the output
// is plain greedy decoding's, and the chain drafted ahead is the one the
// next step verifies (or dropped where the generation ends).
func TestRunAhead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxTokens int
		stopAt    int // a Stop callback ends the generation after this many tokens (0: none)
		eos       int32
		baseline  bool // plain steps interleaved (MeasureBaseline): their successors propose for themselves
	}{
		{"max tokens", 40, 0, -1, false},
		{"stop string", 40, 17, -1, false},
		{"eos", 40, 0, 30, false},
		{"baseline steps", 120, 0, -1, true},
	} {
		var log []string
		tgt := chainFree{FreeTarget: spectest.NewFreeTarget(1000), log: &log}
		var emitted []int32
		o := Options{MaxTokens: tc.maxTokens, EOS: tc.eos, K: 4, Drafter: deviceDrafter{log: &log}, MeasureBaseline: tc.baseline,
			Emit: func(ids []int32, _ []bool) {
				emitted = append(emitted, ids...)
				log = append(log, fmt.Sprintf("emit %d", len(emitted)))
			}}
		if tc.stopAt > 0 {
			o.Stop = func(ids []int32, final bool) (int, bool) {
				if n := len(emitted) + len(ids); n >= tc.stopAt {
					return tc.stopAt - len(emitted), true
				}
				return len(ids), false
			}
		}
		res, err := Generate(context.Background(), tgt, []int32{5, 6, 7}, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := []int32{}
		for x := int32(8); len(want) < tc.maxTokens; x++ {
			want = append(want, x)
			if x == tc.eos || tc.stopAt > 0 && len(want) == tc.stopAt {
				break
			}
		}
		if !slices.Equal(res.Tokens, want) {
			t.Errorf("%s: tokens %v, want plain greedy %v", tc.name, res.Tokens, want)
		}
		// Every verify after the first finds its chain enqueued before the
		// previous step's tokens went out: propose, emit, verify.
		verifies, ahead := 0, 0
		for i, e := range log {
			if strings.HasPrefix(e, "verify") {
				verifies++
				if i >= 2 && strings.HasPrefix(log[i-1], "emit") && strings.HasPrefix(log[i-2], "propose") {
					ahead++
				}
			}
		}
		if tc.baseline {
			if res.Counts.Base.N < 3 || ahead < verifies/2 || ahead > verifies-1-res.Counts.Base.N+1 {
				t.Errorf("%s: %d baseline steps; %d of %d verifies found their chain enqueued ahead\n%v", tc.name, res.Counts.Base.N, ahead, verifies, log)
			}
		} else if verifies < 3 || ahead != verifies-1 {
			t.Errorf("%s: %d of %d verifies found their chain enqueued ahead (want all but the first)\n%v", tc.name, ahead, verifies, log)
		}
		proposes := 0
		for _, e := range log {
			if strings.HasPrefix(e, "propose") {
				proposes++
			}
		}
		if extra := proposes - verifies; extra > 1 || tc.stopAt == 0 && extra != 0 {
			t.Errorf("%s: %d chains enqueued for %d verifies (a chain is drafted ahead only where the generation surely continues)", tc.name, proposes, verifies)
		}
	}
}
