package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"rigscope/engine/loader"
	"rigscope/engine/loader/synthetic"
	"rigscope/engine/metrics"
	"rigscope/engine/model"
	"rigscope/engine/tokenizer"
	"rigscope/internal/modelpath"
	"rigscope/internal/safefile"
)

func init() {
	loader.OpenSynthetic = func(spec string) (loader.Source, error) { return synthetic.Open(spec) }
}

// DefaultModel is what the panel opens with no --model: a synthetic model
// that needs no download.
const DefaultModel = "synthetic:tiny"

// Options configure loading.
type Options struct {
	TokenizerPath string // llama2.c checkpoints: tokenizer.bin
	CtxLen        int    // KV cache positions; 0 = min(model's context, 4096)
	// LogDir, when set, receives one JSONL event log per run, written as
	// the run goes (run start with the config, every step, run end).
	LogDir string
	// CacheDir holds the allreduce calibration cache ("" = the default).
	CacheDir string
	// Device runs the target on "cpu" (default) or a registered accelerator
	// ("cuda" in a -tags cuda build). A draft model runs on the same
	// device; an EAGLE-3 head and the n-gram drafter on the CPU.
	Device string
	// GPUs places a device target's tensor-parallel ranks: nil is the
	// device's default; one ordinal puts every rank on that GPU; one per
	// rank puts rank i on GPUs[i] (--gpus 0,2,4,6).
	GPUs []int
	// Observer, when set, is told of every run as it goes (Observer).
	Observer Observer
}

// ModelInfo describes the loaded target for display.
type ModelInfo struct {
	Path         string
	Format       string
	DType        string
	Config       model.Config
	Params       int64
	ChatTemplate string // detected template name ("llama3", "chatml", "llama2") or ""
	// OwnTemplate is the model's own Jinja chat template (Source "" when it
	// declares none); tokenizer.FormatChat prefers it to ChatTemplate.
	OwnTemplate  tokenizer.JinjaTemplate
	HasTokenizer bool
}

// Engine holds one loaded target and runs generations on it, one at a time.
// Weights are loaded once; TP shards are views of them, made per TP size and
// kept, so swapping the allreduce backend or the drafter never reloads.
type Engine struct {
	src    loader.Source
	cfg    model.Config
	tok    tokenizer.Tokenizer // nil: ids only
	tokErr error
	info   ModelInfo
	opts   Options

	run       sync.Mutex // one run at a time
	mu        sync.Mutex // guards targets
	targets   map[int]*tpTarget
	drafters  drafterCache      // draft models by path (drafter.go)
	baselines baselines         // plain-run step times per configuration (run_baseline.go)
	rec       *metrics.Recorder // live counters for the panel (runlog.go)
	accel     *accelTarget      // the device target, when Options.Device is set
}

// Open loads a model (a path or "synthetic:PRESET"). Every size is checked
// before anything is allocated: the context against the model's, the
// weights and KV cache against this machine's available memory; paths must
// be regular files; a cancelled ctx stops the load between stages.
func Open(ctx context.Context, path string, opts Options) (*Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := modelpath.Regular(path, "model"); err != nil {
		return nil, err
	}
	if opts.TokenizerPath != "" {
		if _, err := safefile.CheckFile(opts.TokenizerPath, "--tokenizer", safefile.TokenizerLimit); err != nil {
			return nil, err
		}
	}
	src, err := loader.Open(path, loader.Options{TokenizerPath: opts.TokenizerPath})
	if err != nil {
		return nil, err
	}
	e, err := open(ctx, path, src, opts)
	if err != nil {
		src.Close()
		return nil, err
	}
	return e, nil
}

func open(ctx context.Context, path string, src loader.Source, opts Options) (*Engine, error) {
	cfg := src.Config()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(opts.GPUs) > 0 && (opts.Device == "" || opts.Device == "cpu") {
		return nil, fmt.Errorf("--gpus %v places GPU ranks; add --device cuda, or leave --gpus out for CPU ranks", opts.GPUs)
	}
	ctxLen, err := resolveCtx(opts.CtxLen, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if opts.CtxLen == 0 && opts.Device != "" && opts.Device != "cpu" {
		ctxLen = deviceDefaultCtx(opts, cfg, src.Meta()["dtype"], ctxLen)
	}
	opts.CtxLen = ctxLen
	e := &Engine{src: src, cfg: cfg, opts: opts, targets: map[int]*tpTarget{}, rec: metrics.NewRecorder(600)}
	e.tok, e.tokErr = src.Tokenizer()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	meta := src.Meta()
	e.info = ModelInfo{Path: path, Format: meta["format"], DType: meta["dtype"], Config: cfg, HasTokenizer: e.tok != nil}
	e.info.Params = params(cfg)
	if e.tok != nil {
		if err := checkTokenizer(path, cfg, e.tok); err != nil {
			return nil, err
		}
		e.info.ChatTemplate = tokenizer.DetectTemplate(meta["chat_template"], e.tok)
		e.info.OwnTemplate = tokenizer.JinjaTemplate{Source: meta["chat_template"], BOS: piece(e.tok, e.tok.BOS()), EOS: piece(e.tok, e.tok.EOS())}
	}
	// Build the CPU target now so a bad file fails at open, not at the first
	// run. (A device target uploads its weights at its first run instead;
	// the loader has already checked every tensor's shape and dtype.)
	if opts.Device == "" || opts.Device == "cpu" {
		if _, err := e.target(ctx, 1); err != nil {
			return nil, err
		}
	} else if _, err := lookupDevice(opts.Device); err != nil {
		return nil, err
	}
	return e, nil
}

func params(c model.Config) int64 {
	if c.MoE.Enabled() || c.MLA.Enabled() {
		return c.Params() // experts, latent attention
	}
	attn := int64(c.Dim) * int64(c.HeadDim) * int64(2*c.Heads+2*c.KVHeads)
	mlp := 3 * int64(c.Dim) * int64(c.FFN)
	emb := int64(c.Vocab) * int64(c.Dim)
	if !c.TiedEmbed {
		emb *= 2
	}
	return int64(c.Layers)*(attn+mlp+2*int64(c.Dim)) + emb + int64(c.Dim)
}

// Info describes the loaded model.
func (e *Engine) Info() ModelInfo { return e.info }

// Tokenizer returns the model's tokenizer or the reason there is none.
func (e *Engine) Tokenizer() (tokenizer.Tokenizer, error) { return e.tok, e.tokErr }

// Config is the target's config.
func (e *Engine) Config() model.Config { return e.cfg }

// CtxLen is the KV cache positions a run has: prompt plus generated tokens.
func (e *Engine) CtxLen() int { return e.opts.CtxLen }

// Source is the opened model file (drafters share its tokenizer checks).
func (e *Engine) Source() loader.Source { return e.src }

// Close releases the model file.
func (e *Engine) Close() error {
	e.run.Lock()
	defer e.run.Unlock()
	return errors.Join(e.CloseDrafters(), e.src.Close())
}

// target returns the TP-size-tp target, building its shards on first use
// once the memory they need is known to be there.
func (e *Engine) target(ctx context.Context, tp int) (*tpTarget, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.targets[tp]; ok {
		return t, nil
	}
	if err := e.checkMemory(tp); err != nil {
		return nil, err
	}
	ws := make([]*model.Weights, tp)
	for r := range ws {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w, err := model.LoadWeights(e.src, model.Shard{Rank: r, Size: tp})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.info.Path, err)
		}
		ws[r] = w
	}
	t := newTPTarget(ws, e.opts.CtxLen)
	e.targets[tp] = t
	return t, nil
}

// Encode tokenizes a prompt (with BOS as the model declares).
func (e *Engine) Encode(text string) ([]int32, error) {
	if e.tok == nil {
		return nil, fmt.Errorf("%s has no tokenizer (%v); pass token ids (--prompt-ids) instead", e.info.Path, e.tokErr)
	}
	return e.tok.Encode(text, true), nil
}

// ParseIDs parses "1,2,3": non-negative int32 ids (whether the model has
// them is checked when a run starts).
func ParseIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("token id %q is not an integer in 0..%d", f, math.MaxInt32)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, errors.New("no token ids given")
	}
	return ids, nil
}
