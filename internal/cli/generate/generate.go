// Package generate is `rigscope generate`: one generation from a prompt,
// streamed to stdout, or one JSON object with the tokens and the run's
// stats (--json).
package generate

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"rigscope/engine"
	"rigscope/engine/stepstats"
	"rigscope/internal/cli"
)

// Command is `rigscope generate`.
var Command = cli.Command{Name: "generate", Summary: "generate text from a prompt (streams to stdout; --json for stats)", Run: runGenerate}

// runFlags are the flags every command that runs a generation shares.
type runFlags struct {
	model, tokenizer  string
	prompt, promptIDs string
	ctxLen            int
	device, logDir    string
	gpus              []int
	cfg               engine.RunConfig
	seed              uint64
	ngramMin          int
	ngramMax          int
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.model, "model", engine.DefaultModel, "model: a GGUF file, a Hugging Face directory, a llama2.c checkpoint, or synthetic:PRESET")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer.bin for llama2.c checkpoints (default: found beside the model)")
	fs.StringVar(&f.prompt, "prompt", "", "prompt text")
	fs.StringVar(&f.promptIDs, "prompt-ids", "", "prompt as token ids, e.g. 1,2,3 (for models without a tokenizer)")
	fs.IntVar(&f.ctxLen, "ctx", 0, "KV cache positions, at most the model's trained context (default: that context, capped at 4096 on the CPU; on a GPU the longest that fits)")
	fs.StringVar(&f.device, "device", "cpu", "where the target runs: "+strings.Join(engine.Devices(), ", "))
	cli.GPUsFlag(fs, &f.gpus)
	fs.StringVar(&f.logDir, "log-dir", "", "write a JSONL event log per run into this directory")
	fs.IntVar(&f.cfg.MaxTokens, "max-tokens", 128, "tokens to generate at most")
	fs.BoolVar(&f.cfg.IgnoreEOS, "ignore-eos", false, "keep generating past the end-of-sequence token, up to --max-tokens (for benchmarks)")
	fs.Func("temperature", "sampling temperature (0 = greedy)", func(s string) error {
		return parseFloat32(s, &f.cfg.Sampling.Temperature)
	})
	fs.IntVar(&f.cfg.Sampling.TopK, "top-k", 0, "sample from the k most likely tokens (0 = off)")
	fs.Func("top-p", "nucleus sampling mass (0 or 1 = off)", func(s string) error {
		return parseFloat32(s, &f.cfg.Sampling.TopP)
	})
	fs.Uint64Var(&f.seed, "seed", 1, "random seed (same seed, same output)")
	fs.StringVar(&f.cfg.Drafter.Kind, "drafter", "", "speculative drafter: none, ngram, model or eagle3 (default none; --draft implies model, or eagle3 for an EAGLE-3 head directory)")
	fs.StringVar(&f.cfg.Drafter.Path, "draft", "", "draft model file (same vocabulary as the target); implies --drafter model")
	fs.IntVar(&f.cfg.Drafter.K, "k", engine.DefaultK, "draft length: tokens per chain, or tree depth (1..16)")
	fs.IntVar(&f.cfg.Drafter.Tree, "tree", 0, "draft a tree with this many branches per depth (absent = a chain)")
	fs.IntVar(&f.ngramMin, "ngram-min", engine.DefaultNgramMin, "ngram drafter: smallest n-gram to match")
	fs.IntVar(&f.ngramMax, "ngram-max", engine.DefaultNgramMax, "ngram drafter: largest n-gram to match")
	fs.IntVar(&f.cfg.TP, "tp", 1, "tensor-parallel ranks")
	fs.StringVar(&f.cfg.AllReduce, "allreduce", "", "allreduce backend joining the ranks (default: the engine's choice)")
	cli.NCCLFlags(fs, &f.cfg.NCCL)
}

// runConfig resolves the prompt and checks the flags against what any
// model allows (engine.CheckRunConfig); the model-dependent checks run when
// the model is open. At the flag level 0 is never a silent default: the
// flags' defaults are real values.
func (f *runFlags) runConfig() (engine.RunConfig, error) {
	cfg := f.cfg
	cfg.Sampling.Seed = f.seed
	switch {
	case f.prompt != "" && f.promptIDs != "":
		return cfg, errors.New("give --prompt or --prompt-ids, not both")
	case f.promptIDs != "":
		ids, err := engine.ParseIDs(f.promptIDs)
		if err != nil {
			return cfg, fmt.Errorf("--prompt-ids: %w", err)
		}
		cfg.PromptIDs = ids
	case f.prompt != "":
		cfg.Prompt = f.prompt
	default:
		return cfg, errors.New("give a prompt: --prompt TEXT or --prompt-ids 1,2,3")
	}
	switch {
	case cfg.MaxTokens < 1:
		return cfg, fmt.Errorf("--max-tokens %d must be at least 1", cfg.MaxTokens)
	case cfg.TP < 1:
		return cfg, fmt.Errorf("--tp %d must be at least 1", cfg.TP)
	case cfg.Drafter.K < 1:
		return cfg, fmt.Errorf("--k %d must be at least 1", cfg.Drafter.K)
	case f.ngramMin < 1 || f.ngramMax < 1:
		return cfg, fmt.Errorf("--ngram-min %d / --ngram-max %d: an n-gram has at least 1 token", f.ngramMin, f.ngramMax)
	case f.ctxLen < 0:
		return cfg, fmt.Errorf("--ctx %d is negative; give the KV cache positions, or leave it out for the model's context", f.ctxLen)
	}
	cfg.Drafter.NgramMin, cfg.Drafter.NgramMax = f.ngramMin, f.ngramMax
	if err := engine.CheckRunConfig(cfg); err != nil {
		return cfg, err
	}
	dc, err := engine.NormalizeDrafter(cfg.Drafter)
	if err != nil {
		return cfg, err
	}
	cfg.Drafter = dc
	return cfg, nil
}

// parseFloat32 parses a float flag; its range is the engine's to check
// (NaN and Inf parse, and are refused there by name).
func parseFloat32(s string, dst *float32) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is not a number", s)
	}
	if *dst = float32(v); *dst == 0 && v != 0 {
		return fmt.Errorf("%s is too close to 0 for a float32", s)
	}
	return nil
}

type generateOutput struct {
	Tokens    []int32      `json:"tokens"`
	FromDraft []bool       `json:"from_draft,omitempty"` // per token: drafted and accepted
	Text      string       `json:"text"`
	Stats     engine.Stats `json:"stats"`
	// Baseline says where the verdict's baseline came from
	// (stats.verdict.baseline_source: session_plain_run,
	// in_run_plain_steps or this_plain_run); SpecPays is the verdict once
	// its interval decides it (absent while too close to call).
	Baseline string `json:"baseline_source"`
	SpecPays *bool  `json:"spec_pays,omitempty"`
}

func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf runFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object with tokens, text and stats instead of streaming")
	metricsAddr := cli.MetricsAddrFlag(fs)
	var stops []string
	fs.Func("stop", fmt.Sprintf("end the generation before this text (repeatable, up to %d)", engine.MaxStops), func(s string) error {
		stops = append(stops, s)
		return nil
	})
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := rf.runConfig()
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	cfg.Stop = stops
	obs, stopMetrics, err := cli.StartMetrics(ctx, *metricsAddr, stderr)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	defer func() { err = errors.Join(err, stopMetrics()) }()
	opts := rf.engineOptions()
	opts.Observer = obs
	eng, err := engine.Open(ctx, rf.model, opts)
	if err != nil {
		return err
	}
	defer eng.Close()
	var out generateOutput
	_, noTok := eng.Tokenizer()
	st, err := eng.Run(ctx, cfg, func(ev engine.Event) {
		if ev.Kind == engine.EventWarning {
			fmt.Fprintln(stderr, "rigscope: warning:", ev.Warning)
		}
		if ev.Kind != engine.EventTokens {
			return
		}
		for _, t := range ev.Tokens {
			out.Tokens = append(out.Tokens, t.ID)
			out.FromDraft = append(out.FromDraft, t.FromDraft)
			out.Text += t.Text
			if *asJSON {
				continue
			}
			if noTok != nil {
				fmt.Fprintf(stdout, "%d ", t.ID)
			} else {
				io.WriteString(stdout, t.Text)
			}
		}
	})
	if err != nil {
		return err
	}
	if ctx.Err() != nil || st.StopReason == "cancelled" {
		fmt.Fprintln(stdout)
		return fmt.Errorf("generate: stopped after %d tokens", st.GeneratedTokens)
	}
	out.Stats, out.Baseline = st, st.Verdict.BaselineSource
	if st.Verdict.Decided() {
		pays := st.Verdict.State == stepstats.Pays
		out.SpecPays = &pays
	}
	if cfg.Drafter.Kind == "none" {
		out.FromDraft = nil
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(out)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stderr, "%d prompt tokens, %d generated in %.0f ms prefill; %.1f tok/s decode; stop: %s\n",
		st.PromptTokens, st.GeneratedTokens, st.PrefillMs, st.DecodeTokensPerS, st.StopReason)
	if cfg.Drafter.Kind != "none" {
		printSpecStats(stderr, cfg.Drafter, st)
	}
	return nil
}

// printSpecStats writes the speculative summary: counts, acceptance, times,
// and the break-even verdict.
func printSpecStats(w io.Writer, dc engine.DrafterConfig, st engine.Stats) {
	shape := "chain"
	if dc.Tree > 0 {
		shape = fmt.Sprintf("tree %d", dc.Tree)
	}
	fmt.Fprintf(w, "drafter %s, k=%d, %s: %d drafts, %d draft tokens, %d accepted; accept hist %v; per position %s\n",
		dc.Kind, dc.K, shape, st.Drafts, st.DraftTokens, st.AcceptedTokens, st.AcceptHist, fmtRates(st.AcceptPerPos))
	fmt.Fprintf(w, "draft %.1f ms, verify %.1f ms; mean acceptance length %.2f\n%s\n",
		st.DraftMs, st.VerifyMs, st.MeanAcceptLen, st.Verdict)
}

func fmtRates(r []float64) string {
	s := "["
	for i, v := range r {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", v)
	}
	return s + "]"
}

// engineOptions are the load options the flags ask for.
func (f *runFlags) engineOptions() engine.Options {
	return engine.Options{TokenizerPath: f.tokenizer, CtxLen: f.ctxLen, Device: f.device, GPUs: f.gpus, LogDir: f.logDir}
}
