//go:build !headless

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"rigscope/engine"
)

// TestPanelAPI: --serve-addr's server answers on the panel's engine and
// follows the panel to the next model it loads.
func TestPanelAPI(t *testing.T) {
	var log strings.Builder
	a := newPanelAPI("127.0.0.1:0", "k", 1, "", nil, &log)
	defer a.close()
	for _, model := range []string{"synthetic:tiny", "synthetic:tiny?seed=2"} {
		e, err := engine.Open(context.Background(), model, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if err := a.serve(e); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://"+a.srv.Addr().String()+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v struct{ Data []struct{ ID string } }
		if err := json.Unmarshal(b, &v); err != nil || resp.StatusCode != 200 || len(v.Data) != 1 || v.Data[0].ID != model {
			t.Errorf("after loading %s: GET /v1/models = %d %s", model, resp.StatusCode, b)
		}
	}
	if newPanelAPI("", "", 1, "", nil, io.Discard) != nil {
		t.Error("no --serve-addr still made a server")
	}
}
