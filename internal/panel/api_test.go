//go:build !headless

package panel

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"rigscope/engine"
	"rigscope/ui"
)

// TestPanelAPI: the panel's server is off until switched on (before a
// model is loaded it starts with the first); it answers on the panel's
// engine, follows the panel to the next model it loads, and stops.
func TestPanelAPI(t *testing.T) {
	var log strings.Builder
	a := newPanelAPI("k", 1, "", nil, &log)
	defer a.Stop()
	if _, err := a.Start("localhost"); err == nil || !strings.Contains(err.Error(), "give HOST:PORT") {
		t.Errorf("Start(localhost): %v, want the HOST:PORT message", err)
	}
	if msg, err := a.Start("127.0.0.1:0"); err != nil || !strings.Contains(msg, "once a model is loaded") {
		t.Errorf("Start before a model: %q %v, want it pending the model", msg, err)
	}
	models := func() (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+a.srv.Addr().String()+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v struct{ Data []struct{ ID string } }
		if err := json.Unmarshal(b, &v); err != nil || len(v.Data) != 1 {
			return resp.StatusCode, string(b)
		}
		return resp.StatusCode, v.Data[0].ID
	}
	for _, model := range []string{"synthetic:tiny", "synthetic:tiny?seed=2"} {
		e, err := engine.Open(context.Background(), model, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if err := a.serve(e); err != nil {
			t.Fatal(err)
		}
		if code, id := models(); code != 200 || id != model {
			t.Errorf("after loading %s: GET /v1/models = %d %s", model, code, id)
		}
	}
	if err := a.Stop(); err != nil || a.srv != nil {
		t.Fatalf("Stop: %v, server %v", err, a.srv)
	}
	msg, err := a.Start("127.0.0.1:0")
	if err != nil || !strings.HasPrefix(msg, "serving at http://127.0.0.1:") {
		t.Fatalf("Start with a model: %q %v", msg, err)
	}
	if code, id := models(); code != 200 || id != "synthetic:tiny?seed=2" {
		t.Errorf("switched on again: GET /v1/models = %d %s", code, id)
	}
	// The API's runs are reported for the panel's runs table.
	runs := make(chan *ui.RunRecord, 1)
	a.Watch(func(r *ui.RunRecord) { runs <- r })
	if _, err := a.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+a.srv.Addr().String()+"/v1/completions",
		strings.NewReader(`{"prompt":[1,5,9],"max_tokens":5,"temperature":0,"ignore_eos":true}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Choices []struct{ Text string }
	}
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	r := <-runs
	if resp.StatusCode != 200 || len(v.Choices) != 1 || r.Source != ui.SourceAPI || r.Model != "synthetic:tiny?seed=2" ||
		r.Stats.GeneratedTokens != 5 || r.Stats.StopReason != "max_tokens" || len(r.Steps) == 0 || r.Text != v.Choices[0].Text || r.Config.MaxTokens != 5 {
		t.Errorf("API run %d %+v reported as %+v", resp.StatusCode, v, r)
	}
	// Off: a model loaded while off is remembered, not served.
	a.Stop()
	e, err := engine.Open(context.Background(), "synthetic:tiny", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := a.serve(e); err != nil || a.srv != nil {
		t.Errorf("a model loaded while off: %v, server %v; want none", err, a.srv)
	}
}
