//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"slices"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// What a target needs on the device, checked before anything is uploaded,
// and the longest context that fits.

// memNeed is what a target needs on the device, in bytes, before anything
// is uploaded.
type memNeed struct {
	weights int64    // every rank's weights
	kv      int64    // every rank's K and V caches (kvCacheBytes)
	other   int64    // the rest of the run state (activations, attention partials, prefill buffers)
	ctx     int      // cache positions asked for
	format  kvFormat // the cache's element type
}

func (m memNeed) total() int64 { return m.weights + m.kv + m.other }

// runtimeMargin is the device memory left to the CUDA runtime (module,
// graphs, cuBLAS workspace).
const runtimeMargin = 256 << 20

// checkFits refuses, with the numbers, a target that needs more than d's
// free memory less runtimeMargin.
func (d *Device) checkFits(need memNeed, cfg model.Config) error {
	free, total, err := d.MemInfo()
	if err != nil {
		return err
	}
	return fitsError(need, cfg, d.Name, free, total)
}

// fitsError is checkFits' verdict on a device called name with free of
// total bytes: nil when need fits, else the refusal with the figures.
func fitsError(need memNeed, cfg model.Config, name string, free, total int64) error {
	if need.total() <= free-runtimeMargin {
		return nil
	}
	gib := func(n int64) float64 { return float64(n) / (1 << 30) }
	hint := ""
	if need.format != kvBF16 {
		hint = ", a bf16 cache (RIGSCOPE_CUDA_KV=bf16 halves it)"
	}
	return fmt.Errorf("cuda: out of device memory: the model (dim %d, %d layers, vocab %d) with a %d-position %s KV cache needs %.2f GiB (weights %.2f + KV cache %.2f + run state %.2f), %s has %.2f GiB free of %.2f GiB (%.2f kept for the runtime); use a smaller model, a quantized file, a shorter --ctx%s, or one rank per GPU (--gpus 0,1,.. with --tp N: each GPU holds its rank's share)",
		cfg.Dim, cfg.Layers, cfg.Vocab, need.ctx, need.format, gib(need.total()), gib(need.weights), gib(need.kv), gib(need.other),
		name, gib(free), gib(total), gib(runtimeMargin), hint)
}

// kvCacheBytes is the K and V caches of tp ranks for ctxLen positions (and
// the MaxTokens slots of a step past them) in format f: rank 0's times tp.
func kvCacheBytes(cfg model.Config, ctxLen, tp int, f kvFormat) int64 {
	d0 := syntheticDims(cfg, model.Shard{Rank: 0, Size: tp})
	kvw := d0.hk * cfg.HeadDim
	if a := cfg.MLA; a.Enabled() { // one float32 latent cache per rank (mla.go)
		return int64(tp) * int64(cfg.Layers) * int64(ctxLen+MaxTokens) * int64(a.KVRank+a.RopeDim) * 4
	}
	return int64(tp) * 2 * int64(cfg.Layers) * int64(ctxLen+MaxTokens) * int64(kvw) * int64(f.elemBytes())
}

// stateBytes is the run state of tp ranks besides their weights: the KV
// caches in format f and the rest.
func stateBytes(cfg model.Config, ctxLen, sms, tp int, f kvFormat) memNeed {
	slots := ctxLen + MaxTokens
	d0 := syntheticDims(cfg, model.Shard{Rank: 0, Size: tp})
	tune, _ := CurrentTuning() // the knobs were parsed before any load; a bad one fails there
	ap := newAttnPlan(cfg, slots, sms, tune)
	n := int64(tp) * MaxTokens * 4 * int64(cfg.Dim+(d0.hq+2*d0.hk)*cfg.HeadDim+d0.hq*cfg.HeadDim+d0.ffn)
	n += MaxTokens * 4 * int64(cfg.Dim+cfg.Vocab)
	n += MaxTokens * int64(cfg.Heads) * int64(ap.cols()) * int64(cfg.HeadDim+2) * 4 // attention partials
	n += int64(slots+64) * int64(cfg.HeadDim) * 4
	n += int64(tp) * (xfBytes(d0.hq*cfg.HeadDim) + xfBytes(d0.ffn))
	n += prefillBytes(cfg, d0, tp)
	return memNeed{kv: kvCacheBytes(cfg, ctxLen, tp, f), other: n, ctx: ctxLen, format: f}
}

// MaxContext is the longest context, up to the model's own (cfg.MaxSeq),
// in steps of 1024 positions, for which a target of cfg with weightBytes
// of weights and tp ranks fits on the GPUs the ranks go to (gpus, else
// GPU 0; with one rank per GPU each holds its share of the weights and
// the cache, and the one with the least free memory decides), leaving a
// tenth of the free memory for drafters and the runtime; 0 when not even
// 1024 positions fit. The cache is counted in the format RIGSCOPE_CUDA_KV
// sets (a bf16 cache fits about twice the positions). The engine takes it
// as the default context on the GPU (--ctx 0).
func MaxContext(cfg model.Config, weightBytes int64, tp int, gpus []int) (int, error) {
	ords := []int{0}
	if len(gpus) > 0 {
		ords = distinctInts(gpus)
	}
	tune, err := CurrentTuning()
	if err != nil {
		return 0, err
	}
	if err := driverInit(); err != nil {
		return 0, err
	}
	best := -1
	for _, ord := range ords {
		free, sms, err := freeOn(ord)
		if err != nil {
			return 0, err
		}
		k := int64(len(ords))
		n := contextFitsShare(cfg, free*9/10-runtimeMargin-weightBytes/k, sms, max(1, tp), tune.KV, len(ords))
		if best < 0 || n < best {
			best = n
		}
	}
	return best, nil
}

// freeOn is GPU ord's free memory and SM count.
func freeOn(ord int) (free int64, sms int, err error) {
	dev, err := cu.GetDevice(ord)
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: device %d: %w", ord, err)
	}
	if sms, err = dev.Attribute(cu.MultiprocessorCount); err != nil {
		return 0, 0, fmt.Errorf("cuda: device %d attributes: %w", ord, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: device %d: retain primary context: %w", ord, err)
	}
	defer dev.ReleasePrimaryCtx() // a target's Device holds its own reference
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return 0, 0, fmt.Errorf("cuda: device %d: make context current: %w", ord, err)
	}
	f, _, err := cu.MemInfo()
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: device %d memory: %w", ord, err)
	}
	return int64(f), sms, nil
}

// contextFits is the longest context up to cfg.MaxSeq, in steps of 1024
// positions (or cfg.MaxSeq itself), whose run state in format f fits
// budget bytes; 0 when 1024 positions do not.
func contextFits(cfg model.Config, budget int64, sms, tp int, f kvFormat) int {
	return contextFitsShare(cfg, budget, sms, tp, f, 1)
}

// contextFitsShare is contextFits for one of gpus GPUs that hold a
// 1/gpus share of the cache each (one rank per GPU).
func contextFitsShare(cfg model.Config, budget int64, sms, tp int, f kvFormat, gpus int) int {
	fits := func(n int) bool {
		st := stateBytes(cfg, n, sms, tp, f)
		st.kv /= int64(max(1, gpus))
		return st.total() <= budget
	}
	best := 0
	for n := 1024; n <= cfg.MaxSeq; n += 1024 {
		if !fits(n) {
			break
		}
		best = n
	}
	if best > 0 && cfg.MaxSeq%1024 != 0 && fits(cfg.MaxSeq) {
		best = cfg.MaxSeq
	}
	return best
}

// distinctInts is v without repeats, in order.
func distinctInts(v []int) []int {
	var out []int
	for _, x := range v {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
