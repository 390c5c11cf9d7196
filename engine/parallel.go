package engine

import (
	"context"
	"time"

	"rigscope/engine/metrics"
	"rigscope/engine/spec"
	"rigscope/engine/tp"
)

// DefaultAllReduce is the backend a run uses when RunConfig.AllReduce is "".
const DefaultAllReduce = "auto"

// prepare returns the target for cfg's TP size with a fresh allreduce group
// of cfg's backend attached. The group lives for this run only, so a run in
// flight keeps its backend and the next run may use another one; the
// weights are never reloaded.
func (e *Engine) prepare(ctx context.Context, cfg *RunConfig, gopts tp.GroupOptions) (runTarget, error) {
	if cfg.TP <= 0 {
		cfg.TP = 1
	}
	if cfg.AllReduce == "" {
		cfg.AllReduce = DefaultAllReduce
	}
	if e.opts.Device != "" && e.opts.Device != "cpu" {
		return e.deviceTarget(ctx, *cfg, gopts)
	}
	t, err := e.target(ctx, cfg.TP)
	if err != nil {
		return nil, err
	}
	var g *tp.Group
	if cfg.TP > 1 {
		if gopts.CacheDir == "" {
			gopts.CacheDir = e.opts.CacheDir
		}
		g, err = tp.NewGroup(cfg.AllReduce, cfg.TP, gopts)
		if err != nil {
			return nil, err
		}
	} else if err := tp.CheckBackend(cfg.AllReduce); err != nil {
		return nil, err // an unknown backend name is an error even at TP=1
	}
	t.attach(g)
	return t, nil
}

// runTarget is a target as a run sees it: the spec loop's view plus the
// allreduce counters for the stats.
type runTarget interface {
	spec.Target
	allReduceTime() time.Duration
	commStats(st *Stats, wall float64)
}

// commStats fills the tensor-parallel parts of st after a run.
func (t *tpTarget) commStats(st *Stats, wall float64) {
	st.AllReduceMs = ms(t.allReduceTime())
	for _, r := range t.ranks {
		st.WeightBytesPerRank = append(st.WeightBytesPerRank, r.W.Bytes())
		st.KVBytesPerRank = append(st.KVBytesPerRank, r.KV.Bytes())
	}
	if wall > 0 {
		st.AllReduceShare = st.AllReduceMs / wall
	}
	if t.group == nil {
		return
	}
	gs := t.group.Stats()
	st.BytesSent = append([]int64{}, gs.BytesSent...)
	st.BytesRecv = append([]int64{}, gs.BytesRecv...)
	st.SetAllReduce(gs.Latency, t.group.Backend(), t.group.AutoTable())
}

// SetAllReduce fills the stats' allreduce figures from a run's latency
// summaries: the dominant size's percentiles, the bytes moved, and the
// backend each size bucket used (auto resolved through its table; nil
// for none).
func (st *Stats) SetAllReduce(lat []metrics.LatencySummary, backend string, auto *tp.AutoTable) {
	if b, ok := metrics.DominantBucket(lat, backend); ok {
		st.AllReduceP50Us, st.AllReduceP99Us = float64(b.P50)/1e3, float64(b.P99)/1e3
	}
	st.BytesMoved = 0
	for _, b := range st.BytesSent {
		st.BytesMoved += b
	}
	st.AllReduceBySize = backendUse(lat, auto)
	st.AllReduceLatency = nil
	for _, l := range lat {
		if l.Count > 0 {
			st.AllReduceLatency = append(st.AllReduceLatency, l)
		}
	}
}

// backendUse lists which backend carried each message-size bucket of a
// run's allreduces; auto's buckets name the backend its table picks for
// the bucket's largest size.
func backendUse(lat []metrics.LatencySummary, auto *tp.AutoTable) []BackendUse {
	var out []BackendUse
	for _, l := range lat {
		if l.Count == 0 {
			continue
		}
		u := BackendUse{Bytes: l.Bytes, Backend: l.Backend, Calls: l.Count}
		if l.Backend == "auto" && auto != nil && len(auto.Rules) > 0 {
			u.Backend = auto.Pick(l.Bytes)
		}
		out = append(out, u)
	}
	return out
}
