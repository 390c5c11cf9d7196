package openai

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestErrors: every bad request gets OpenAI's error object, its status,
// and a message that names the problem; the engine never runs.
func TestErrors(t *testing.T) {
	long := `"` + strings.Repeat("x", 64) + `"`
	cases := []struct {
		name, path, body string
		header           []string
		opts             func(*Options)
		status           int
		param, code      string
		msg              string
	}{
		{name: "malformed JSON", path: "/v1/completions", body: `{"prompt": "a",`, status: 400, msg: "not valid JSON"},
		{name: "not an object", path: "/v1/completions", body: `[1]`, status: 400, msg: "array"},
		{name: "trailing data", path: "/v1/completions", body: `{"prompt":"a"} {}`, status: 400, msg: "after its JSON object"},
		{name: "unknown field", path: "/v1/completions", body: `{"prompt":"a","max_token":3}`, status: 400, param: "max_token", msg: "Unrecognized request argument supplied: max_token"},
		{name: "wrong type", path: "/v1/completions", body: `{"prompt":"a","max_tokens":"3"}`, status: 400, param: "max_tokens", msg: "max_tokens must be a JSON number"},
		{name: "invalid UTF-8", path: "/v1/chat/completions", body: "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xff\"}]}", status: 400, msg: "not valid UTF-8 (first bad byte 0xff at offset 40)"},
		{name: "max_tokens 0", path: "/v1/completions", body: `{"prompt":"a","max_tokens":0}`, status: 400, param: "max_tokens", msg: "max_tokens is 0; it must be at least 1"},
		{name: "max_tokens negative", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"a"}],"max_tokens":-5}`, status: 400, param: "max_tokens", msg: "max_tokens is -5"},
		{name: "max_completion_tokens 0", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":0}`, status: 400, param: "max_completion_tokens"},
		{name: "unknown model", path: "/v1/completions", body: `{"model":"gpt-4","prompt":"a"}`, status: 404, param: "model", code: "model_not_found", msg: "The model `gpt-4` does not exist: this server serves `m`"},
		{name: "prompt over the context", path: "/v1/completions", body: `{"prompt":` + long + `}`, status: 400, param: "prompt", code: "context_length_exceeded", msg: "maximum context length is 64 tokens. However, your prompt is 65 tokens"},
		{name: "prompt plus completion over the context", path: "/v1/completions", body: `{"prompt":"abc","max_tokens":61}`, status: 400, param: "max_tokens", code: "context_length_exceeded", msg: "you requested 65 tokens (4 in the prompt, 61 in the completion)"},
		{name: "n 2", path: "/v1/completions", body: `{"prompt":"a","n":2}`, status: 400, param: "n", msg: "n = 2"},
		{name: "logprobs", path: "/v1/completions", body: `{"prompt":"a","logprobs":2}`, status: 400, param: "logprobs", msg: "not supported"},
		{name: "tools", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]}`, status: 400, param: "tools"},
		{name: "penalty", path: "/v1/completions", body: `{"prompt":"a","presence_penalty":0.5}`, status: 400, param: "presence_penalty"},
		{name: "5 stops", path: "/v1/completions", body: `{"prompt":"a","stop":["a","b","c","d","e"]}`, status: 400, param: "stop", msg: "stop has 5 strings; at most 4"},
		{name: "empty stop", path: "/v1/completions", body: `{"prompt":"a","stop":[""]}`, status: 400, param: "stop", msg: "stop[0] is empty"},
		{name: "stop not strings", path: "/v1/completions", body: `{"prompt":"a","stop":[1]}`, status: 400, param: "stop"},
		{name: "temperature", path: "/v1/completions", body: `{"prompt":"a","temperature":2.5}`, status: 400, param: "temperature", msg: "outside [0, 2]"},
		{name: "top_p", path: "/v1/completions", body: `{"prompt":"a","top_p":0}`, status: 400, param: "top_p"},
		{name: "no prompt", path: "/v1/completions", body: `{}`, status: 400, param: "prompt", msg: "prompt is missing"},
		{name: "two prompts", path: "/v1/completions", body: `{"prompt":["a","b"]}`, status: 400, param: "prompt", msg: "2 strings"},
		{name: "token outside vocabulary", path: "/v1/completions", body: `{"prompt":[1,900]}`, status: 400, param: "prompt", msg: "prompt[1] is token 900, outside the vocabulary 0..257"},
		{name: "messages on completions", path: "/v1/completions", body: `{"messages":[{"role":"user","content":"a"}]}`, status: 400, param: "messages"},
		{name: "no messages", path: "/v1/chat/completions", body: `{"messages":[]}`, status: 400, param: "messages", msg: "messages is empty"},
		{name: "bad role", path: "/v1/chat/completions", body: `{"messages":[{"role":"tool","content":"a"}]}`, status: 400, param: "messages[0].role", msg: `"tool"`},
		{name: "image part", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, status: 400, param: "messages[0].content[0].type", msg: "text parts only"},
		{name: "no content", path: "/v1/chat/completions", body: `{"messages":[{"role":"user"}]}`, status: 400, param: "messages[0].content"},
		{name: "no chat template", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"a"}]}`, opts: func(o *Options) { o.ChatTemplate = "" }, status: 400, param: "messages", msg: "--chat-template"},
		{name: "missing key", path: "/v1/completions", body: `{"prompt":"a"}`, opts: func(o *Options) { o.APIKey = "k" }, status: 401, code: "invalid_api_key", msg: "didn't provide an API key"},
		{name: "wrong key", path: "/v1/models", header: []string{"Authorization", "Bearer j"}, opts: func(o *Options) { o.APIKey = "k" }, status: 401, code: "invalid_api_key", msg: "Incorrect API key"},
		{name: "unknown endpoint", path: "/v1/embeddings", body: `{}`, status: 404, msg: "no such endpoint"},
		{name: "outside /v1", path: "/completions", body: `{}`, status: 404, msg: "under /v1/"},
		{name: "chunked body over the limit", path: "/v1/completions", body: `{"prompt":"` + strings.Repeat("a", 200) + `"}`, opts: func(o *Options) { o.MaxBodyBytes = 100 }, status: 413, code: "request_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			f := &fakeEngine{script: tokens("x")}
			method := http.MethodPost
			if c.path == "/v1/models" {
				method = http.MethodGet
			}
			w, v := do(t, newTestServer(t, f, opts), method, c.path, c.body, c.header...)
			checkError(t, w, v, c.status, c.param, c.code, c.msg)
			if len(f.cfgs) > 0 {
				t.Errorf("the engine ran for a refused request")
			}
		})
	}
}

func checkError(t *testing.T, w *httptest.ResponseRecorder, v map[string]any, status int, param, code, msg string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d (body %s)", w.Code, status, w.Body)
	}
	e, ok := v["error"].(map[string]any)
	if !ok {
		t.Fatalf("body %s has no error object", w.Body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Errorf("error %v lacks %q", e, k)
		}
	}
	str := func(x any) string { s, _ := x.(string); return s }
	if str(e["param"]) != param || str(e["code"]) != code || !strings.Contains(str(e["message"]), msg) || str(e["type"]) == "" {
		t.Errorf("error %v, want param %q code %q and a message with %q", e, param, code, msg)
	}
}

// TestBodyRefusedEarly: a declared 100 MB body is refused with 413 before
// a byte of it is read, and the connection is closed.
func TestBodyRefusedEarly(t *testing.T) {
	s := newTestServer(t, &fakeEngine{}, testOptions())
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", failingReader{})
	r.ContentLength = 100 << 20
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != 413 || w.Header().Get("Connection") != "close" || !strings.Contains(w.Body.String(), "104857600 bytes") {
		t.Errorf("100 MB body: %d %v %s, want 413, Connection: close and the size", w.Code, w.Header(), w.Body)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("the body was read") }

func TestMethods(t *testing.T) {
	s := newTestServer(t, &fakeEngine{}, testOptions())
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/v1/models", "GET"}, {"GET", "/v1/completions", "POST"}, {"DELETE", "/v1/chat/completions", "POST"},
	} {
		w, v := do(t, s, c.method, c.path, "")
		checkError(t, w, v, 405, "", "", "answers "+c.allow)
		if w.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, w.Header().Get("Allow"), c.allow)
		}
	}
}

func TestModels(t *testing.T) {
	opts := testOptions()
	opts.APIKey = "k"
	w, v := do(t, newTestServer(t, &fakeEngine{}, opts), "GET", "/v1/models", "", "Authorization", "Bearer k")
	data, _ := v["data"].([]any)
	if w.Code != 200 || v["object"] != "list" || len(data) != 1 || data[0].(map[string]any)["id"] != "m" ||
		data[0].(map[string]any)["max_model_len"] != float64(64) {
		t.Errorf("GET /v1/models = %d %s", w.Code, w.Body)
	}
}

// TestCompletion: the request's fields reach the run, the text and usage
// come back, and the finish reason follows the run's end.
func TestCompletion(t *testing.T) {
	cases := []struct {
		body, text, finish string
		completion         int
	}{
		{`{"prompt":"ab","max_tokens":2,"temperature":0,"seed":7}`, "Hello ", "length", 2},
		{`{"model":"m","prompt":"ab"}`, "Hello world", "stop", 4},
		{`{"prompt":"ab","stop":"o w"}`, "Hell", "stop", 3},
		{`{"prompt":"ab","stop":["xyz","lo"]}`, "Hel", "stop", 2},
		{`{"prompt":"ab","stop":["rld!"]}`, "Hello world", "stop", 4},
		{`{"prompt":[5,6]}`, "Hello world", "stop", 4},
	}
	for _, c := range cases {
		f := &fakeEngine{script: tokens("Hel", "lo ", "wo", "rld")}
		w, v := do(t, newTestServer(t, f, testOptions()), "POST", "/v1/completions", c.body)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", c.body, w.Code, w.Body)
		}
		ch := v["choices"].([]any)[0].(map[string]any)
		u := v["usage"].(map[string]any)
		if ch["text"] != c.text || ch["finish_reason"] != c.finish || u["completion_tokens"] != float64(c.completion) ||
			v["object"] != "text_completion" || !strings.HasPrefix(v["id"].(string), "cmpl-") {
			t.Errorf("%s: %s; want text %q, finish %s, %d completion tokens", c.body, w.Body, c.text, c.finish, c.completion)
		}
		if n := len(f.cfgs[0].PromptIDs); u["prompt_tokens"] != float64(n) || u["total_tokens"] != float64(n+c.completion) {
			t.Errorf("%s: usage %v, want %d prompt tokens", c.body, u, n)
		}
	}
	f := &fakeEngine{script: tokens("a")}
	do(t, newTestServer(t, f, testOptions()), "POST", "/v1/completions", `{"prompt":"ab","max_tokens":5,"temperature":0,"top_p":0.5,"top_k":3,"seed":7,"ignore_eos":true}`)
	cfg := f.cfgs[0]
	if cfg.MaxTokens != 5 || cfg.Sampling.Temperature != 0 || cfg.Sampling.TopP != 0.5 || cfg.Sampling.TopK != 3 || cfg.Sampling.Seed != 7 ||
		!cfg.IgnoreEOS || fmt.Sprint(cfg.PromptIDs) != "[256 97 98]" {
		t.Errorf("run config %+v", cfg)
	}
	f = &fakeEngine{script: tokens("a")}
	do(t, newTestServer(t, f, testOptions()), "POST", "/v1/completions", `{"prompt":"abc"}`)
	if cfg := f.cfgs[0]; cfg.MaxTokens != 60 || cfg.Sampling.Temperature != 1 {
		t.Errorf("defaults: max tokens %d (want the 60 the context leaves), temperature %v (want OpenAI's 1)", cfg.MaxTokens, cfg.Sampling.Temperature)
	}
}

// TestChat: messages go through the chat template; the template's
// end-of-turn token ends the reply without appearing in it.
func TestChat(t *testing.T) {
	script := append(tokens("Hi", " there"), tokens("x", "y", "z")...)
	script[2].ID = 257 // <|im_end|>
	f := &fakeEngine{script: script}
	opts := testOptions()
	opts.CtxLen = 256
	body := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`
	w, v := do(t, newTestServer(t, f, opts), "POST", "/v1/chat/completions", body)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	ch := v["choices"].([]any)[0].(map[string]any)
	msg := ch["message"].(map[string]any)
	if msg["role"] != "assistant" || msg["content"] != "Hi there" || ch["finish_reason"] != "stop" || v["object"] != "chat.completion" ||
		v["usage"].(map[string]any)["completion_tokens"] != float64(3) {
		t.Errorf("chat: %s", w.Body)
	}
	want := byteTok{}.Encode("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", true)
	if fmt.Sprint(f.cfgs[0].PromptIDs) != fmt.Sprint(want) {
		t.Errorf("prompt %v, want the ChatML rendering %v", f.cfgs[0].PromptIDs, want)
	}
}

// TestStream: streamed chunks carry the same text as the whole answer,
// the finish reason last, usage when asked, then [DONE].
func TestStream(t *testing.T) {
	for _, chat := range []bool{false, true} {
		for _, c := range []struct{ extra, text, finish string }{
			{`"max_tokens":3`, "Hello wo", "length"},
			{`"stop":["o w"]`, "Hell", "stop"},
			{`"stream_options":{"include_usage":true}`, "Hello world", "stop"},
		} {
			path, prompt := "/v1/completions", `"prompt":"ab"`
			if chat {
				path, prompt = "/v1/chat/completions", `"messages":[{"role":"user","content":"ab"}]`
			}
			f := &fakeEngine{script: tokens("Hel", "lo ", "wo", "rld")}
			w, _ := do(t, newTestServer(t, f, testOptions()), "POST", path, `{"stream":true,`+prompt+`,`+c.extra+`}`)
			if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%s %s: %d %v", path, c.extra, w.Code, w.Header())
			}
			text, finish, chunks := streamed(t, sseEvents(t, w.Body), chat)
			if text != c.text || finish != c.finish {
				t.Errorf("%s %s: streamed %q finish %s, want %q %s", path, c.extra, text, finish, c.text, c.finish)
			}
			last := chunks[len(chunks)-1]
			_, hasUsage := last["usage"]
			if hasUsage != strings.Contains(c.extra, "include_usage") {
				t.Errorf("%s %s: last chunk %v: usage only when include_usage", path, c.extra, last)
			}
		}
	}
}

// TestQueueFull: with one run going and the queue full, a request gets 429
// with Retry-After; once the engine is free it runs.
func TestQueueFull(t *testing.T) {
	f := &fakeEngine{script: tokens("a"), gate: make(chan struct{}), started: make(chan struct{}, 4)}
	opts := testOptions()
	opts.QueueLen = 1
	s := newTestServer(t, f, opts)
	codes := make(chan int, 2)
	send := func() {
		w, _ := do(t, s, "POST", "/v1/completions", `{"prompt":"a"}`)
		codes <- w.Code
	}
	go send()
	<-f.started // the first runs
	go send()
	for len(s.q.admitted) < 2 { // the second waits
		runtime.Gosched()
	}
	w, v := do(t, s, "POST", "/v1/completions", `{"prompt":"a"}`)
	checkError(t, w, v, 429, "", "queue_full", "1 request running and 1 queued")
	if w.Header().Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After: %v", w.Header())
	}
	f.gate <- struct{}{}
	<-f.started
	f.gate <- struct{}{}
	if a, b := <-codes, <-codes; a != 200 || b != 200 {
		t.Errorf("queued requests answered %d and %d, want 200", a, b)
	}
}

// TestHealthAndMetrics: /health answers without the key; /metrics serves
// the handler given.
func TestHealthAndMetrics(t *testing.T) {
	opts := testOptions()
	opts.APIKey = "k"
	opts.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") })
	s := newTestServer(t, &fakeEngine{}, opts)
	if w, _ := do(t, s, "GET", "/health", ""); w.Code != 200 {
		t.Errorf("/health: %d", w.Code)
	}
	if w, _ := do(t, s, "GET", "/metrics", ""); w.Code != 200 || w.Body.String() != "up 1\n" {
		t.Errorf("/metrics: %d %q", w.Code, w.Body)
	}
}
