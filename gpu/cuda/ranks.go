//go:build cuda

package cuda

import (
	"errors"
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
	// can run at once: partials (hk, G*MaxTokens, ap.cols()[, hd]) and counters.
	pm, pl, pacc, attnCnt cu.DevicePtr

	stream cu.Stream // TP > 1: the rank's phases run here (onRanks)
	done   cu.Event  // recorded on stream at the end of each phase
	rd     *rankDev  // its GPU, and what the ranks there share (rankdev.go)
}

// sliceAttnScratch points every home rank at its slice of the Target's
// attention partials and counters (sized for all query heads); a remote
// rank gets its own on its GPU.
func (t *Target) sliceAttnScratch() error {
	var rows, cnts int64
	for _, R := range t.ranks {
		if R.rd.remote {
			var err error
			alloc := t.allocOn(R.rd, &err)
			n := int64(R.dims.hq) * MaxTokens * int64(t.ap.cols())
			nc := int64(R.dims.hk * attnRowGroups(t.cfg))
			R.pm, R.pl, R.pacc, R.attnCnt = alloc(4*n), alloc(4*n), alloc(4*n*int64(t.cfg.HeadDim)), alloc(4*nc)
			if err == nil {
				err = t.in(R.rd, func() error { return cu.MemsetD32(R.attnCnt, 0, nc) })
			}
			if err != nil {
				return fmt.Errorf("cuda: attention scratch of rank %d: %w", R.r, err)
			}
			continue
		}
		R.pm, R.pl = t.pm+cu.DevicePtr(4*rows*int64(t.ap.cols())), t.pl+cu.DevicePtr(4*rows*int64(t.ap.cols()))
		R.pacc = t.pacc + cu.DevicePtr(4*rows*int64(t.ap.cols()*t.cfg.HeadDim))
		R.attnCnt = t.attnCnt + cu.DevicePtr(4*cnts)
		rows += int64(R.dims.hq) * MaxTokens
		cnts += int64(R.dims.hk * attnRowGroups(t.cfg))
	}
	return nil
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
		err := t.in(R.rd, func() error { // on the rank's GPU
			var err error
			if R.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
				return fmt.Errorf("cuda: stream of rank %d: %w", r, err)
			}
			if R.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
				return fmt.Errorf("cuda: event of rank %d: %w", r, err)
			}
			return nil
		})
		if err != nil {
			return err
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
		t.in(R.rd, func() error {
			if R.stream != zs {
				R.stream.Destroy()
			}
			if R.done != ze {
				cu.DestroyEvent(&R.done)
			}
			return nil
		})
	}
	if t.fork != ze {
		cu.DestroyEvent(&t.fork)
	}
}

// onRanks enqueues phase(R) for every rank: each on its own stream, forked
// from the target's stream and joined back into it, so that the ranks'
// kernels overlap (captured into the step's graph as parallel branches);
// or, with one rank, rank streams off, or while profiling, one after
// another on the target's stream. A remote rank's phase (rankdev.go) is
// enqueued with its GPU's context current and its GPU's kernels.
func (t *Target) onRanks(phase func(R *rankState) error) error {
	if !t.multiStream || t.prof != nil {
		if t.anyRemote() {
			return fmt.Errorf("cuda: ranks on other GPUs (%s) run on their own streams: profiling kernel by kernel and RIGSCOPE_CUDA_RANKSTREAMS=0 are for ranks sharing one GPU", joinInts(t.place.gpus))
		}
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
		err := t.in(R.rd, func() error {
			if err := R.stream.Wait(t.fork, 0); err != nil {
				return fmt.Errorf("cuda: rank %d waits for the fork: %w", r, err)
			}
			t.ls, t.ld = R.stream, R.rd.dev
			defer func() { t.ls, t.ld = t.stream, nil }()
			var err error
			if t.failRank == r+1 {
				err = errors.New("cuda: failure injected by the check (failRank)")
			} else {
				err = phase(R)
			}
			// Joined even when the phase failed, so that a capture in
			// progress ends cleanly (and is then discarded by replay).
			if e := R.done.Record(R.stream); e != nil && err == nil {
				err = fmt.Errorf("cuda: rank %d: join: %w", r, e)
			}
			return err
		})
		if e := t.stream.Wait(R.done, 0); e != nil && err == nil {
			err = fmt.Errorf("cuda: join rank %d: %w", r, e)
		}
		if err != nil { // the step stops here: its capture is discarded (replay), no rank waits on another
			return fmt.Errorf("cuda: rank %d on GPU %d: %w", r, R.rd.dev.Ordinal, err)
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
// With RIGSCOPE_CUDA_RANKDEVS=each every rank but rank 0 opens d again
// and takes the path of a rank on another GPU (rankdev.go).
func loadTPKV(d *Device, ws []*model.Weights, ctxLen int, kv kvFormat) (*Target, error) {
	devs, pl, err := sharedRanks(d, len(ws))
	if err != nil {
		return nil, err
	}
	return loadOn(devs, pl, ws, ctxLen, kv) // rankdev.go
}

// sharedRanks places n ranks on d: the same Device for every rank, or,
// with RIGSCOPE_CUDA_RANKDEVS=each, d opened again for every rank but
// rank 0 (the path of ranks on other GPUs, rankdev.go).
func sharedRanks(d *Device, n int) ([]*Device, rankPlacement, error) {
	tune, err := CurrentTuning()
	if err != nil {
		return nil, rankPlacement{}, err
	}
	devs := make([]*Device, n)
	pl := rankPlacement{gpus: make([]int, n)}
	for r := range devs {
		devs[r], pl.gpus[r] = d, d.Ordinal
		if r > 0 && tune.RankDevices {
			if devs[r], err = Open(d.Ordinal); err != nil {
				return nil, pl, fmt.Errorf("cuda: GPU %d for rank %d: %w", d.Ordinal, r, err)
			}
		}
	}
	return devs, pl, nil
}

// newTarget makes the run state for the ranks' models ms (dims: their
// local sizes) on d, the KV caches in format kv; on error the caller frees
// ms.
func newTarget(d *Device, ms []*dmodel, dims []shardDims, ctxLen int, kv kvFormat) (*Target, error) {
	devs := make([]*Device, len(ms))
	for r := range devs {
		devs[r] = d
	}
	t, err := newTargetOn(rankDevices(devs), ms, dims, ctxLen, kv)
	if err == nil {
		t.place = rankPlacement{gpus: make([]int, len(ms))}
		for r := range t.place.gpus {
			t.place.gpus[r] = d.Ordinal
		}
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
	devs, pl, err := sharedRanks(d, tp)
	if err != nil {
		return nil, err
	}
	unbind, err := d.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	rds := rankDevices(devs)
	dims := make([]shardDims, tp)
	for r := range dims {
		dims[r] = syntheticDims(cfg, model.Shard{Rank: r, Size: tp})
	}
	if err := checkFitsPerGPU(rds, cfg, ctxLen, kv, func(r int) int64 { return 2 * dims[r].weights(cfg) }); err != nil {
		return nil, err
	}
	var ms []*dmodel
	free := func() {
		for r, m := range ms {
			inCtx(rds[r], d, func() error { m.free(); return nil })
		}
	}
	for r := range dims {
		var m *dmodel
		err := inCtx(rds[r], d, func() error {
			var e error
			m, e = syntheticModel(devs[r], cfg, dims[r], seed+uint32(1000*r), dt)
			return e
		})
		if err != nil {
			free()
			return nil, err
		}
		ms = append(ms, m)
	}
	t, err := newTargetOn(rds, ms, dims, ctxLen, kv)
	if err != nil {
		free()
		return nil, err
	}
	t.place = pl
	return t, nil
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
