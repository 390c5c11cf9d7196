//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// rankDev is a GPU the ranks of a Target run on, and what its ranks share
// there. The target's own GPU (rank 0's) is home: its shared buffers are
// the Target's own (t.step, t.path, t.attn, the logits). A rank on another
// GPU (one rank per GPU: --gpus 0,1,..) is remote: it has its GPU's copies
// of the step's parameters, the path and the RoPE tables, writes its vocab
// rows into its GPU's logits and copies them to the target's, allocates
// and launches in its GPU's context, on its own stream; its weights, KV
// cache and scratch live on its GPU. The allreduce kernels (stepcomm.go)
// read the peers' partial sums through peer pointers (after the P2P
// self-test, p2p.go) or through mapped pinned host memory (host).
//
// Ranks sharing one GPU are home ranks unless RIGSCOPE_CUDA_RANKDEVS=each
// (Tuning.RankDevices) opens the GPU once per rank: then every rank but
// rank 0 takes the remote path on the one GPU, which is how the remote
// path is checked on a machine with one GPU (the difference left is only
// which context is current, and peer access).
type rankDev struct {
	dev    *Device
	remote bool
	step   cu.DevicePtr   // stepParams, copied before each step (exec)
	path   cu.DevicePtr   // (MaxTokens) int32: KeepPath's offsets
	attn   []dattn        // per layer: RoPE tables, window, scale (arch.go)
	logits cu.DevicePtr   // remote: (MaxTokens, vocab) float32, its ranks' vocab rows before the copy home
	bufs   []cu.DevicePtr // remote: freed with the target, in its context
}

// in runs f with rd's context current (the caller holds a context bound
// on a locked thread: the home one, or rd's when nested) and makes the
// context that was current current again.
func (t *Target) in(rd *rankDev, f func() error) error {
	if !rd.remote {
		return f()
	}
	was, err := cu.CurrentContext()
	if err != nil {
		return fmt.Errorf("cuda: current context: %w", err)
	}
	if err := cu.SetCurrentContext(rd.dev.ctx); err != nil {
		return fmt.Errorf("cuda: make context of GPU %d current: %w", rd.dev.Ordinal, err)
	}
	err = f()
	if e := cu.SetCurrentContext(was); e != nil && err == nil {
		err = fmt.Errorf("cuda: make the context current again after GPU %d: %w", rd.dev.Ordinal, e)
	}
	return err
}

// allocOn allocates n bytes on rd's GPU (its context current), freed with
// the target; the first error is kept in *err and later calls return 0.
func (t *Target) allocOn(rd *rankDev, err *error) func(int64) cu.DevicePtr {
	return func(n int64) cu.DevicePtr {
		if *err != nil {
			return 0
		}
		var p cu.DevicePtr
		e := t.in(rd, func() error {
			var e error
			p, e = cu.MemAlloc(n)
			return e
		})
		if e != nil {
			*err = fmt.Errorf("cuda: cuMemAlloc(%d bytes) on GPU %d for the run state: %w", n, rd.dev.Ordinal, e)
			return 0
		}
		if rd.remote {
			rd.bufs = append(rd.bufs, p)
		} else {
			t.bufs = append(t.bufs, p)
		}
		return p
	}
}

// anyRemote says whether a rank takes the remote path.
func (t *Target) anyRemote() bool {
	for _, R := range t.ranks {
		if R.rd.remote {
			return true
		}
	}
	return false
}

// remoteDevs lists the remote rankDevs once each.
func (t *Target) remoteDevs() []*rankDev {
	var out []*rankDev
	seen := map[*rankDev]bool{}
	for _, R := range t.ranks {
		if R.rd.remote && !seen[R.rd] {
			seen[R.rd] = true
			out = append(out, R.rd)
		}
	}
	return out
}

// initRemote gives every remote rankDev its copies of the shared buffers
// (after the home ones exist: the RoPE tables are uploaded again).
func (t *Target) initRemote(ms []*dmodel) error {
	for _, R := range t.ranks {
		rd := R.rd
		if !rd.remote || rd.step != 0 {
			continue
		}
		var err error
		alloc := t.allocOn(rd, &err)
		rd.step, rd.path = alloc(int64(stepBytes)), alloc(MaxTokens*4)
		rd.logits = alloc(MaxTokens * 4 * int64(t.cfg.Vocab))
		if err != nil {
			return err
		}
		if err := t.in(rd, func() error {
			var e error
			rd.attn, e = uploadAttention(ms[R.r], t.maxPos, alloc)
			return e
		}); err != nil {
			return fmt.Errorf("cuda: RoPE tables on GPU %d: %w", rd.dev.Ordinal, err)
		}
	}
	return nil
}

// freeRemote frees what the remote rankDevs hold (home context bound).
func (t *Target) freeRemote() {
	for _, rd := range t.remoteDevs() {
		t.in(rd, func() error {
			for _, p := range rd.bufs {
				cu.MemFree(p)
			}
			return nil
		})
		rd.bufs = nil
	}
}

// onRemote enqueues f for every remote rank on its stream, in its GPU's
// context, after the work queued on the target's stream so far, and makes
// the target's stream wait for it (copies between the host and a remote
// GPU run in that GPU's context, on its rank's stream).
func (t *Target) onRemote(f func(R *rankState) error) error {
	if !t.anyRemote() {
		return nil
	}
	if err := t.fork.Record(t.stream); err != nil {
		return fmt.Errorf("cuda: fork: %w", err)
	}
	for _, R := range t.ranks {
		if !R.rd.remote {
			continue
		}
		err := t.in(R.rd, func() error {
			if err := R.stream.Wait(t.fork, 0); err != nil {
				return err
			}
			if err := f(R); err != nil {
				return err
			}
			return R.done.Record(R.stream)
		})
		if err != nil {
			return fmt.Errorf("cuda: rank %d on GPU %d: %w", R.r, R.rd.dev.Ordinal, err)
		}
		if err := t.stream.Wait(R.done, 0); err != nil {
			return fmt.Errorf("cuda: join rank %d: %w", R.r, err)
		}
	}
	return nil
}

// firstOn says whether R is the first rank on its GPU (whose rank copies
// what the ranks there share).
func (t *Target) firstOn(R *rankState) bool {
	for _, Q := range t.ranks {
		if Q.rd == R.rd {
			return Q == R
		}
	}
	return false
}

// copyStepParams enqueues the step's parameters' copies to the remote
// GPUs (the home copy is exec's).
func (t *Target) copyStepParams() error {
	return t.onRemote(func(R *rankState) error {
		if !t.firstOn(R) {
			return nil
		}
		return cu.MemcpyHtoDAsync(R.rd.step, t.hstep.p, int64(stepBytes), R.stream)
	})
}

// outputRows is where rank R's output projection writes its vocab rows:
// the shared logits (home), or its GPU's logits (remote: logitsHome
// copies them to the shared logits).
func (t *Target) outputRows(R *rankState) cu.DevicePtr {
	if R.rd.remote {
		return R.rd.logits
	}
	return t.logits
}

// logitsHome enqueues, on R's stream, the copies of a remote rank's vocab
// rows [vocabLo, vocabLo+vocab) of rows logits rows to the shared logits.
func (t *Target) logitsHome(R *rankState, rows int) error {
	if !R.rd.remote {
		return nil
	}
	v := int64(t.cfg.Vocab)
	w := int64(R.dims.vocab) * 4
	for i := range int64(rows) {
		off := cu.DevicePtr(4 * (i*v + int64(R.dims.vocabLo)))
		if err := cu.MemcpyDtoDAsync(t.logits+off, R.rd.logits+off, w, t.ls); err != nil {
			return fmt.Errorf("cuda: rank %d's logits row %d to GPU %d: %w", R.r, i, t.dev.Ordinal, err)
		}
	}
	return nil
}

// rankDevices gives each rank its rankDev: ranks on the home GPU (devs[r]
// the same Device as devs[0]) share home; the others get one rankDev per
// Device.
func rankDevices(devs []*Device) []*rankDev {
	by := map[*Device]*rankDev{}
	out := make([]*rankDev, len(devs))
	for r, d := range devs {
		rd := by[d]
		if rd == nil {
			rd = &rankDev{dev: d, remote: d != devs[0]}
			by[d] = rd
		}
		out[r] = rd
	}
	return out
}

// openRanks opens each rank's GPU (ordinals gpus): once per distinct
// ordinal, or once per rank with each (RIGSCOPE_CUDA_RANKDEVS=each), and
// runs the P2P self-test between distinct GPUs; the placement carries its
// verdict (which backends need peer access: checkStepBackend).
func openRanks(gpus []int, each bool) ([]*Device, rankPlacement, error) {
	pl := rankPlacement{gpus: gpus}
	opened := map[int]*Device{}
	devs := make([]*Device, len(gpus))
	var distinct []*Device
	for r, g := range gpus {
		d := opened[g]
		if d == nil || each {
			var err error
			if d, err = Open(g); err != nil {
				return nil, pl, fmt.Errorf("cuda: GPU %d of rank %d: %w", g, r, err)
			}
			if opened[g] == nil {
				distinct = append(distinct, d)
			}
			opened[g] = d
		}
		devs[r] = d
	}
	if len(distinct) > 1 {
		rep, err := PeerTest(distinct)
		if err != nil {
			return nil, pl, fmt.Errorf("cuda: P2P self-test between GPUs %s: %w", joinInts(gpus), err)
		}
		pl.peer = rep.Failure()
	}
	return devs, pl, nil
}

// loadOn uploads every rank's shard ws[r] to its GPU devs[r] (rank 0's is
// the target's own) and makes the run state, the cache in format kv.
func loadOn(devs []*Device, pl rankPlacement, ws []*model.Weights, ctxLen int, kv kvFormat) (*Target, error) {
	home := devs[0]
	unbind, err := home.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	cfg := ws[0].Cfg
	if err := checkImplemented(cfg, len(ws)); err != nil {
		return nil, err
	}
	rds := rankDevices(devs)
	if err := checkFitsPerGPU(rds, cfg, ctxLen, kv, func(r int) int64 { return modelBytes(ws[r]) }); err != nil {
		return nil, err
	}
	dims := make([]shardDims, len(ws))
	ms := make([]*dmodel, 0, len(ws))
	free := func() {
		for r, m := range ms {
			inCtx(rds[r], home, func() error { m.free(); return nil })
		}
	}
	for r, w := range ws {
		if err := checkTypes(w); err != nil {
			return nil, err
		}
		dims[r] = weightDims(w)
		var m *dmodel
		err := inCtx(rds[r], home, func() error {
			var e error
			m, e = uploadModel(w)
			return e
		})
		if err != nil {
			free()
			return nil, fmt.Errorf("cuda: rank %d's weights to GPU %d: %w", r, devs[r].Ordinal, err)
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

// inCtx is Target.in before there is a target.
func inCtx(rd *rankDev, home *Device, f func() error) error {
	t := &Target{launcher: launcher{dev: home}}
	return t.in(rd, f)
}

// checkFitsPerGPU checks each GPU's share: the weights of its ranks
// (weights(r)) and their run state.
func checkFitsPerGPU(rds []*rankDev, cfg model.Config, ctxLen int, kv kvFormat, weights func(r int) int64) error {
	type share struct {
		ranks   int
		weights int64
	}
	per := map[int]*share{} // by GPU ordinal (RANKDEVS=each opens one GPU as several Devices)
	var order []*rankDev
	for r, rd := range rds {
		g := rd.dev.Ordinal
		if per[g] == nil {
			per[g] = &share{}
			order = append(order, rd)
		}
		per[g].ranks++
		per[g].weights += weights(r)
	}
	home := rds[0].dev
	for _, rd := range order {
		s := per[rd.dev.Ordinal]
		need := stateBytes(cfg, ctxLen, rd.dev.SMs, len(rds), kv)
		need.kv = need.kv * int64(s.ranks) / int64(len(rds)) // a GPU holds its ranks' caches (the rest of the state is counted whole: an upper bound)
		need.weights = s.weights
		if err := inCtx(rd, home, func() error { return rd.dev.checkFits(need, cfg) }); err != nil {
			return fmt.Errorf("cuda: GPU %d (%d of %d ranks): %w", rd.dev.Ordinal, s.ranks, len(rds), err)
		}
	}
	return nil
}

func devsOf(rds []*rankDev) []*Device {
	out := make([]*Device, len(rds))
	for i, rd := range rds {
		out[i] = rd.dev
	}
	return out
}

// rankFailures names the remote GPUs whose context reports an error after
// a failed step (the step is one graph across the ranks' GPUs, so every
// rank has stopped when its synchronize returns): "" when none does.
func (t *Target) rankFailures() string {
	var s string
	for _, R := range t.ranks {
		if !R.rd.remote {
			continue
		}
		if err := t.in(R.rd, func() error { return R.stream.Synchronize() }); err != nil {
			s += fmt.Sprintf("; rank %d on GPU %d: %v", R.r, R.rd.dev.Ordinal, err)
		}
	}
	return s
}
