package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"rigscope/engine"
)

// TestStartMetricsServesRuns: the observer StartMetrics returns, given to
// an engine, makes its runs visible at the URL it prints, and stop closes
// the listener.
func TestStartMetricsServesRuns(t *testing.T) {
	var stderr bytes.Buffer
	obs, stop, err := StartMetrics(context.Background(), ":0", &stderr)
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
