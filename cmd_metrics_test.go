package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"rigscope/engine"
)

var genArgs = []string{"generate", "--model", "synthetic:tiny", "--prompt-ids", "1,5,6,7,5,6", "--max-tokens", "6"}

// TestMetricsAddrFlag: generate and bench take --metrics-addr; a bad or
// taken address fails the command with the address named, a bare port
// serves on loopback only, and 0.0.0.0 warns.
func TestMetricsAddrFlag(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		args      []string
		err, warn string
	}{
		{[]string{"--metrics-addr", "9400"}, `--metrics-addr 9400: "9400": want HOST:PORT or :PORT`, ""},
		{[]string{"--metrics-addr", ":" + port}, "--metrics-addr :" + port + ": cannot listen on 127.0.0.1:" + port, ""},
		{[]string{"--metrics-addr", ":0"}, "", "serving Prometheus metrics at http://127.0.0.1:"},
		{[]string{"--metrics-addr", "0.0.0.0:0"}, "", "beyond loopback and unauthenticated"},
	} {
		for _, cmd := range [][]string{genArgs, {"bench", "--model", "synthetic:small", "--drafters", "ngram", "--k", "2", "--tree", "0", "--prompts", "1", "--prompt-len", "16", "--max-tokens", "4"}} {
			args := append(append([]string{}, cmd...), tc.args...)
			var out, errOut bytes.Buffer
			err := dispatch(context.Background(), args, &out, &errOut)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("rigscope %s: error %v, want %q", strings.Join(args, " "), err, tc.err)
			case tc.err == "" && err != nil:
				t.Errorf("rigscope %s: %v", strings.Join(args, " "), err)
			case tc.warn != "" && !strings.Contains(errOut.String(), tc.warn):
				t.Errorf("rigscope %s: stderr %q, want %q", strings.Join(args, " "), errOut.String(), tc.warn)
			}
		}
	}
}

// TestStartMetricsServesRuns: the observer startMetrics returns, given to
// an engine, makes its runs visible at the URL it prints, and stop closes
// the listener.
func TestStartMetricsServesRuns(t *testing.T) {
	var stderr bytes.Buffer
	obs, stop, err := startMetrics(context.Background(), ":0", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`http://\S+/metrics`).FindString(stderr.String())
	e, err := engine.Open(context.Background(), "synthetic:tiny", engine.Options{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, err := e.Run(context.Background(), engine.RunConfig{PromptIDs: []int32{1, 2, 3}, MaxTokens: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %q (from %q): %v", url, stderr.String(), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `vllm:generation_tokens_total{engine="0",model_name="synthetic:tiny"} ` + strconv.Itoa(st.GeneratedTokens)
	if !strings.Contains(string(body), want) {
		t.Errorf("GET %s lacks %q:\n%s", url, want, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("%s still served after stop", url)
	}
}
