package openai

import (
	"context"
	"errors"
	"fmt"
	"io"

	"rigscope/engine"
	"rigscope/engine/metrics/prom"
	"rigscope/engine/metrics/promserve"
	"rigscope/engine/tokenizer"
)

// Command is what `rigscope serve` asks for.
type Command struct {
	Model        string
	Engine       engine.Options
	Base         engine.RunConfig // drafter, TP, allreduce for every request
	Addr         string
	APIKey       string
	ChatTemplate string // "" = the model's own
	QueueLen     int
}

// RunCommand opens the model, serves the API and /metrics (vLLM's names,
// engine/metrics/prom) on one listener, and logs a line per request to
// stderr, until ctx ends.
func RunCommand(ctx context.Context, c Command, stderr io.Writer) (err error) {
	if c.Base.TP < 1 {
		return fmt.Errorf("--tp %d must be at least 1", c.Base.TP)
	}
	if err := engine.CheckRunConfig(engine.RunConfig{PromptIDs: []int32{0}, TP: c.Base.TP, AllReduce: c.Base.AllReduce, NCCL: c.Base.NCCL}); err != nil {
		return err
	}
	dc, err := engine.NormalizeDrafter(c.Base.Drafter)
	if err != nil {
		return err
	}
	c.Base.Drafter = dc
	if c.ChatTemplate != "" {
		if _, err := tokenizer.ApplyTemplate(c.ChatTemplate, nil, true); err != nil {
			return fmt.Errorf("--chat-template: %w", err)
		}
	}
	if _, err := promserve.BindAddr(c.Addr); err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	x := prom.New()
	c.Engine.Observer = x
	eng, err := engine.Open(ctx, c.Model, c.Engine)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, eng.Close()) }()
	opts := EngineOptions(eng, c.ChatTemplate)
	opts.Base, opts.APIKey, opts.QueueLen, opts.Metrics, opts.Log = c.Base, c.APIKey, c.QueueLen, x.Handler(), stderr
	s, err := New(eng, opts)
	if err != nil {
		return err
	}
	srv, err := Start(ctx, c.Addr, s, DefaultLimits, stderr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	tmpl := opts.ChatTemplate
	if tmpl == "" {
		tmpl = "none (chat refused; --chat-template sets one)"
	}
	fmt.Fprintf(stderr, "serving %s (context %d, chat template %s, drafter %s, tp %d) at http://%s/v1, metrics at /metrics; one run at a time, %d queued at most\n",
		opts.Model, opts.CtxLen, tmpl, dc.Kind, c.Base.TP, srv.Addr(), s.opts.QueueLen)
	<-ctx.Done()
	return srv.Close()
}
