package openai

import (
	"context"
	"fmt"
	"io"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics/promserve"
	"rigscope/engine/tokenizer"
)

// DefaultLimits bound the API's clients: a request (body included) must
// arrive within a minute, each write to a client finish within one (the
// handlers set it per write, so a stream may run as long as its run), and
// 64 connections may be open: the queue's requests and some to spare.
var DefaultLimits = promserve.Limits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       60 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       120 * time.Second,
	MaxHeaderBytes:    64 << 10,
	MaxConns:          64,
}

// EngineOptions describe e's model for Options: its served name, context,
// tokenizer and chat template (template, when set, overrides the one the
// model declares).
func EngineOptions(e *engine.Engine, template string) Options {
	info := e.Info()
	tok, _ := e.Tokenizer()
	var own tokenizer.JinjaTemplate
	if template == "" {
		template, own = info.ChatTemplate, info.OwnTemplate
	}
	return Options{Model: info.ServedName(), CtxLen: e.CtxLen(), Tokenizer: tok, ChatTemplate: template, OwnTemplate: own}
}

// Start listens on addr (a bare :PORT is loopback; see promserve.BindAddr)
// and serves s until ctx ends or the returned server is closed. It warns
// on warn when the address reaches beyond loopback without an API key.
func Start(ctx context.Context, addr string, s *Server, lim promserve.Limits, warn io.Writer) (*promserve.Server, error) {
	srv, err := promserve.Serve(ctx, addr, s, lim)
	if err != nil {
		return nil, err
	}
	if !srv.Loopback() && s.opts.APIKey == "" {
		fmt.Fprintf(warn, "warning: the API on %s is reachable beyond loopback with no --api-key: anyone who can reach the port can run the model\n", srv.Addr())
	}
	return srv, nil
}
