package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rigscope/engine"
	"rigscope/engine/tokenizer"
)

// syncBuffer is a log a test reads while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openTiny opens synthetic:tiny and serves it with ChatML on loopback.
func openTiny(t *testing.T, queue int) (*engine.Engine, *Server, string, *syncBuffer) {
	t.Helper()
	eng, err := engine.Open(context.Background(), "synthetic:tiny", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	opts := EngineOptions(eng, tokenizer.TemplateChatML)
	opts.Base.Drafter.Kind = "none"
	opts.QueueLen = queue
	log := &syncBuffer{}
	opts.Log = log
	s, err := New(eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	return eng, s, listen(t, s, DefaultLimits), log
}

func engineText(t *testing.T, eng *engine.Engine, prompt string, maxTokens int) string {
	t.Helper()
	var sb strings.Builder
	_, err := eng.Run(context.Background(), engine.RunConfig{Prompt: prompt, MaxTokens: maxTokens, TP: 1}, func(ev engine.Event) {
		for _, tk := range ev.Tokens {
			sb.WriteString(tk.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func decodeJSON(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGreedyEqualsEngine: greedy output through the API, whole or
// streamed, completions or chat, is the engine's own for the same prompt
// (the chat prompt rendered with the template).
func TestGreedyEqualsEngine(t *testing.T) {
	eng, _, url, _ := openTiny(t, 4)
	const prompt, n = "Once upon a time", 24
	want := engineText(t, eng, prompt, n)
	chatPrompt, err := tokenizer.ApplyTemplate(tokenizer.TemplateChatML, []tokenizer.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: prompt}}, true)
	if err != nil {
		t.Fatal(err)
	}
	wantChat := engineText(t, eng, chatPrompt, n)
	if want == "" || wantChat == "" {
		t.Fatalf("the engine generated nothing for %q", prompt)
	}
	messages := `"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"` + prompt + `"}]`
	for _, c := range []struct {
		path, body, want string
	}{
		{"/v1/completions", `"prompt":"` + prompt + `"`, want},
		{"/v1/chat/completions", messages, wantChat},
	} {
		chat := strings.Contains(c.path, "chat")
		body := `{` + c.body + `,"max_tokens":` + strconv.Itoa(n) + `,"temperature":0`
		resp := post(t, url+c.path, body+`}`)
		v := decodeJSON(t, resp.Body)
		resp.Body.Close()
		ch := v["choices"].([]any)[0].(map[string]any)
		got, _ := ch["text"].(string)
		if chat {
			got = ch["message"].(map[string]any)["content"].(string)
		}
		if got != c.want {
			t.Errorf("%s: %q, want the engine's %q", c.path, got, c.want)
		}
		resp = post(t, url+c.path, body+`,"stream":true}`)
		text, _, _ := streamed(t, sseEvents(t, resp.Body), chat)
		resp.Body.Close()
		if text != c.want {
			t.Errorf("%s streamed: %q, want the engine's %q", c.path, text, c.want)
		}
	}
}

// TestEngineDisconnect: on the real engine, a client that leaves a long
// stream cancels the run (it ends "cancelled" well short of its length)
// and the next request is answered.
func TestEngineDisconnect(t *testing.T) {
	_, _, url, log := openTiny(t, 4)
	const long = 3000
	resp := post(t, url+"/v1/completions", `{"prompt":"a","max_tokens":`+strconv.Itoa(long)+`,"ignore_eos":true,"stream":true}`)
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	finished := regexp.MustCompile(`completion=(\d+) finish=(\w+)`)
	deadline := time.Now().Add(liveness)
	var m []string
	for m == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no run ended after the client left; log:\n%s", log)
		}
		time.Sleep(5 * time.Millisecond)
		m = finished.FindStringSubmatch(log.String())
	}
	if n, _ := strconv.Atoi(m[1]); m[2] != "cancelled" || n >= long {
		t.Errorf("the abandoned run ended %s after %d tokens; want cancelled before %d", m[2], n, long)
	}
	resp = post(t, url+"/v1/completions", `{"prompt":"a","max_tokens":4}`)
	v := decodeJSON(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || v["usage"].(map[string]any)["completion_tokens"] == nil {
		t.Errorf("the next request: %d %v", resp.StatusCode, v)
	}
}
