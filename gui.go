//go:build !headless

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"rigscope/ui"
)

func init() { openPanel = runPanel }

// runPanel parses the panel's flags and opens the window.
func runPanel(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rigscope", flag.ContinueOnError)
	model := fs.String("model", "", "target model: a GGUF file, a Hugging Face folder or a llama2.c checkpoint (default: the embedded synthetic model)")
	draft := fs.String("draft", "", "draft model for the model drafter")
	tokenizer := fs.String("tokenizer", "", "tokenizer.bin for llama2.c checkpoints")
	autorun := fs.String("autorun", "", "run this prompt as soon as the model is loaded")
	quit := fs.Bool("quit-after-run", false, "with --autorun: quit when the run ends; the exit status says whether it succeeded")
	maxTokens := fs.Int("max-tokens", 0, "override the saved max tokens for this session")
	doneFile := fs.String("done-file", "", "with --quit-after-run: touch this file when the run ends, then stay up for --linger")
	linger := fs.Duration("linger", 3*time.Second, "with --quit-after-run: how long the window stays up after the run")
	fakeDelay := fs.Duration("fake-step", 2*time.Millisecond, "step time of the stand-in engine")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before; subcommands: rigscope help)", fs.Arg(0))
	}
	if *quit && *autorun == "" {
		return fmt.Errorf("--quit-after-run needs --autorun PROMPT")
	}
	_ = tokenizer // TODO(lead): pass to engine.Options.TokenizerPath in the real opener
	return ui.Run(ctx, ui.Options{
		ModelPath:    *model,
		DraftPath:    *draft,
		Autorun:      *autorun,
		QuitAfterRun: *quit,
		MaxTokens:    *maxTokens,
		DoneFile:     *doneFile,
		Linger:       *linger,
		// TODO(lead): replace the stand-in with an adapter over engine.Open /
		// (*engine.Engine).Run (path "" = engine.DefaultModel) and real
		// backend/TP availability; the Dashboard hook takes ui.NewDashboard.
		Open:     ui.FakeOpener(*fakeDelay),
		Backends: fakeBackends,
		TPSizes:  fakeTPSizes,
		Report:   os.Stderr,
	})
}

func fakeBackends() []ui.Choice {
	return []ui.Choice{
		{Name: "ring", Available: true},
		{Name: "tree", Available: true},
		{Name: "nccl", Reason: "no NVIDIA GPU found (NVML: library not loaded)"},
		{Name: "cuda-p2p", Reason: "needs two GPUs with peer access"},
	}
}

func fakeTPSizes() []ui.Choice {
	var c []ui.Choice
	for _, n := range []int{1, 2, 4, 8} {
		ch := ui.Choice{Name: strconv.Itoa(n), Available: n <= 4}
		if !ch.Available {
			ch.Reason = "the model has 4 KV heads; TP must divide them"
		}
		c = append(c, ch)
	}
	return c
}
