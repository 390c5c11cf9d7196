package engine

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tokenizer"
	"rigscope/engine/tp"
	"rigscope/internal/sysmem"
)

// Bounds on what a run may ask for.
const (
	// MinTemperature is the smallest temperature that samples: below it
	// 1/T overflows (1e-45 gives Inf and NaN probabilities). vLLM treats
	// temperatures under the same epsilon as greedy; here they are refused
	// so that 0 is the one way to ask for greedy decoding.
	MinTemperature = 1e-5
	MaxTemperature = 100
	// DefaultMaxTokens is what a RunConfig with MaxTokens 0 generates.
	DefaultMaxTokens = 256
	// MaxStops is how many stop strings a run may have (OpenAI's limit).
	MaxStops = 4
	// defaultCtx caps the KV cache when Options.CtxLen is 0.
	defaultCtx = 4096
)

// CheckRunConfig refuses run settings that are wrong whatever the model:
// non-finite or out-of-range floats, negative sizes, a TP size beyond this
// machine, an unknown drafter or backend. It allocates nothing. The
// settings that depend on the model (TP against heads, token ids against
// the vocabulary, context room) are checked when the run starts.
func CheckRunConfig(cfg RunConfig) error {
	if cfg.MaxTokens < 0 {
		return fmt.Errorf("max tokens %d is negative; give at least 1", cfg.MaxTokens)
	}
	if err := checkFloat("temperature", cfg.Sampling.Temperature, 0, MaxTemperature); err != nil {
		return err
	}
	if t := cfg.Sampling.Temperature; t > 0 && t < MinTemperature {
		return fmt.Errorf("temperature %s is below the smallest that samples, %g (1/T would overflow); use 0 for greedy decoding", strconv.FormatFloat(float64(t), 'g', -1, 32), MinTemperature)
	}
	if err := checkFloat("top-p", cfg.Sampling.TopP, 0, 1); err != nil {
		return err
	}
	if cfg.Sampling.TopK < 0 {
		return fmt.Errorf("top-k %d is negative; 0 turns it off", cfg.Sampling.TopK)
	}
	if err := checkTPMachine(cfg.TP); err != nil {
		return err
	}
	if cfg.AllReduce != "" {
		if err := checkBackendName(cfg.AllReduce); err != nil {
			return err
		}
	}
	if err := cfg.NCCL.Check(); err != nil {
		return err
	}
	if !cfg.NCCL.IsZero() && cfg.AllReduce != "nccl" {
		return fmt.Errorf("NCCL settings (%s) apply to the nccl allreduce backend; this run uses %s: choose nccl or leave them out", cfg.NCCL, nameOrAuto(cfg.AllReduce))
	}
	for i, id := range cfg.PromptIDs {
		if id < 0 {
			return fmt.Errorf("prompt token id %d (position %d) is negative", id, i)
		}
	}
	if len(cfg.Stop) > MaxStops {
		return fmt.Errorf("%d stop strings; at most %d are allowed", len(cfg.Stop), MaxStops)
	}
	for i, st := range cfg.Stop {
		if st == "" {
			return fmt.Errorf("stop string %d is empty; a stop string has at least one character", i+1)
		}
	}
	if cfg.Prompt == "" && len(cfg.PromptIDs) == 0 {
		return errors.New("empty prompt: give text or token ids")
	}
	_, err := NormalizeDrafter(cfg.Drafter)
	return err
}

// checkFloat refuses NaN, ±Inf and values outside [lo, hi].
func checkFloat(name string, v float32, lo, hi float64) error {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return fmt.Errorf("%s is NaN; give a number in [%g, %g]", name, lo, hi)
	case math.IsInf(f, 0):
		return fmt.Errorf("%s is %v; give a number in [%g, %g]", name, f, lo, hi)
	case f < lo || f > hi:
		return fmt.Errorf("%s %s is outside [%g, %g]", name, strconv.FormatFloat(f, 'g', -1, 32), lo, hi)
	}
	return nil
}

// checkTPMachine refuses TP sizes no model could run here: ranks are
// goroutines, so more than 4 per core only adds waiting, and a CPU group
// has at most tp.MaxRanks ranks. 0 means 1.
func checkTPMachine(n int) error {
	if n < 0 {
		return fmt.Errorf("TP %d is negative; give at least 1", n)
	}
	if limit := min(4*runtime.NumCPU(), tp.MaxRanks); n > limit {
		return fmt.Errorf("TP %d is more than this machine can run: at most %d ranks (4 per core on %d cores, a group holds at most %d)", n, limit, runtime.NumCPU(), tp.MaxRanks)
	}
	return nil
}

// CheckTP refuses TP sizes the model's heads or this machine's cores cannot
// take.
func CheckTP(cfg model.Config, n int) error {
	if err := checkTPMachine(n); err != nil {
		return err
	}
	return model.CheckTP(cfg, max(n, 1))
}

// checkPrompt refuses token ids the model has no embedding for.
func (e *Engine) checkPrompt(prompt []int32) error {
	for i, id := range prompt {
		if id < 0 || int(id) >= e.cfg.Vocab {
			return fmt.Errorf("prompt token id %d (position %d) is outside the model's vocabulary of %d tokens (ids 0..%d)", id, i, e.cfg.Vocab, e.cfg.Vocab-1)
		}
	}
	return nil
}

// resolveCtx checks the asked KV cache length against the model's trained
// context and returns the one to use (0 = min(trained, 4096)).
func resolveCtx(asked int, cfg model.Config) (int, error) {
	switch {
	case asked < 0:
		return 0, fmt.Errorf("context %d is negative; give 1..%d positions, or 0 for the default", asked, cfg.MaxSeq)
	case asked == 0:
		return min(cfg.MaxSeq, defaultCtx), nil
	case asked > cfg.MaxSeq:
		return 0, fmt.Errorf("context %d is beyond the %d positions the model was trained for, and rigscope applies no RoPE scaling that would stretch it; give --ctx %d or less", asked, cfg.MaxSeq, cfg.MaxSeq)
	}
	return asked, nil
}

// memoryNeed estimates the bytes a TP-tp target of cfg with ctx positions
// holds on the CPU: the weights (once; shards are views) and every rank's
// KV cache (float32 keys and values; kv heads are replicated when TP is
// larger than their count).
func memoryNeed(cfg model.Config, dtype string, ctx, tpSize int) (weights, kv float64) {
	weights = float64(params(cfg)) * bytesPerParam(dtype)
	kvHeads := cfg.KVHeads
	if tpSize > kvHeads {
		kvHeads = tpSize // one replicated kv head per rank
	}
	kv = float64(cfg.Layers) * float64(ctx) * float64(kvHeads) * float64(cfg.HeadDim) * 2 * 4
	if cfg.MLA.Enabled() { // the latent cache, replicated on every rank
		kv = float64(ctx) * float64(tpSize) * float64(cfg.KVBytesPerToken(0))
	}
	return weights, kv
}

// bytesPerParam is what a weight of the named dtype costs in memory (the
// CPU reads every GGUF type as stored, k-quants included).
func bytesPerParam(name string) float64 {
	for _, d := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.F8_E4M3} {
		if d.String() == name {
			return float64(d.BlockBytes()) / float64(d.BlockSize())
		}
	}
	return 4 // unknown: assume float32
}

// availableMemory is sysmem.Available (a variable for tests).
var availableMemory = sysmem.Available

// checkMemory refuses a target that would not fit in this machine's
// available memory, before any of it is allocated.
func (e *Engine) checkMemory(tpSize int) error {
	if e.opts.Device != "" && e.opts.Device != "cpu" {
		return nil // weights and cache live on the device, which checks its own memory
	}
	// At TP > 1 the TP-1 target already holds the weights; shards are views.
	return checkFits(e.info.Path, e.cfg, e.info.DType, e.opts.CtxLen, tpSize, tpSize == 1)
}

// checkFits refuses a model of cfg with a ctx-position KV cache at TP
// tpSize (and its weights, unless they are already held) when that needs
// more than the available memory, with the figures. Where the kernel does
// not say (no MemAvailable), nothing is refused.
func checkFits(path string, cfg model.Config, dtype string, ctx, tpSize int, withWeights bool) error {
	weights, kv := memoryNeed(cfg, dtype, ctx, tpSize)
	if !withWeights {
		weights = 0
	}
	avail, err := availableMemory()
	if err != nil {
		return nil
	}
	if need := weights + kv; need > float64(avail) {
		return fmt.Errorf("%s with a %d-position KV cache at TP %d needs about %s (weights %s + KV cache %s), and this machine has %s available (MemAvailable); lower --ctx or use a smaller model",
			path, ctx, max(tpSize, 1), sysmem.GiB(int64(need)), sysmem.GiB(int64(weights)), sysmem.GiB(int64(kv)), sysmem.GiB(avail))
	}
	return nil
}

// checkTokenizer refuses a tokenizer that is not the model's: more pieces
// than the model has embedding rows (ids without an embedding), or fewer by
// more than the padding models add to round their vocabulary (the model
// would emit ids the tokenizer cannot decode), or special ids past the
// vocabulary.
func checkTokenizer(path string, cfg model.Config, tok tokenizer.Tokenizer) error {
	n := tok.VocabSize()
	pad := max(512, cfg.Vocab/64)
	switch {
	case n > cfg.Vocab:
		return fmt.Errorf("%s: the tokenizer has %d tokens, the model only %d embedding rows (ids %d..%d have none); it is not this model's tokenizer", path, n, cfg.Vocab, cfg.Vocab, n-1)
	case n < cfg.Vocab-pad:
		return fmt.Errorf("%s: the tokenizer has %d tokens, the model %d: more than the %d padding rows models add, so it is not this model's tokenizer (the model's ids %d..%d would decode to nothing)", path, n, cfg.Vocab, pad, n, cfg.Vocab-1)
	}
	for _, sp := range []struct {
		name string
		id   int32
	}{{"BOS", tok.BOS()}, {"EOS", tok.EOS()}} {
		if sp.id >= int32(n) || sp.id < -1 {
			return fmt.Errorf("%s: the tokenizer's %s id %d is outside its %d tokens", path, sp.name, sp.id, n)
		}
	}
	return nil
}

func nameOrAuto(b string) string {
	if b == "" {
		return "the default backend"
	}
	return b
}
