//go:build !headless

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"rigscope/engine"
	"rigscope/engine/metrics/prom"
	"rigscope/engine/metrics/promserve"
	"rigscope/internal/openai"
)

// panelAPI serves the OpenAI API (internal/openai, what `rigscope serve`
// runs) on the panel's engine when --serve-addr is set, so a client's
// requests show in the dashboard as they run. It follows the panel to each
// model it loads; requests queue behind the panel's own runs.
type panelAPI struct {
	addr, apiKey string
	base         engine.RunConfig
	metrics      http.Handler // the panel's /metrics exporter, or nil
	log          io.Writer

	mu  sync.Mutex
	srv *promserve.Server
}

func newPanelAPI(addr, apiKey string, tp int, allreduce string, obs engine.Observer, log io.Writer) *panelAPI {
	if addr == "" {
		return nil
	}
	a := &panelAPI{addr: addr, apiKey: apiKey, log: log,
		base: engine.RunConfig{TP: max(tp, 1), AllReduce: allreduce, Drafter: engine.DrafterConfig{Kind: "none"}}}
	if x, ok := obs.(*prom.Exporter); ok {
		a.metrics = x.Handler()
	}
	return a
}

// serve moves the API onto e (a nil panelAPI serves nothing).
func (a *panelAPI) serve(e *engine.Engine) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopLocked()
	opts := openai.EngineOptions(e, "")
	opts.Base, opts.APIKey, opts.Metrics, opts.Log = a.base, a.apiKey, a.metrics, a.log
	s, err := openai.New(e, opts)
	if err != nil {
		return fmt.Errorf("--serve-addr: %w", err)
	}
	srv, err := openai.Start(context.Background(), a.addr, s, openai.DefaultLimits, a.log)
	if err != nil {
		return fmt.Errorf("--serve-addr %s: %w", a.addr, err)
	}
	a.srv = srv
	fmt.Fprintf(a.log, "serving %s over the OpenAI API at http://%s/v1\n", opts.Model, srv.Addr())
	return nil
}

func (a *panelAPI) stopLocked() {
	if a.srv != nil {
		if err := a.srv.Close(); err != nil {
			fmt.Fprintln(a.log, "rigscope: the API server:", err)
		}
		a.srv = nil
	}
}

func (a *panelAPI) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopLocked()
}
