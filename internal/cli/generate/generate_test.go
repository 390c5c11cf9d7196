package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestGenerateDrafterFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--k", "0"}, "--k 0 must be at least 1"},
		{[]string{"--k", "17", "--drafter", "ngram"}, "k=17 outside 1..16"},
		{[]string{"--drafter", "ngram", "--ngram-min", "0"}, "an n-gram has at least 1 token"},
		{[]string{"--drafter", "model"}, "model needs a draft model file (--draft PATH)"},
		{[]string{"--drafter", "ngram", "--draft", "x"}, "is for the model or eagle3 drafter, not ngram"},
		{[]string{"--drafter", "bogus"}, `unknown kind "bogus"`},
		{[]string{"--draft", "synthetic:small"}, "first differing token id 512"},
		{[]string{"--drafter", "ngram", "--tree", "8", "--k", "16", "--ctx", "64"}, "nodes after a 3-token prompt"},
	} {
		args := append([]string{"generate", "--model", "synthetic:tiny", "--prompt-ids", "1,2,3", "--max-tokens", "4"}, tc.args...)
		var out, errOut bytes.Buffer
		err := Command.Run(context.Background(), args[1:], &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rigscope %s: error %v, want %q", strings.Join(args, " "), err, tc.want)
		}
	}
}

func TestGenerateSpecJSON(t *testing.T) {
	args := []string{"generate", "--model", "synthetic:tiny", "--prompt-ids", "1,5,6,7,5,6,7,5,6", "--max-tokens", "12",
		"--draft", "synthetic:tiny", "--k", "3", "--json"}
	var out, errOut bytes.Buffer
	if err := Command.Run(context.Background(), args[1:], &out, &errOut); err != nil {
		t.Fatalf("rigscope %s: %v", strings.Join(args, " "), err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("rigscope %s: output %q: %v", strings.Join(args, " "), out.String(), err)
	}
	stats, _ := got["stats"].(map[string]any)
	for _, k := range []string{"drafts", "draft_tokens", "accepted_tokens", "accept_hist", "accept_per_pos", "mean_accept_len",
		"draft_ms", "verify_ms", "baseline_tokens_per_s", "break_even_accept_len", "verdict"} {
		if _, ok := stats[k]; !ok {
			t.Errorf("rigscope %s: stats lack %q: %v", strings.Join(args, " "), k, stats)
		}
	}
	// No plain run came first: the run measures its own baseline.
	if v, _ := stats["verdict"].(map[string]any); got["baseline_source"] != "in_run_plain_steps" || v["baseline_source"] != got["baseline_source"] {
		t.Errorf("baseline_source = %v, verdict %v; want in_run_plain_steps in both", got["baseline_source"], v)
	}
	if fd, _ := got["from_draft"].([]any); len(fd) != 12 {
		t.Errorf("from_draft = %v, want 12 flags", got["from_draft"])
	}
}

// TestGenerateStop: --stop (repeatable) ends the text before the first
// stop string to complete, with stop_reason "stop".
func TestGenerateStop(t *testing.T) {
	base := []string{"generate", "--model", "synthetic:tiny", "--prompt-ids", "1,5,9,13", "--max-tokens", "30", "--ignore-eos", "--json"}
	run := func(extra ...string) (string, string) {
		args := append(append([]string{}, base...), extra...)
		var out, errOut bytes.Buffer
		if err := Command.Run(context.Background(), args[1:], &out, &errOut); err != nil {
			t.Fatalf("rigscope %s: %v", strings.Join(args, " "), err)
		}
		var got struct {
			Text  string `json:"text"`
			Stats struct {
				StopReason string `json:"stop_reason"`
			} `json:"stats"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("rigscope %s: output %q: %v", strings.Join(args, " "), out.String(), err)
		}
		return got.Text, got.Stats.StopReason
	}
	full, why := run()
	if why != "max_tokens" || len(full) < 10 {
		t.Fatalf("the unstopped run gave %q (%s); the test needs 10 bytes and max_tokens", full, why)
	}
	stop := full[len(full)/2 : len(full)/2+2]
	got, why := run("--stop", "\x00never", "--stop", stop)
	if want := full[:strings.Index(full, stop)]; got != want || why != "stop" {
		t.Errorf("--stop %q: %q (%s), want %q (stop)", stop, got, why, want)
	}
}
