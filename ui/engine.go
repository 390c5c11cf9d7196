package ui

import (
	"context"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/engine/tokenizer"
)

// Engine is what the panel needs from a loaded target model. The real
// engine satisfies it through a thin adapter in internal/panel (wiring.go);
// tests use FakeEngine.
type Engine interface {
	// Run blocks until the run ends. sink is called on the run's goroutine
	// and must not block; the panel batches what it receives per frame.
	Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error)
	// Snapshot returns the live counters the dashboard and runs table read.
	Snapshot() metrics.Snapshot
	// Info describes the loaded target.
	Info() ModelInfo
}

// ModelInfo describes a loaded target model for the panel.
type ModelInfo struct {
	Name         string // display name, e.g. "gocoder-14m"
	Format       string // gguf | safetensors | llama2c | synthetic
	Path         string // "" for the embedded synthetic default
	Params       int64  // parameter count
	ChatTemplate string // the built-in format the model's template is detected as (llama3, chatml, llama2), "" if none
	// OwnTemplate is the model's own Jinja chat template (Source "" when it
	// declares none); the panel renders the conversation with it first.
	OwnTemplate tokenizer.JinjaTemplate
	MaxSeq      int // context length
}

// Opener loads a target model. It reports long work through progress (which
// may be called from any goroutine) and stops early when ctx is cancelled.
// path "" means the embedded synthetic default.
type Opener func(ctx context.Context, path string, progress func(engine.Progress)) (Engine, error)

// Choice is one option of a run control, with the reason it cannot be used
// on this machine when it is unavailable.
type Choice struct {
	Name      string
	Available bool
	Reason    string // why it is unavailable; "" when Available
}
