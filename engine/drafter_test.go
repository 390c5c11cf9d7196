package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/tokenizer"
)

func openTiny(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(context.Background(), "synthetic:tiny", Options{CtxLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.CloseDrafters(); e.Close() })
	return e
}

var tinyPrompt = []int32{1, 40, 41, 42, 43, 7, 9, 40, 41, 42, 43, 7, 100}

func TestNormalizeDrafter(t *testing.T) {
	for _, tc := range []struct {
		in   DrafterConfig
		want string // error substring; "" = ok
	}{
		{DrafterConfig{}, ""},
		{DrafterConfig{Kind: "ngram"}, ""},
		{DrafterConfig{Path: "synthetic:tiny"}, ""},
		{DrafterConfig{Path: "x.gguf"}, "draft x.gguf: no such file"},
		{DrafterConfig{Kind: "ngram", Path: "synthetic:tiny"}, "not ngram"},
		{DrafterConfig{Kind: "none", Tree: -1}, "tree branching -1 outside"},
		{DrafterConfig{Kind: "ngram", K: 17}, "k=17 outside 1..16"},
		{DrafterConfig{Kind: "ngram", K: -1}, "k=-1 outside 1..16"},
		{DrafterConfig{Kind: "ngram", NgramMin: 0, NgramMax: 2}, "minimum n-gram size 0 must be at least 1"},
		{DrafterConfig{Kind: "model"}, "needs a draft model file"},
		{DrafterConfig{Kind: "ngram", Tree: 9}, "tree branching 9 outside"},
		{DrafterConfig{Kind: "medusa"}, `unknown kind "medusa"`},
	} {
		_, err := NormalizeDrafter(tc.in)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("NormalizeDrafter(%+v) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestDraftVocabMismatch(t *testing.T) {
	e := openTiny(t)
	_, err := e.Run(context.Background(), RunConfig{PromptIDs: tinyPrompt, MaxTokens: 4, Drafter: DrafterConfig{Path: "synthetic:small"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "first differing token id 512") {
		t.Errorf("Run(draft synthetic:small on tiny) error = %v, want one naming token id 512", err)
	}
	a, _ := tokenizer.New(synthetic.Vocab(512))
	v := synthetic.Vocab(512)
	v.Tokens[300] = "zz!"
	b, _ := tokenizer.New(v)
	err = CompareVocab(512, a, 512, b, nil, "d.gguf")
	if err == nil || !strings.Contains(err.Error(), "token id 300") {
		t.Errorf("CompareVocab(piece 300 differs) = %v, want one naming token id 300", err)
	}
	if err := CompareVocab(512, a, 512, a, nil, "d.gguf"); err != nil {
		t.Errorf("CompareVocab(same) = %v", err)
	}
}

func TestBadSpecInput(t *testing.T) {
	e := openTiny(t)
	for _, tc := range []struct {
		dc   DrafterConfig
		want string
	}{
		{DrafterConfig{Kind: "ngram", K: 16, Tree: 8}, "a tree of 8 x 16 = 128 nodes after a 13-token prompt needs 142 positions, the context holds 128"},
		{DrafterConfig{Kind: "ngram", K: 20}, "k=20 outside 1..16"},
		{DrafterConfig{Kind: "ngram", NgramMin: 2, NgramMax: 1}, "maximum n-gram size 1 is below the minimum 2"},
	} {
		_, err := e.Run(context.Background(), RunConfig{PromptIDs: tinyPrompt, MaxTokens: 4, Drafter: tc.dc}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(drafter %+v) error = %v, want %q", tc.dc, err, tc.want)
		}
	}
}

func collect(t *testing.T, e *Engine, ctx context.Context, cfg RunConfig, stopAfter int, stop func()) ([]int32, []bool, Stats) {
	t.Helper()
	var ids []int32
	var fromDraft []bool
	st, err := e.Run(ctx, cfg, func(ev Event) {
		for _, tok := range ev.Tokens {
			ids = append(ids, tok.ID)
			fromDraft = append(fromDraft, tok.FromDraft)
		}
		if stop != nil && len(ids) >= stopAfter {
			stop()
		}
	})
	if err != nil {
		t.Fatalf("Run(%+v): %v", cfg.Drafter, err)
	}
	return ids, fromDraft, st
}

// Swapping drafters between runs reuses the loaded draft model; a run
// cancelled mid-step leaves the caches consistent for the next run; stats
// and provenance are filled.
func TestSpecRunsAndCancel(t *testing.T) {
	e := openTiny(t)
	ctx := context.Background()
	plainCfg := RunConfig{PromptIDs: tinyPrompt, MaxTokens: 24}
	want, _, pst := collect(t, e, ctx, plainCfg, 0, nil)
	if pst.BaselineTokensPerS <= 0 || pst.Drafts != 0 {
		t.Errorf("plain run stats %+v: want a baseline and no drafts", pst)
	}
	draft := DrafterConfig{Path: "synthetic:tiny", K: 4} // the target drafting for itself: all accepted
	cfg := plainCfg
	cfg.Drafter = draft
	got, fromDraft, st := collect(t, e, ctx, cfg, 0, nil)
	if !slices.Equal(got, want) {
		t.Errorf("Run(self-draft) = %v, plain = %v", got, want)
	}
	if st.Drafts == 0 || st.AcceptedTokens != st.DraftTokens || st.MeanAcceptLen <= 1 || st.BreakEvenAcceptLen <= 0 ||
		len(st.AcceptHist) != 5 || len(st.AcceptPerPos) != 4 || st.AcceptPerPos[0] != 1 {
		t.Errorf("Run(self-draft) stats = %+v", st)
	}
	if n := countTrue(fromDraft); n != st.AcceptedTokens {
		t.Errorf("Run(self-draft): %d tokens marked from draft, %d accepted", n, st.AcceptedTokens)
	}
	d1, _ := e.drafter(DrafterConfig{Kind: "model", Path: "synthetic:tiny"})
	d2, _ := e.drafter(DrafterConfig{Kind: "model", Path: "synthetic:tiny"})
	if d1 != d2 {
		t.Errorf("the draft model was loaded twice")
	}
	for _, dc := range []DrafterConfig{{Path: "synthetic:tiny?seed=5", K: 3}, {Kind: "ngram", K: 3, Tree: 2}, {Path: "synthetic:tiny", K: 3, Tree: 2}} {
		cctx, cancel := context.WithCancel(ctx)
		c := plainCfg
		c.Drafter = dc
		_, _, st := collect(t, e, cctx, c, 6, cancel)
		cancel()
		if st.StopReason != "cancelled" {
			t.Errorf("Run(%+v) cancelled after 6 tokens: stop reason %q", dc, st.StopReason)
		}
		got, _, _ := collect(t, e, ctx, c, 0, nil)
		if !slices.Equal(got, want) {
			t.Errorf("Run(%+v) after a cancelled run = %v, plain = %v", dc, got, want)
		}
	}
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}
