package engine_test

import (
	"context"
	"strings"
	"testing"

	"rigscope/engine"
)

// runText runs cfg and returns the streamed text, the tokens streamed and
// the stats.
func runText(t *testing.T, e *engine.Engine, cfg engine.RunConfig) (string, int, engine.Stats) {
	t.Helper()
	var sb strings.Builder
	n := 0
	st, err := e.Run(context.Background(), cfg, func(ev engine.Event) {
		for _, tk := range ev.Tokens {
			sb.WriteString(tk.Text)
			n++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String(), n, st
}

// TestRunStop: a stop string ends the run with StopReason "stop" in the
// step that completes it, the text cut just before it, the same greedy text
// as the run without it up to there; plain and speculative (a step of
// several tokens is cut at the token that completes the stop string).
func TestRunStop(t *testing.T) {
	e, err := engine.Open(context.Background(), "synthetic:tiny", engine.Options{CtxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, d := range []engine.DrafterConfig{{Kind: "none"}, {Kind: "model", Path: "synthetic:tiny", K: 4}} {
		base := engine.RunConfig{PromptIDs: []int32{1, 5, 9, 13}, MaxTokens: 60, IgnoreEOS: true, TP: 1, Drafter: d}
		full, fullTokens, st := runText(t, e, base)
		if st.StopReason != "max_tokens" || len(full) < 20 {
			t.Fatalf("%s: the unstopped run ended %s with %d bytes of text %q; the test needs max_tokens and 20 bytes", d.Kind, st.StopReason, len(full), full)
		}
		stop := full[len(full)/2 : len(full)/2+3]
		want := full[:strings.Index(full, stop)]
		cfg := base
		cfg.Stop = []string{"\x00never", stop}
		got, n, st := runText(t, e, cfg)
		if st.StopReason != "stop" || got != want {
			t.Errorf("%s: stop %q ended %s with %q; want stop with %q", d.Kind, stop, st.StopReason, got, want)
		}
		if n != st.GeneratedTokens || n >= fullTokens {
			t.Errorf("%s: %d tokens streamed, %d counted, %d without the stop; want streamed = counted < unstopped", d.Kind, n, st.GeneratedTokens, fullTokens)
		}
		// A stop string that never completes changes nothing.
		cfg.Stop = []string{full + "!"}
		if got, _, st := runText(t, e, cfg); got != full || st.StopReason != "max_tokens" {
			t.Errorf("%s: an unmatched stop gave %s with %q; want max_tokens with the full text", d.Kind, st.StopReason, got)
		}
	}
}

// TestRunStopRefused: empty and too many stop strings are refused by name.
func TestRunStopRefused(t *testing.T) {
	for _, c := range []struct {
		stops []string
		msg   string
	}{
		{[]string{"a", ""}, "stop string 2 is empty"},
		{[]string{"a", "b", "c", "d", "e"}, "5 stop strings; at most 4"},
	} {
		err := engine.CheckRunConfig(engine.RunConfig{Prompt: "x", Stop: c.stops})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("stops %q: %v, want %q", c.stops, err, c.msg)
		}
	}
}
