// Package serve is `rigscope serve`: the model over the OpenAI API
// (internal/openai) and /metrics.
package serve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"rigscope/engine"
	"rigscope/internal/cli"
	"rigscope/internal/openai"
)

// Command is `rigscope serve`.
var Command = cli.Command{Name: "serve", Summary: "serve the model over the OpenAI API (/v1/completions, /v1/chat/completions) and /metrics", Run: runServe}

func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c openai.Command
	fs.StringVar(&c.Model, "model", engine.DefaultModel, "model: a GGUF file, a Hugging Face directory, a llama2.c checkpoint, or synthetic:PRESET")
	fs.StringVar(&c.Engine.TokenizerPath, "tokenizer", "", "tokenizer.bin for llama2.c checkpoints (default: found beside the model)")
	fs.IntVar(&c.Engine.CtxLen, "ctx", 0, "KV cache positions, prompt plus completion (default: the model's context, at most 4096 on the CPU; on a GPU the longest that fits)")
	fs.StringVar(&c.Engine.Device, "device", "cpu", "where the target runs: "+strings.Join(engine.Devices(), ", "))
	cli.GPUsFlag(fs, &c.Engine.GPUs)
	fs.StringVar(&c.Engine.LogDir, "log-dir", "", "write a JSONL event log per request's run into this directory")
	fs.StringVar(&c.Base.Drafter.Kind, "drafter", "", "speculative drafter for every request: none, ngram, model or eagle3 (default none; --draft implies model, or eagle3 for an EAGLE-3 head directory)")
	fs.StringVar(&c.Base.Drafter.Path, "draft", "", "draft model file or EAGLE-3 head directory")
	fs.IntVar(&c.Base.Drafter.K, "k", engine.DefaultK, "draft length: tokens per chain, or tree depth (1..16)")
	fs.IntVar(&c.Base.Drafter.Tree, "tree", 0, "draft a tree with this many branches per depth (absent = a chain)")
	fs.IntVar(&c.Base.TP, "tp", 1, "tensor-parallel ranks")
	fs.StringVar(&c.Base.AllReduce, "allreduce", "", "allreduce backend joining the ranks (default: the engine's choice)")
	cli.NCCLFlags(fs, &c.Base.NCCL)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen on HOST:PORT; a bare :PORT is loopback only, 0.0.0.0:PORT every interface (set --api-key then)")
	fs.StringVar(&c.APIKey, "api-key", "", "require Authorization: Bearer KEY on /v1/ (default: no key)")
	fs.StringVar(&c.ChatTemplate, "chat-template", "", "chat format for /v1/chat/completions: llama3, chatml or llama2 (default: the model's own; a model with none refuses chat)")
	fs.IntVar(&c.QueueLen, "queue", openai.DefaultQueueLen, "requests that wait while one runs (one run at a time); more get 429 with Retry-After")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if c.QueueLen < 1 {
		return fmt.Errorf("serve: --queue %d must be at least 1", c.QueueLen)
	}
	if err := openai.RunCommand(ctx, c, stderr); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
