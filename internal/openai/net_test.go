package openai

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics/promserve"
)

// liveness bounds how long a test waits for the server to act; a server
// that never does fails the test instead of hanging it.
const liveness = 20 * time.Second

// listen serves s on a loopback port through the hardened listener.
func listen(t *testing.T, s *Server, lim promserve.Limits) string {
	t.Helper()
	srv, err := Start(context.Background(), ":0", s, lim, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return "http://" + srv.Addr().String()
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDisconnectCancels: a client that leaves mid-stream cancels its run
// at the next step (the fake engine gets no further step), and the engine
// takes the next request.
func TestDisconnectCancels(t *testing.T) {
	f := &fakeEngine{script: tokens("a", "b", "c", "d"), gate: make(chan struct{})}
	url := listen(t, newTestServer(t, f, testOptions()), DefaultLimits)
	resp := post(t, url+"/v1/completions", `{"prompt":"x","stream":true}`)
	f.gate <- struct{}{} // one step: "a"
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"text":"a"`) {
		t.Fatalf("first event %q, %v", line, err)
	}
	resp.Body.Close() // the client leaves; no further step is let through
	deadline := time.Now().Add(liveness)
	for len(f.stopReasons()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run was not cancelled after the client left")
		}
		time.Sleep(time.Millisecond)
	}
	if got := f.stopReasons(); got[0] != "cancelled" {
		t.Fatalf("first run ended %q, want cancelled", got)
	}
	f.gate = nil
	resp = post(t, url+"/v1/completions", `{"prompt":"x"}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"abcd"`) {
		t.Errorf("next request: %d %s", resp.StatusCode, b)
	}
}

// slowEngine emits a token every interval, ignoring nothing: a stream that
// outlasts the listener's read and write timeouts.
type slowEngine struct {
	n        int
	interval time.Duration
}

func (s slowEngine) Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error) {
	for i := range s.n {
		select {
		case <-time.After(s.interval):
		case <-ctx.Done():
			return engine.Stats{GeneratedTokens: i, StopReason: "cancelled"}, nil
		}
		sink(engine.Event{Kind: engine.EventTokens, Tokens: []engine.Token{{ID: int32(i), Text: "t"}}})
	}
	return engine.Stats{GeneratedTokens: s.n, StopReason: "max_tokens"}, nil
}

// TestStreamOutlivesTimeouts: a stream longer than the listener's read
// and write timeouts runs to its end: the request's read deadline is
// lifted once the body is read, and each chunk gets its own write deadline.
func TestStreamOutlivesTimeouts(t *testing.T) {
	lim := DefaultLimits
	lim.ReadTimeout, lim.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	opts := testOptions()
	opts.WriteTimeout = lim.WriteTimeout
	s, err := New(slowEngine{n: 8, interval: 50 * time.Millisecond}, opts)
	if err != nil {
		t.Fatal(err)
	}
	url := listen(t, s, lim)
	for _, stream := range []string{"true", "false"} {
		resp := post(t, url+"/v1/completions", `{"prompt":"x","max_tokens":8,"stream":`+stream+`}`)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `"finish_reason":"length"`) {
			t.Errorf("stream %s over 400 ms with 100 ms timeouts: %d %v %s", stream, resp.StatusCode, err, b)
		}
	}
}

// TestWarnBeyondLoopback: an address beyond loopback with no API key
// warns once; with a key, or on loopback, nothing is printed.
func TestWarnBeyondLoopback(t *testing.T) {
	for _, c := range []struct {
		addr, key string
		warn      bool
	}{{"0.0.0.0:0", "", true}, {"0.0.0.0:0", "k", false}, {":0", "", false}} {
		opts := testOptions()
		opts.APIKey = c.key
		var warn strings.Builder
		srv, err := Start(context.Background(), c.addr, newTestServer(t, &fakeEngine{}, opts), DefaultLimits, &warn)
		if err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if got := strings.Contains(warn.String(), "beyond loopback with no --api-key"); got != c.warn || strings.Count(warn.String(), "\n") > 1 {
			t.Errorf("%s key %q: warning %q, want one: %v", c.addr, c.key, warn.String(), c.warn)
		}
	}
}
