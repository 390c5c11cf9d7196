//go:build !headless

package panel

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics/prom"
	"rigscope/engine/metrics/promserve"
	"rigscope/internal/openai"
	"rigscope/ui"
)

// panelAPI serves the OpenAI API (internal/openai, what `rigscope serve`
// runs) on the panel's engine while the panel's Server switch is on
// (ui.APIServer; --serve-addr turns it on at launch), so a client's
// requests show in the dashboard as they run. It follows the panel to each
// model it loads; requests queue behind the panel's own runs.
type panelAPI struct {
	apiKey  string
	base    engine.RunConfig
	metrics http.Handler // the panel's /metrics exporter, or nil
	log     io.Writer

	mu    sync.Mutex
	watch func(*ui.RunRecord) // where each API run is reported (the panel's runs table)
	addr  string              // where to serve while on
	on    bool                // the switch
	eng   *engine.Engine      // the loaded model, or nil
	srv   *promserve.Server
}

func newPanelAPI(apiKey string, tp int, allreduce string, obs engine.Observer, log io.Writer) *panelAPI {
	a := &panelAPI{apiKey: apiKey, log: log,
		base: engine.RunConfig{TP: max(tp, 1), AllReduce: allreduce, Drafter: engine.DrafterConfig{Kind: "none"}}}
	if x, ok := obs.(*prom.Exporter); ok {
		a.metrics = x.Handler()
	}
	return a
}

// serve moves the API onto e, the model the panel loaded (while off it only
// remembers e).
func (a *panelAPI) serve(e *engine.Engine) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.eng = e
	if !a.on {
		return nil
	}
	return a.startLocked()
}

// Start turns the server on at addr (ui.APIServer): now on the loaded
// model, or on the next one loaded. It returns the state to show.
func (a *panelAPI) Start(addr string) (string, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("server address %q: %w; give HOST:PORT, e.g. 127.0.0.1:8080 (a bare :PORT is loopback only)", addr, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.addr, a.on = addr, true
	if a.eng == nil {
		return "on: serves at " + addr + " once a model is loaded", nil
	}
	if err := a.startLocked(); err != nil {
		a.on = false
		return "", err
	}
	return "serving at http://" + a.srv.Addr().String() + "/v1", nil
}

// Watch sets where each run the server makes is reported (ui.APIServer);
// it applies from the next start.
func (a *panelAPI) Watch(f func(*ui.RunRecord)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.watch = f
}

// Stop turns the server off (ui.APIServer).
func (a *panelAPI) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.on = false
	return a.stopLocked()
}

func (a *panelAPI) startLocked() error {
	if err := a.stopLocked(); err != nil {
		return err
	}
	opts := openai.EngineOptions(a.eng, "")
	opts.Base, opts.APIKey, opts.Metrics, opts.Log = a.base, a.apiKey, a.metrics, a.log
	s, err := openai.New(reportingEngine{Engine: a.eng, report: a.watch}, opts)
	if err != nil {
		return fmt.Errorf("the API server: %w", err)
	}
	srv, err := openai.Start(context.Background(), a.addr, s, openai.DefaultLimits, a.log)
	if err != nil {
		return fmt.Errorf("the API server at %s: %w", a.addr, err)
	}
	a.srv = srv
	fmt.Fprintf(a.log, "serving %s over the OpenAI API at http://%s/v1\n", opts.Model, srv.Addr())
	return nil
}

func (a *panelAPI) stopLocked() error {
	if a.srv == nil {
		return nil
	}
	err := a.srv.Close()
	a.srv = nil
	if err != nil {
		return fmt.Errorf("stopping the API server: %w", err)
	}
	return nil
}

// reportingEngine runs the API's requests on the engine and reports each
// run, as the engine streamed it, to the panel's runs table.
type reportingEngine struct {
	*engine.Engine
	report func(*ui.RunRecord) // nil: none
}

func (r reportingEngine) Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error) {
	if r.report == nil {
		return r.Engine.Run(ctx, cfg, sink)
	}
	rec := &ui.RunRecord{Model: r.Info().ServedName(), Started: time.Now(), Config: cfg, Source: ui.SourceAPI}
	var text strings.Builder
	st, err := r.Engine.Run(ctx, cfg, func(ev engine.Event) {
		switch ev.Kind {
		case engine.EventTokens:
			for _, t := range ev.Tokens {
				text.WriteString(t.Text)
			}
		case engine.EventStep:
			rec.Steps = append(rec.Steps, ev.Step)
		}
		sink(ev)
	})
	rec.Stats, rec.LogPath, rec.Text = st, st.LogPath, text.String()
	if err != nil {
		rec.Err = err.Error()
	}
	r.report(rec)
	return st, err
}
