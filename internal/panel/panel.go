//go:build !headless

package panel

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"

	"rigscope/engine"
	"rigscope/engine/metrics"
	"rigscope/gpu"
	"rigscope/internal/cli"
	_ "rigscope/internal/fynelocale" // before Fyne reads the locale: see the package
	"rigscope/ui"
)

// Open parses the panel's flags and opens the window (nil in a headless
// build).
var Open = run

func run(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("rigscope", flag.ContinueOnError)
	model := fs.String("model", "", "target model: a GGUF file, a Hugging Face folder or a llama2.c checkpoint (default: the embedded synthetic model)")
	draft := fs.String("draft", "", "draft model for the model drafter")
	tokenizer := fs.String("tokenizer", "", "tokenizer.bin for llama2.c checkpoints")
	autorun := fs.String("autorun", "", "run this prompt as soon as the model is loaded")
	quit := fs.Bool("quit-after-run", false, "with --autorun: quit when the run ends; the exit status says whether it succeeded")
	maxTokens := fs.Int("max-tokens", 0, "override the saved max tokens for this session")
	doneFile := fs.String("done-file", "", "with --quit-after-run: touch this file when the run ends, then stay up for --linger")
	linger := fs.Duration("linger", 3*time.Second, "with --quit-after-run: how long the window stays up after the run")
	logDir := fs.String("log-dir", "", "write each run's JSONL event log into this directory (default: the user cache dir, rigscope/runs)")
	ctxLen := fs.Int("ctx", 0, "KV cache positions, at most the model's trained context (default: that context, capped at 4096 on the CPU; on a GPU the longest that fits)")
	tpSize := fs.Int("tp", 0, "tensor-parallel size for the next run (default: the saved setting)")
	backend := fs.String("allreduce", "", "allreduce backend for the next run (default: the saved setting)")
	tab := fs.String("tab", "chat", "tab shown first: chat, dashboard, whatif or runs")
	winSize := fs.String("window-size", "1280x800", "the window's size at start, WIDTHxHEIGHT in pixels (a taller one shows the whole dashboard in one screenshot)")
	gpuInterval := fs.Duration("gpu-interval", gpu.DefaultInterval, "how often the GPU telemetry (NVML) is sampled")
	metricsAddr := cli.MetricsAddrFlag(fs)
	serveAddr := fs.String("serve-addr", "", "start with the panel's Server switch on: serve the OpenAI API (as rigscope serve does) on the panel's engine at HOST:PORT; a bare :PORT is loopback only (default: off, at "+ui.DefaultServeAddr+")")
	apiKey := fs.String("api-key", "", "the panel's API server requires Authorization: Bearer KEY")
	device := fs.String("device", "cpu", "where the target runs: "+strings.Join(engine.Devices(), ", "))
	var gpus []int
	cli.GPUsFlag(fs, &gpus)
	replay := fs.String("replay", "", "show the last run of this run log (JSONL, from --log-dir) in the dashboard until a run starts here: a run made elsewhere, on a GPU machine say")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var replayed *metrics.Snapshot
	if *replay != "" {
		s, err := metrics.ReplayFile(*replay)
		if err != nil {
			return fmt.Errorf("--replay: %w", err)
		}
		replayed = &s
	}
	if err := engine.CheckDevice(*device); err != nil {
		return fmt.Errorf("--device: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before; subcommands: rigscope help)", fs.Arg(0))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--ctx", *ctxLen}, {"--tp", *tpSize}, {"--max-tokens", *maxTokens}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d is negative (leave it out for the default)", f.name, f.v)
		}
	}
	if *quit && *autorun == "" {
		return fmt.Errorf("--quit-after-run needs --autorun PROMPT")
	}
	size, err := parseWindowSize(*winSize)
	if err != nil {
		return err
	}
	if *gpuInterval < 10*time.Millisecond {
		return fmt.Errorf("--gpu-interval %v: at least 10ms (PCIe throughput samples take 20 ms)", *gpuInterval)
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return fmt.Errorf("no display to open the panel on (DISPLAY and WAYLAND_DISPLAY are unset): run it in a desktop session, under Xvfb (xvfb-run rigscope ...), or use a headless command (rigscope help)")
	}
	if *logDir == "" {
		dir, err := engine.DefaultLogDir()
		if err != nil {
			return fmt.Errorf("%w (give --log-dir DIR)", err)
		}
		*logDir = dir
	}
	obs, stopMetrics, err := cli.StartMetrics(ctx, *metricsAddr, os.Stderr)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopMetrics()) }()
	w := &panelWiring{gpuInterval: *gpuInterval, replay: replayed, opts: engine.Options{TokenizerPath: *tokenizer, CtxLen: *ctxLen, Device: *device, GPUs: gpus, Observer: obs, LogDir: *logDir},
		api: newPanelAPI(*apiKey, *tpSize, *backend, obs, os.Stderr)}
	defer w.close()
	return ui.Run(ctx, ui.Options{
		ModelPath:    *model,
		DraftPath:    *draft,
		Autorun:      *autorun,
		QuitAfterRun: *quit,
		MaxTokens:    *maxTokens,
		TP:           *tpSize,
		Backend:      *backend,
		Tab:          *tab,
		WindowSize:   size,
		DoneFile:     *doneFile,
		Linger:       *linger,
		RunLogDir:    *logDir,
		Open:         w.open,
		Backends:     w.backends,
		TPSizes:      w.tpSizes,
		Dashboard:    w.dashboard,
		Planner:      w.planner,
		Server:       w.api,
		ServeAddr:    *serveAddr,
		Report:       os.Stderr,
	})
}

// parseWindowSize reads --window-size WIDTHxHEIGHT (320x240 to 8192x8192).
func parseWindowSize(v string) (fyne.Size, error) {
	w, h, ok := strings.Cut(strings.ToLower(strings.TrimSpace(v)), "x")
	wi, err1 := strconv.Atoi(w)
	hi, err2 := strconv.Atoi(h)
	if !ok || err1 != nil || err2 != nil || wi < 320 || hi < 240 || wi > 8192 || hi > 8192 {
		return fyne.Size{}, fmt.Errorf("--window-size %q: want WIDTHxHEIGHT in pixels, 320x240 to 8192x8192, e.g. 1280x2000", v)
	}
	return fyne.NewSize(float32(wi), float32(hi)), nil
}
