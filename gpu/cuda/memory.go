//go:build cuda

package cuda

import (
	"fmt"
	"runtime"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// What a target needs on the device, checked before anything is uploaded,
// and the longest context that fits.

// checkFits refuses, with the numbers, a target that needs more than d's
// free memory (less a margin for the runtime).
func (d *Device) checkFits(need int64, cfg model.Config, ctxLen int) error {
	free, total, err := d.MemInfo()
	if err != nil {
		return err
	}
	if need > free-256<<20 {
		return fmt.Errorf("cuda: out of device memory: the model (dim %d, %d layers, vocab %d) with a %d-position cache needs %.2f GiB, %s has %.2f GiB free of %.2f GiB; use a smaller model, a quantized file or a shorter --ctx (one rank per GPU is not built yet)",
			cfg.Dim, cfg.Layers, cfg.Vocab, ctxLen, float64(need)/(1<<30), d.Name, float64(free)/(1<<30), float64(total)/(1<<30))
	}
	return nil
}

// stateBytes is the run state of tp ranks (KV caches as rank 0's times tp).
func stateBytes(cfg model.Config, ctxLen, sms, tp int) int64 {
	slots := ctxLen + MaxTokens
	d0 := syntheticDims(cfg, model.Shard{Rank: 0, Size: tp})
	kvw := d0.hk * cfg.HeadDim
	S := attnSplits(cfg, slots, sms)
	n := int64(tp) * 2 * int64(cfg.Layers) * int64(slots) * int64(kvw) * 4
	n += int64(tp) * MaxTokens * 4 * int64(cfg.Dim+(d0.hq+2*d0.hk)*cfg.HeadDim+d0.hq*cfg.HeadDim+d0.ffn)
	n += MaxTokens * 4 * int64(cfg.Dim+cfg.Vocab)
	n += MaxTokens * int64(cfg.Heads) * int64(S) * int64(cfg.HeadDim+2) * 4
	n += int64(slots+64) * int64(cfg.HeadDim) * 4
	n += int64(tp) * (xfBytes(d0.hq*cfg.HeadDim) + xfBytes(d0.ffn))
	n += prefillBytes(cfg, d0, tp)
	return n
}

// MaxContext is the longest context, up to the model's own (cfg.MaxSeq),
// in steps of 1024 positions, for which a target of cfg with weightBytes
// of weights and tp ranks fits on the GPU the ranks go to (gpus[0], else
// GPU 0), leaving a tenth of the free memory for drafters and the
// runtime; 0 when not even 1024 positions fit. The engine takes it as the
// default context on the GPU (--ctx 0).
func MaxContext(cfg model.Config, weightBytes int64, tp int, gpus []int) (int, error) {
	ord := 0
	if len(gpus) > 0 {
		ord = gpus[0]
	}
	if err := driverInit(); err != nil {
		return 0, err
	}
	dev, err := cu.GetDevice(ord)
	if err != nil {
		return 0, fmt.Errorf("cuda: device %d: %w", ord, err)
	}
	sms, err := dev.Attribute(cu.MultiprocessorCount)
	if err != nil {
		return 0, fmt.Errorf("cuda: device %d attributes: %w", ord, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return 0, fmt.Errorf("cuda: device %d: retain primary context: %w", ord, err)
	}
	defer dev.ReleasePrimaryCtx() // a target's Device holds its own reference
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return 0, fmt.Errorf("cuda: device %d: make context current: %w", ord, err)
	}
	free, _, err := cu.MemInfo()
	if err != nil {
		return 0, fmt.Errorf("cuda: device %d memory: %w", ord, err)
	}
	budget := free*9/10 - 256<<20 - weightBytes
	best := 0
	for n := 1024; n <= cfg.MaxSeq; n += 1024 {
		if stateBytes(cfg, n, sms, max(1, tp)) > budget {
			break
		}
		best = n
	}
	if best > 0 && cfg.MaxSeq%1024 != 0 && stateBytes(cfg, cfg.MaxSeq, sms, max(1, tp)) <= budget {
		best = cfg.MaxSeq
	}
	return best, nil
}
