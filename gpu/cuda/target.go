//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
)

// stepParams mirrors struct Step in kernels.cu (208 bytes).
type stepParams struct {
	Base   int32
	T      int32
	Temp   float32
	Seed   uint32
	Tokens [MaxTokens]int32
	Pos    [MaxTokens]int32
	Mask   [MaxTokens]uint32
}

const stepBytes = int(unsafe.Sizeof(stepParams{}))

func mathFloat32bits(f float32) uint32 { return math.Float32bits(f) }
func sqrtf(x float64) float64          { return math.Sqrt(x) }

func (d *Device) newStream0() cu.Stream {
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return cu.Stream{}
	}
	return s
}

// Target is a model on one GPU (spec.FeatureTarget), split over one or
// more tensor-parallel ranks that share it: a graph per (tokens, logits
// mode, capture set) captured on first use and replayed after.
type Target struct {
	launcher
	ranks []*rankState
	cfg   model.Config

	slots  int
	ap     attnPlan // the attention's blocks and chunks (attnplan.go)
	maxPos int
	kv     kvFormat // the KV caches' element type (kvformat.go)

	place       rankPlacement // each rank's GPU and the P2P verdict (placement.go, rankdev.go)
	multiStream bool          // TP > 1 ranks on their own streams (rankStreams)
	failRank    int           // cuda-check: rank failRank-1's phases fail (a rank failing mid-step); 0: none
	fork        cu.Event      // recorded on stream where the ranks' phases fork

	// device buffers
	x             cu.DevicePtr // (MaxTokens, dim) float32: rank 0's activations (each rank has its copy)
	comm          *stepComm    // TP > 1: the ranks' allreduce (stepcomm.go)
	logits        cu.DevicePtr // (MaxTokens, vocab) float32
	ids           cu.DevicePtr // (MaxTokens) int32
	step          cu.DevicePtr // stepParams
	pm, pl, pacc  cu.DevicePtr // attention partials (hk, G*MaxTokens, ap.cols()[, hd]), sliced per rank
	attnCnt       cu.DevicePtr // (hk, attnRowGroups) uint32 finished splits, zero between launches, sliced per rank
	amPart, amCnt cu.DevicePtr // argmax partials (MaxTokens, argmaxBlocks) float2 and row counters
	path          cu.DevicePtr // (MaxTokens) int32
	bufs          []cu.DevicePtr
	attn          []dattn        // per layer: RoPE tables (maxPos, hd/2), sliding window, score scale (arch.go)
	postSum       []cu.DevicePtr // Gemma 3 at TP > 1: per rank (MaxTokens, dim), zero between steps (joinRanks)

	hstep   pinned // stepParams
	ring    pinned // (2) int32 mapped: a one-token step's argmax at [base & 1] (argmax_next; ahead.go)
	ringDev cu.DevicePtr
	hids    pinned      // (MaxTokens) int32 mapped: the rows' ids as the argmax writes them (t.ids is its device address: no copy back)
	hlogits pinned      // (MaxTokens, vocab) float32
	out     []float32   // (rows, vocab) logits of the last forward
	outIDs  []int32     // (rows) token ids of the last ForwardIDs
	smp     *sampleStep // while SampleIDs runs a step: its rows are sampled in exec (sample.go)
	ahead   aheadState  // greedy steps enqueued ahead (ahead.go)
	cyc     cycleState  // speculative steps kept on the device (cycle.go)

	graphs    map[graphKey]*graph
	cap       featureCapture // hidden states copied out for EAGLE-3 (capture.go)
	UseGraphs bool           // replay captured graphs (default true); false launches each kernel
	Temp      float32
	Seed      uint32
	timer     *stepTimer   // device time per step, while cuda-bench asks (TimeSteps)
	pf        prefillState // the prefill path for long prompt chains (prefill.go)
	st        stepState    // the step being enqueued (step_ops.go)
	n         int          // cached positions
}

// NewTarget loads src for the spec.Target behind --device cuda, split over
// tp ranks placed by gpus (placeRanks); the ranks' allreduce is chosen per
// run with SetAllReduce.
func NewTarget(src loader.Source, tp int, gpus []int, ctxLen int) (spec.Target, error) {
	if err := checkImplemented(src.Config(), max(1, tp)); err != nil {
		return nil, err
	}
	n, err := Count()
	if err != nil {
		return nil, err
	}
	ords, err := placeRanks(max(1, tp), gpus, n)
	if err != nil {
		return nil, err
	}
	tune, err := CurrentTuning()
	if err != nil {
		return nil, err
	}
	devs, pl, err := openRanks(ords, tune.RankDevices)
	if err != nil {
		return nil, err
	}
	ws := make([]*model.Weights, max(1, tp))
	for r := range ws {
		if ws[r], err = model.LoadWeights(src, model.Shard{Rank: r, Size: len(ws)}); err != nil {
			return nil, err
		}
	}
	return loadOn(devs, pl, ws, ctxLen, tune.KV)
}

// Load uploads w to d with a cache of ctxLen positions. Device memory is
// checked first and the numbers are given when it does not fit.
func Load(d *Device, w *model.Weights, ctxLen int) (*Target, error) {
	return LoadTP(d, []*model.Weights{w}, ctxLen)
}

// LoadSynthetic builds a bf16 model of cfg's shape on the device itself.
func LoadSynthetic(d *Device, cfg model.Config, ctxLen int, seed uint32) (*Target, error) {
	return LoadSyntheticTP(d, cfg, 1, ctxLen, seed)
}

// attnRowGroups is the most row groups (grid z) the attention kernel uses:
// query rows (G*T) per KV head in blocks of at least attnMinRows.
func attnRowGroups(cfg model.Config) int {
	return (cfg.Heads/cfg.KVHeads*MaxTokens + attnMinRows - 1) / attnMinRows
}

// xfBytes is an activation of MaxTokens rows of k floats split for the
// tensor cores (store_xf): 512 bytes per 16 k per group of 8 rows.
func xfBytes(k int) int64 { return int64((MaxTokens+7)/8) * int64((k+15)/16) * 512 }

// newTargetOn is newTarget with each rank's GPU rds[r] (rank 0's is home,
// whose context is bound): each rank's buffers are allocated on its GPU.
func newTargetOn(rds []*rankDev, ms []*dmodel, dims []shardDims, ctxLen int, kv kvFormat) (*Target, error) {
	c := ms[0].cfg
	d := rds[0].dev
	if c.MLA.Enabled() { // the latent cache is float32 (mla.cu)
		kv = kvF32
	}
	t := &Target{launcher: launcher{dev: d, eps: c.NormEps, gelu: c.Gemma.On}, cfg: c, kv: kv, graphs: map[graphKey]*graph{}, UseGraphs: true}
	var err error
	if t.tune, err = CurrentTuning(); err != nil {
		return nil, err
	}
	t.pdl = d.Major >= 9 && t.tune.PDL
	t.slots = ctxLen + MaxTokens
	t.ap = newAttnPlan(c, t.slots, d.SMs, t.tune)
	t.maxPos = t.slots + 64
	switch {
	case c.MLA.Enabled(): // mla_attend, not the attention kernel (an even rope dim: mlaMissing)
	case c.HeadDim == 16, c.HeadDim == 32, c.HeadDim == 64, c.HeadDim == 128, c.HeadDim == 256:
	default:
		return nil, fmt.Errorf("cuda: head dim %d is not supported by the attention kernel (16, 32, 64, 128 or 256); run this model with --device cpu", c.HeadDim)
	}
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return nil, fmt.Errorf("cuda: %d query heads are not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	if t.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return nil, fmt.Errorf("cuda: create stream: %w", err)
	}
	t.ls = t.stream
	alloc := func(n int64) cu.DevicePtr {
		if err != nil {
			return 0
		}
		var p cu.DevicePtr
		if p, err = cu.MemAlloc(n); err != nil {
			err = fmt.Errorf("cuda: cuMemAlloc(%d bytes) for the run state: %w", n, err)
			return 0
		}
		t.bufs = append(t.bufs, p)
		return p
	}
	const T = MaxTokens
	hd, hq := c.HeadDim, c.Heads
	t.x = alloc(T * 4 * int64(c.Dim))
	for r, m := range ms {
		R := &rankState{m: m, dims: dims[r], r: r, x: t.x, rd: rds[r]}
		alloc := t.allocOn(R.rd, &err) // on the rank's GPU
		if r > 0 {
			R.x = alloc(T * 4 * int64(c.Dim))
		}
		R.nqkv = (R.dims.hq + 2*R.dims.hk) * hd
		R.kvw = R.dims.hk * hd
		vd := hd // an output head's width
		if a := c.MLA; a.Enabled() {
			// One latent cache (r + rope per slot), replicated on every
			// rank; vc is kc, so KeepPath's kv_keep moves each slot twice,
			// the same copy (mla.go).
			R.kvw, vd = a.KVRank+a.RopeDim, a.VDim
		}
		R.qkv = alloc(T * 4 * int64(R.nqkv))
		R.att = alloc(T * 4 * int64(R.dims.hq*vd))
		R.hbuf = alloc(T * 4 * int64(R.dims.ffn))
		R.attXF, R.hXF = alloc(xfBytes(R.dims.hq*hd)), alloc(xfBytes(R.dims.ffn))
		R.kc = alloc(int64(kv.elemBytes()) * int64(c.Layers) * int64(t.slots) * int64(R.kvw))
		if c.MLA.Enabled() {
			R.vc = R.kc
		} else {
			R.vc = alloc(int64(kv.elemBytes()) * int64(c.Layers) * int64(t.slots) * int64(R.kvw))
		}
		if len(ms) > 1 || c.Gemma.On { // TP > 1: partial sums; Gemma 3: outputs for the post-norms (arch.go)
			R.part = alloc(T * 4 * int64(c.Dim))
		}
		t.ranks = append(t.ranks, R)
	}
	if len(ms) > 1 && err == nil {
		t.comm, err = t.newStepComm()
	}
	t.logits = alloc(T * 4 * int64(c.Vocab))
	t.step = alloc(int64(stepBytes))
	t.pm = alloc(T * 4 * int64(hq*t.ap.cols()))
	t.pl = alloc(T * 4 * int64(hq*t.ap.cols()))
	t.pacc = alloc(T * 4 * int64(hq*t.ap.cols()*hd))
	t.path = alloc(T * 4)
	nCnt := int64(c.KVHeads * attnRowGroups(c))
	if t.attnCnt = alloc(4 * nCnt); err == nil {
		err = cu.MemsetD32(t.attnCnt, 0, nCnt)
	}
	if err == nil {
		err = t.sliceAttnScratch()
	}
	if err == nil && len(ms) > 1 && rankStreams() {
		err = t.makeRankStreams()
	}
	if err == nil && t.anyRemote() && !t.multiStream {
		err = fmt.Errorf("cuda: ranks on other GPUs (%s) run on their own streams; RIGSCOPE_CUDA_RANKSTREAMS=0 is for ranks sharing one GPU", joinInts(ordinalsOf(devsOf(rds))))
	}
	t.amPart = alloc(T * argmaxBlocks * 8)
	if t.amCnt = alloc(4 * T); err == nil {
		err = cu.MemsetD32(t.amCnt, 0, T)
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	if t.attn, err = uploadAttention(ms[0], t.maxPos, alloc); err == nil {
		rds[0].step, rds[0].path, rds[0].attn = t.step, t.path, t.attn
		err = t.initRemote(ms) // rankdev.go
	}
	if err == nil {
		err = t.allocPostSums()
	}
	if err == nil {
		err = t.allocMoE() // moe.go
	}
	if err == nil {
		err = t.allocMLA() // mla.go
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	// Host buffers; ring and hids are mapped: the argmax kernels write them.
	if t.ring, err = allocMapped(8); err == nil {
		t.ringDev, err = t.ring.devicePtr()
	}
	if err == nil {
		t.hstep, err = allocPinned(stepBytes)
	}
	if err == nil {
		if t.hids, err = allocMapped(T * 4); err == nil {
			t.ids, err = t.hids.devicePtr()
		}
	}
	if err == nil {
		t.hlogits, err = allocPinned(T * 4 * c.Vocab)
	}
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("cuda: host buffers: %w", err)
	}
	t.out = make([]float32, T*c.Vocab)
	if err := t.initPrefill(); err != nil {
		t.Close()
		return nil, err
	}
	// cuMemcpyHtoD from pageable memory (the weights, tables) may return
	// before its last bytes land; the steps run on non-blocking streams,
	// which do not wait for it: every rank's context finishes its uploads.
	for _, R := range t.ranks {
		if err := t.in(R.rd, cu.Synchronize); err != nil {
			t.Close()
			return nil, fmt.Errorf("cuda: finish the uploads to GPU %d: %w", R.rd.dev.Ordinal, err)
		}
	}
	return t, nil
}

// Close frees everything the target holds on the device.
func (t *Target) Close() error {
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	derr := t.dropAhead() // they use the buffers freed below
	t.dropGraphs()
	t.graphs = nil
	for _, p := range t.bufs {
		cu.MemFree(p)
	}
	t.bufs = nil
	if t.comm != nil {
		t.comm.free()
		t.comm = nil
	}
	for i := range t.ahead.slots {
		t.ahead.slots[i].free()
	}
	t.freeCycle()
	t.ring.free()
	t.ring, t.ringDev = pinned{}, 0
	t.hstep.free()
	t.hids.free()
	t.hlogits.free()
	t.cap.host.free()
	t.pf.host.free()
	t.pf.feats.free()
	t.pf = prefillState{}
	t.hstep, t.hids, t.hlogits = pinned{}, pinned{}, pinned{}
	t.cap.host, t.cap.dev = pinned{}, 0
	t.closeRankStreams()
	t.freeRemote()
	for _, R := range t.ranks {
		t.in(R.rd, func() error { R.m.free(); return nil })
	}
	t.ranks = nil
	t.stream.Destroy()
	return derr
}

func (t *Target) Len() int    { return t.n }
func (t *Target) Vocab() int  { return t.cfg.Vocab }
func (t *Target) MaxLen() int { return t.slots - MaxTokens }

// Device is the GPU the target runs on.
func (t *Target) Device() *Device { return t.dev }

// WeightBytes is what one decode step reads from the weights.
func (t *Target) WeightBytes() int64 {
	var n int64
	for _, R := range t.ranks {
		n += R.m.weightBytes()
	}
	return n
}

// TP is the number of tensor-parallel ranks (sharing the GPU).
func (t *Target) TP() int { return len(t.ranks) }

func (t *Target) Rewind(n int) error {
	if err := t.dropAhead(); err != nil {
		return err
	}
	if n < 0 || n > t.n {
		return fmt.Errorf("cuda: kv cache: rewind to %d outside [0, %d]", n, t.n)
	}
	t.n = n
	return nil
}

// KeepPath keeps the slots base+path[j] as base+j (after tree verification).
func (t *Target) KeepPath(base int, path []int) error {
	if err := t.dropAhead(); err != nil {
		return err
	}
	if base < 0 || base > t.n || len(path) > MaxTokens {
		return fmt.Errorf("cuda: kv cache: keep %d slots after base %d of %d", len(path), base, t.n)
	}
	p := t.hids.ints()
	for j, off := range path {
		if base+off >= t.n || off < j || j > 0 && off <= path[j-1] {
			return fmt.Errorf("cuda: kv cache: path %v does not fit %d slots after %d", path, t.n-base, base)
		}
		p[j] = int32(off)
	}
	unbind, err := t.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	if len(path) > 0 {
		if err := cu.MemcpyHtoDAsync(t.path, t.hids.p, int64(4*len(path)), t.stream); err != nil {
			return fmt.Errorf("cuda: kv keep: %w", err)
		}
		err := t.onRemote(func(R *rankState) error { // rankdev.go
			if !t.firstOn(R) {
				return nil
			}
			return cu.MemcpyHtoDAsync(R.rd.path, t.hids.p, int64(4*len(path)), R.stream)
		})
		if err != nil {
			return fmt.Errorf("cuda: kv keep: %w", err)
		}
		err = t.onRanks(func(R *rankState) error {
			return t.kernel("kv_keep", 0, "kv_keep", [3]int{t.cfg.Layers, 1, 1}, [3]int{256, 1, 1},
				ptr(R.kc), ptr(R.vc), i64(t.slots), i32(R.kvw*t.kv.elemBytes()/4), i32(base), ptr(R.rd.path), i32(len(path))) // width in 32-bit words
		})
		if err != nil {
			return err
		}
		if err := t.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: kv keep: %w", err)
		}
	}
	t.n = base + len(path)
	return nil
}

// layerCache is where layer l's K and V caches of rank R start: (slots,
// kvw) each, in t.kv's format.
func (t *Target) layerCache(R *rankState, l int) (kc, vc cu.DevicePtr) {
	layer := cu.DevicePtr(t.kv.elemBytes() * t.slots * R.kvw)
	return R.kc + cu.DevicePtr(l)*layer, R.vc + cu.DevicePtr(l)*layer
}

// KVFormat names the KV cache's element type ("float32" or "bf16").
func (t *Target) KVFormat() string { return t.kv.String() }
