package engine

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/sample"
)

// TestGreedyVsPeer compares this engine with another engine's greedy
// tokens on the same model file, teacher-forced: at every step of the
// peer's sequence, is our argmax the peer's next token? Opt in with
// RIGSCOPE_PEER_MODEL (a model file) and RIGSCOPE_PEER_TOKENS (the peer's
// greedy continuation of each reference prompt, one line of token ids per
// prompt, e.g. llama.cpp's; bench/peer-greedy.sh writes both for a
// quantized GGUF). RIGSCOPE_PEER_MIN (default 0.97) is the least agreement
// that passes.
func TestGreedyVsPeer(t *testing.T) {
	path, tokPath := os.Getenv("RIGSCOPE_PEER_MODEL"), os.Getenv("RIGSCOPE_PEER_TOKENS")
	if path == "" || tokPath == "" {
		t.Skip("set RIGSCOPE_PEER_MODEL and RIGSCOPE_PEER_TOKENS to compare with a peer's greedy tokens")
	}
	minAgree := 0.97
	if s := os.Getenv("RIGSCOPE_PEER_MIN"); s != "" {
		var err error
		if minAgree, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatalf("RIGSCOPE_PEER_MIN: %v", err)
		}
	}
	ref := loadReference(t)
	f, err := os.Open(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var peer [][]int32
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ids []int32
		for _, w := range strings.Fields(sc.Text()) {
			v, err := strconv.Atoi(w)
			if err != nil {
				t.Fatalf("%s: %v", tokPath, err)
			}
			ids = append(ids, int32(v))
		}
		peer = append(peer, ids)
	}
	if len(peer) != len(ref.Prompts) {
		t.Fatalf("%s: %d lines for %d reference prompts", tokPath, len(peer), len(ref.Prompts))
	}
	eng, err := Open(context.Background(), path, Options{CtxLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	tg, err := eng.target(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	tg.attach(nil)
	ctx := context.Background()
	agree, total, full := 0, 0, 0
	for i, p := range ref.Prompts {
		if err := tg.Rewind(0); err != nil {
			t.Fatal(err)
		}
		in, same := p.PromptIDs, true
		for _, want := range peer[i] {
			logits, err := tg.Forward(ctx, model.Batch{Tokens: in, Logits: model.LogitsLast})
			if err != nil {
				t.Fatalf("prompt %d: %v", i, err)
			}
			total++
			if sample.Argmax(logits) == want {
				agree++
			} else {
				same = false
			}
			in = []int32{want}
		}
		if same {
			full++
		}
	}
	rate := float64(agree) / float64(total)
	t.Logf("%s: teacher-forced argmax agreement with the peer %d/%d = %.4f; %d of %d prompts agree at every step", path, agree, total, rate, full, len(peer))
	if rate < minAgree {
		t.Errorf("agreement %.4f below %.2f", rate, minAgree)
	}
}
