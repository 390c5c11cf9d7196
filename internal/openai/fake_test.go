package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"rigscope/engine"
	"rigscope/engine/tokenizer"
)

// byteTok is a tokenizer of one token per byte after BOS (id 256); id 257
// is ChatML's <|im_end|>.
type byteTok struct{}

func (byteTok) Encode(text string, addSpecial bool) []int32 {
	var ids []int32
	if addSpecial {
		ids = append(ids, 256)
	}
	for _, b := range []byte(text) {
		ids = append(ids, int32(b))
	}
	return ids
}
func (byteTok) Decode(ids []int32) string { return "" }
func (byteTok) Piece(id int32) string {
	if id == 257 {
		return "<|im_end|>"
	}
	return string(rune(id))
}
func (byteTok) VocabSize() int { return 258 }
func (byteTok) BOS() int32     { return 256 }
func (byteTok) EOS() int32     { return -1 }

// fakeEngine emits its script's tokens, one per step, then stops as at
// EOS; it stops at MaxTokens, at the chat format's end-of-turn token, at a
// stop string (cut as the engine cuts),
// and at ctx's end before any step. With gate
// set, each step waits for a value on it (or for ctx's end).
type fakeEngine struct {
	script  []engine.Token
	gate    chan struct{}
	started chan struct{} // when set, told of each run's start

	mu    sync.Mutex
	cfgs  []engine.RunConfig
	ended []string // stop reasons, in order
}

func tokens(texts ...string) []engine.Token {
	ts := make([]engine.Token, len(texts))
	for i, s := range texts {
		ts[i] = engine.Token{ID: int32(i), Text: s}
	}
	return ts
}

func (f *fakeEngine) Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error) {
	f.mu.Lock()
	f.cfgs = append(f.cfgs, cfg)
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	st := engine.Stats{PromptTokens: len(cfg.PromptIDs), StopReason: "eos"}
	stop := tokenizer.NewStopper(cfg.Stop) // as the engine applies cfg.Stop
	for i, t := range f.script {
		if st.GeneratedTokens == cfg.MaxTokens {
			st.StopReason = "max_tokens"
			break
		}
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			st.StopReason = "cancelled"
			break
		}
		if end := tokenizer.BuiltinTurnEnd(cfg.Template); end != "" && (byteTok{}).Piece(t.ID) == end {
			// As the engine ends at the chat format's end-of-turn token (a
			// control token: it decodes to no text).
			t.Text = ""
			sink(engine.Event{Kind: engine.EventTokens, Tokens: []engine.Token{t}})
			st.GeneratedTokens++
			break
		}
		var hit bool
		t.Text, hit = stop.Feed(t.Text)
		if !hit && (i == len(f.script)-1 || st.GeneratedTokens+1 == cfg.MaxTokens) {
			var rest string
			rest, hit = stop.Flush()
			t.Text += rest
		}
		sink(engine.Event{Kind: engine.EventTokens, Tokens: []engine.Token{t}})
		st.GeneratedTokens++
		if hit {
			st.StopReason = "stop"
			break
		}
	}
	f.mu.Lock()
	f.ended = append(f.ended, st.StopReason)
	f.mu.Unlock()
	return st, nil
}

func (f *fakeEngine) stopReasons() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ended...)
}

func testOptions() Options {
	return Options{Model: "m", CtxLen: 64, Tokenizer: byteTok{}, ChatTemplate: "chatml"}
}

func newTestServer(t *testing.T, f *fakeEngine, opts Options) *Server {
	t.Helper()
	s, err := New(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// do sends one request to h and returns the status and body.
func do(t *testing.T, h http.Handler, method, path, body string, header ...string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var v map[string]any
	if w.Header().Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, path, w.Body, err)
		}
	}
	return w, v
}

// sseEvents reads a text/event-stream body: every data line's payload,
// failing the test on any other line.
func sseEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	var evs []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE line %q is not a data line", line)
		}
		evs = append(evs, data)
	}
	return evs
}

// streamed joins a stream's text and checks its chunk shape: JSON chunks
// of the endpoint's object, one finish reason in the last choice, then
// [DONE].
func streamed(t *testing.T, evs []string, chat bool) (text, finish string, chunks []map[string]any) {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("stream %q does not end with [DONE]", evs)
	}
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	for i, ev := range evs[:len(evs)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %d %q: %v", i, ev, err)
		}
		if c["object"] != object {
			t.Fatalf("event %d object %v, want %s", i, c["object"], object)
		}
		chunks = append(chunks, c)
		for _, ch := range c["choices"].([]any) {
			ch := ch.(map[string]any)
			if finish != "" {
				t.Fatalf("event %d has a choice after the finish reason %s", i, finish)
			}
			if fr, ok := ch["finish_reason"].(string); ok {
				finish = fr
			}
			if chat {
				d := ch["delta"].(map[string]any)
				if s, ok := d["content"].(string); ok {
					text += s
				}
				if _, ok := d["role"]; ok != (i == 0) {
					t.Fatalf("event %d: role in delta %v; want it in the first chunk only", i, d)
				}
			} else {
				text += ch["text"].(string)
			}
		}
	}
	return text, finish, chunks
}
