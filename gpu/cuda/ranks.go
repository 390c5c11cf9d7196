//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// rankState is one tensor-parallel rank of a Target: its shard of the
// weights (column-parallel qkv, gate, up; row-parallel wo, down; its vocab
// rows of the output projection) and its slices of the run state. The
// ranks of a Target share its device, stream, replicated activations x and
// logits; TP=1 is one rank.
type rankState struct {
	m    *dmodel
	dims shardDims

	nqkv, kvw      int          // qkv row width (hq+2hk)*hd; kv cache width hk*hd
	qkv, att, hbuf cu.DevicePtr // (MaxTokens, nqkv | hq*hd | ffn) float32
	part           cu.DevicePtr // (MaxTokens, dim) partial sums of wo and down (TP > 1)
	kc, vc         cu.DevicePtr // (layers, slots, kvw) float32
}

// LoadTP uploads every rank's shard (ws[r] has Shard{r, len(ws)}) to d,
// the ranks sharing it, with a cache of ctxLen positions.
func LoadTP(d *Device, ws []*model.Weights, ctxLen int) (*Target, error) {
	unbind, err := d.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	cfg := ws[0].Cfg
	need := stateBytes(cfg, ctxLen, d.SMs, len(ws))
	dims := make([]shardDims, len(ws))
	for r, w := range ws {
		need += modelBytes(w)
		dims[r] = weightDims(w)
	}
	if err := d.checkFits(need, cfg, ctxLen); err != nil {
		return nil, err
	}
	ms := make([]*dmodel, 0, len(ws))
	free := func() {
		for _, m := range ms {
			m.free()
		}
	}
	for _, w := range ws {
		m, err := uploadModel(w)
		if err != nil {
			free()
			return nil, err
		}
		ms = append(ms, m)
	}
	t, err := newTarget(d, ms, dims, ctxLen)
	if err != nil {
		free()
	}
	return t, err
}

// LoadSyntheticTP builds a bf16 model of cfg's shape on the device itself,
// split over tp ranks that share it (for benchmarks).
func LoadSyntheticTP(d *Device, cfg model.Config, tp, ctxLen int, seed uint32) (*Target, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := model.CheckTP(cfg, tp); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	unbind, err := d.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	need := stateBytes(cfg, ctxLen, d.SMs, tp)
	dims := make([]shardDims, tp)
	for r := range dims {
		dims[r] = syntheticDims(cfg, model.Shard{Rank: r, Size: tp})
		need += 2 * dims[r].weights(cfg)
	}
	if err := d.checkFits(need, cfg, ctxLen); err != nil {
		return nil, err
	}
	var ms []*dmodel
	for r := range dims {
		m, err := syntheticModel(d, cfg, dims[r], seed+uint32(1000*r))
		if err != nil {
			for _, m := range ms {
				m.free()
			}
			return nil, err
		}
		ms = append(ms, m)
	}
	t, err := newTarget(d, ms, dims, ctxLen)
	if err != nil {
		for _, m := range ms {
			m.free()
		}
	}
	return t, err
}

// weights counts a shard's weight elements (embedding and output included).
func (s shardDims) weights(cfg model.Config) int64 {
	hd, dim := int64(cfg.HeadDim), int64(cfg.Dim)
	per := dim*(int64(s.hq)+2*int64(s.hk))*hd + dim*int64(s.hq)*hd + 3*dim*int64(s.ffn)
	return per*int64(cfg.Layers) + int64(cfg.Vocab)*dim + int64(s.vocab)*dim
}

// allReduceAdd adds the ranks' partial sums (T, dim) into x, in rank order
// (the same sum on every rank), timed as "allreduce".
func (t *Target) allReduceAdd(T int) error {
	return t.kernel("allreduce", 0, "ar_add", [3]int{min(4*t.dev.SMs, max(1, (T*t.cfg.Dim+1023)/1024)), 1, 1}, [3]int{256, 1, 1},
		ptr(t.x), ptr(t.partTable), i32(len(t.ranks)), i64(T*t.cfg.Dim))
}
