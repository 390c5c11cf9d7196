//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// rankState is one tensor-parallel rank of a Target: its shard of the
// weights (column-parallel qkv, gate, up; row-parallel wo, down; its vocab
// rows of the output projection) and its slices of the run state. The
// ranks of a Target share its device, replicated activations x and
// logits; with TP > 1 each has its own stream (rankStreams); TP=1 is one
// rank.
type rankState struct {
	m    *dmodel
	dims shardDims
	r    int // its rank

	x              cu.DevicePtr // (MaxTokens, dim) float32: its replicated activations (rank 0's is the Target's x)
	nqkv, kvw      int          // qkv row width (hq+2hk)*hd; kv cache width hk*hd
	qkv, att, hbuf cu.DevicePtr // (MaxTokens, nqkv | hq*hd | ffn) float32
	attXF, hXF     cu.DevicePtr // att and hbuf split for the tensor cores (xfBytes)
	part           cu.DevicePtr // (MaxTokens, dim) partial sums of wo and down (TP > 1), joined by stepComm
	moe            moeBufs      // an MoE model's scratch (moe.go)
	mla            mlaBufs      // a latent attention model's scratch (mla.go)
	kc, vc         cu.DevicePtr // (layers, slots, kvw) in the target's kv format (float32 or bf16)
	// The rank's slices of the Target's attention scratch, so that ranks
	// can run at once: partials (hk, G*MaxTokens, S[, hd]) and counters.
	pm, pl, pacc, attnCnt cu.DevicePtr

	stream cu.Stream // TP > 1: the rank's phases run here (onRanks)
	done   cu.Event  // recorded on stream at the end of each phase
}

// sliceAttnScratch points every rank at its slice of the Target's
// attention partials and counters (sized for all query heads).
func (t *Target) sliceAttnScratch() {
	var rows, cnts int64
	for _, R := range t.ranks {
		R.pm, R.pl = t.pm+cu.DevicePtr(4*rows*int64(t.S)), t.pl+cu.DevicePtr(4*rows*int64(t.S))
		R.pacc = t.pacc + cu.DevicePtr(4*rows*int64(t.S*t.cfg.HeadDim))
		R.attnCnt = t.attnCnt + cu.DevicePtr(4*cnts)
		rows += int64(R.dims.hq) * MaxTokens
		cnts += int64(R.dims.hk * attnRowGroups(t.cfg))
	}
}

// rankStreams says whether the ranks of a TP > 1 target run their phases on
// their own streams, forked from and joined back into the target's stream
// (the default); RIGSCOPE_CUDA_RANKSTREAMS=0 runs them one after another
// on the target's stream, for comparison.
func rankStreams() bool { t, _ := CurrentTuning(); return t.RankStreams }

// makeRankStreams gives every rank its stream and event, and the target
// its fork event.
func (t *Target) makeRankStreams() error {
	var err error
	if t.fork, err = cu.MakeEvent(cu.DisableTiming); err != nil {
		return fmt.Errorf("cuda: fork event: %w", err)
	}
	for r, R := range t.ranks {
		if R.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return fmt.Errorf("cuda: stream of rank %d: %w", r, err)
		}
		if R.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			return fmt.Errorf("cuda: event of rank %d: %w", r, err)
		}
	}
	t.multiStream = true
	return nil
}

// closeRankStreams frees what makeRankStreams made (context bound).
func (t *Target) closeRankStreams() {
	var zs cu.Stream
	var ze cu.Event
	for _, R := range t.ranks {
		if R.stream != zs {
			R.stream.Destroy()
		}
		if R.done != ze {
			cu.DestroyEvent(&R.done)
		}
	}
	if t.fork != ze {
		cu.DestroyEvent(&t.fork)
	}
}

// onRanks enqueues phase(R) for every rank: each on its own stream, forked
// from the target's stream and joined back into it, so that the ranks'
// kernels overlap (captured into the step's graph as parallel branches);
// or, with one rank, rank streams off, or while profiling, one after
// another on the target's stream.
func (t *Target) onRanks(phase func(R *rankState) error) error {
	if !t.multiStream || t.prof != nil {
		for _, R := range t.ranks {
			if err := phase(R); err != nil {
				return err
			}
		}
		return nil
	}
	if err := t.fork.Record(t.stream); err != nil {
		return fmt.Errorf("cuda: fork: %w", err)
	}
	for r, R := range t.ranks {
		if err := R.stream.Wait(t.fork, 0); err != nil {
			return fmt.Errorf("cuda: rank %d waits for the fork: %w", r, err)
		}
		t.ls = R.stream
		err := phase(R)
		t.ls = t.stream
		if err != nil {
			return err
		}
		if err := R.done.Record(R.stream); err != nil {
			return fmt.Errorf("cuda: rank %d: join: %w", r, err)
		}
		if err := t.stream.Wait(R.done, 0); err != nil {
			return fmt.Errorf("cuda: join rank %d: %w", r, err)
		}
	}
	return nil
}

// LoadTP uploads every rank's shard (ws[r] has Shard{r, len(ws)}) to d,
// the ranks sharing it, with a cache of ctxLen positions in the format
// RIGSCOPE_CUDA_KV sets.
func LoadTP(d *Device, ws []*model.Weights, ctxLen int) (*Target, error) {
	tune, err := CurrentTuning()
	if err != nil {
		return nil, err
	}
	return loadTPKV(d, ws, ctxLen, tune.KV)
}

// loadTPKV is LoadTP with the cache's format given (the checks compare
// both in one process).
func loadTPKV(d *Device, ws []*model.Weights, ctxLen int, kv kvFormat) (*Target, error) {
	unbind, err := d.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	cfg := ws[0].Cfg
	if err := checkImplemented(cfg, len(ws)); err != nil {
		return nil, err
	}
	need := stateBytes(cfg, ctxLen, d.SMs, len(ws), kv)
	dims := make([]shardDims, len(ws))
	for r, w := range ws {
		if err := checkTypes(w); err != nil { // quantized weights stay as stored (quant.cu)
			return nil, err
		}
		need.weights += modelBytes(w)
		dims[r] = weightDims(w)
	}
	if err := d.checkFits(need, cfg); err != nil {
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
	t, err := newTarget(d, ms, dims, ctxLen, kv)
	if err != nil {
		free()
	}
	return t, err
}

// LoadSyntheticTP builds a bf16 model of cfg's shape on the device itself,
// split over tp ranks that share it (for benchmarks), with a cache in the
// format RIGSCOPE_CUDA_KV sets.
func LoadSyntheticTP(d *Device, cfg model.Config, tp, ctxLen int, seed uint32) (*Target, error) {
	return LoadSyntheticTPType(d, cfg, tp, ctxLen, seed, tensor.BF16)
}

// LoadSyntheticTPType is LoadSyntheticTP with the layer matrices in dt:
// BF16, or F8_E4M3 with 128x128 block scales (syntheticModel).
func LoadSyntheticTPType(d *Device, cfg model.Config, tp, ctxLen int, seed uint32, dt tensor.DType) (*Target, error) {
	if dt != tensor.BF16 && dt != tensor.F8_E4M3 {
		return nil, fmt.Errorf("cuda: synthetic weights of type %v are not implemented (BF16, F8_E4M3 are)", dt)
	}
	tune, err := CurrentTuning()
	if err != nil {
		return nil, err
	}
	return loadSyntheticKVType(d, cfg, tp, ctxLen, seed, tune.KV, dt)
}

// loadSyntheticKV is LoadSyntheticTP with the cache's format given.
func loadSyntheticKV(d *Device, cfg model.Config, tp, ctxLen int, seed uint32, kv kvFormat) (*Target, error) {
	return loadSyntheticKVType(d, cfg, tp, ctxLen, seed, kv, tensor.BF16)
}

// loadSyntheticKVType is loadSyntheticKV with the layer matrices in dt.
func loadSyntheticKVType(d *Device, cfg model.Config, tp, ctxLen int, seed uint32, kv kvFormat, dt tensor.DType) (*Target, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkImplemented(cfg, tp); err != nil {
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
	need := stateBytes(cfg, ctxLen, d.SMs, tp, kv)
	dims := make([]shardDims, tp)
	for r := range dims {
		dims[r] = syntheticDims(cfg, model.Shard{Rank: r, Size: tp})
		need.weights += 2 * dims[r].weights(cfg)
	}
	if err := d.checkFits(need, cfg); err != nil {
		return nil, err
	}
	var ms []*dmodel
	for r := range dims {
		m, err := syntheticModel(d, cfg, dims[r], seed+uint32(1000*r), dt)
		if err != nil {
			for _, m := range ms {
				m.free()
			}
			return nil, err
		}
		ms = append(ms, m)
	}
	t, err := newTarget(d, ms, dims, ctxLen, kv)
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
	n := per*int64(cfg.Layers) + int64(cfg.Vocab)*dim + int64(s.vocab)*dim
	if m := cfg.MoE; m.Enabled() { // MoE layers: every expert's slice and the f32 router (2 elements' bytes) for the dense MLP
		sparse := int64(cfg.Layers - min(m.FirstDense, cfg.Layers))
		n += sparse * (int64(m.Experts)*(3*dim*int64(s.moeFFN)+2*dim) + 3*dim*int64(s.moeShared) - 3*dim*int64(s.ffn))
	}
	if a := cfg.MLA; a.Enabled() { // latent attention in place of qkv and wo; the f32 up-projections count 2 elements
		hq := int64(s.hq)
		qk, r := int64(a.QKDim()), int64(a.KVRank)
		mla := int64(a.QRank+a.KVRank+a.RopeDim)*dim + hq*qk*int64(a.QRank) + 2*hq*r*int64(a.NopeDim+a.VDim) + dim*hq*int64(a.VDim)
		n += int64(cfg.Layers) * (mla - dim*(hq+2*int64(s.hk))*hd - dim*hq*hd)
	}
	return n
}
