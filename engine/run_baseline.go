package engine

import (
	"fmt"
	"sync"

	"rigscope/engine/stepstats"
)

// baselines keeps, per configuration, the step times of the last complete
// plain run on this engine: the session baseline of later speculative runs
// of exactly that configuration. The zero value is ready.
type baselines struct {
	mu sync.Mutex
	m  map[string]stepstats.Sample // plain steps' wall seconds by baselineKey
}

// baselineKey names everything the plain decode rate depends on: the
// model, the device, the context (KV cache) length, the TP size and the
// allreduce backend. cfg is normalized (prepare has run).
func (e *Engine) baselineKey(cfg RunConfig) string {
	dev := e.opts.Device
	if dev == "" {
		dev = "cpu"
	}
	key := fmt.Sprintf("model=%s device=%s ctx=%d tp=%d allreduce=%s", e.info.Path, dev, e.opts.CtxLen, cfg.TP, cfg.AllReduce)
	if !cfg.NCCL.IsZero() {
		key += " " + cfg.NCCL.String()
	}
	return key
}

func (b *baselines) get(key string) (stepstats.Sample, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.m[key]
	return s, ok
}

func (b *baselines) set(key string, s stepstats.Sample) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]stepstats.Sample{}
	}
	b.m[key] = s
}

// seedCounts starts a run's tally: a plain run is its own baseline; a
// speculative one takes the session baseline of its configuration when
// there is one, else measures its own (measure true: interleaved plain
// steps).
func (e *Engine) seedCounts(key string, k int, speculative bool) (c stepstats.Counts, measure bool) {
	if !speculative {
		c = stepstats.NewCounts(0)
		c.Source = stepstats.BaselineThisRun
		return c, false
	}
	c = stepstats.NewCounts(k)
	if base, ok := e.baselines.get(key); ok {
		c.Base, c.Source = base, stepstats.BaselineSession
		return c, false
	}
	c.Source = stepstats.BaselineInRun
	return c, true
}
