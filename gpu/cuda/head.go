//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor"
)

// Head is an EAGLE-3 head on the GPU (eagle3.ChainRunner). Its decoder
// layer is the target's layer run through the same kernels and launch
// policy (launcher): qkv over cat(input_layernorm(embed(tok)),
// hidden_norm(h)) (eagle_in builds that input), attention with RoPE and the
// cache store, wo added into the residual stream, the gated MLP with the
// post-attention norm fused, down added; then lm_head with the final norm,
// argmax with the draft-to-target id map (argmax_d2t), which also feeds
// the token to the next draft step. A greedy chain (the last extended rows
// and k-1 draft steps) is one CUDA graph per (rows, k) and copies back k
// token ids. Trees and sampled chains run through the same layer
// (head_tree.go). The CPU head (eagle3's runState) is its specification.
type Head struct {
	launcher
	cfg  eagle3.Config
	mcfg model.Config // the layer's shape as the attention launch and model.Layers read it: one Llama layer
	m    dmodel       // weight allocations

	emb, fc, qkv, wo, gate, up, down, lm    dweight
	inNorm, hidNorm, postNorm, outNorm, d2t cu.DevicePtr // f32 (dim) norms; d2t int32 (draftVocab)

	slots, maxPos, kvw, nqkv, fw int
	ap                           attnPlan // the attention's blocks and chunks, as a target's (attnplan.go)
	kv                           kvFormat // the cache's element type, as the target's (Tuning.KV)

	// run state, sized for MaxTokens rows
	feats  cu.DevicePtr // (MaxTokens, fw) float32 target features of the rows (after steps)
	res    cu.DevicePtr // (MaxTokens, dim) residual stream: the hidden input, then the layer's output
	cat    cu.DevicePtr // (MaxTokens, 2*dim) the layer's input
	qkvb   cu.DevicePtr // (MaxTokens, nqkv)
	att    cu.DevicePtr // (MaxTokens, H*hd)
	hbuf   cu.DevicePtr // (MaxTokens, ffn)
	logits cu.DevicePtr // (1, draftVocab)
	ids    cu.DevicePtr // (1) int32 draft argmax
	out    cu.DevicePtr // (spec.MaxK) int32 drafted target ids: hout's device address (mapped host memory, no copy back)
	kc, vc cu.DevicePtr // (slots, kvw) in format kv
	steps  cu.DevicePtr // (spec.MaxK) Step: 0 = the extended rows, i = draft step i; feats follow

	pm, pl, pacc, attnCnt, amPart, amCnt cu.DevicePtr
	hoPart, hoCnt                        cu.DevicePtr // the fused draft token's argmax (draftOut): a float2 per block of 16 rows, its counter
	ropeCos, ropeSin                     cu.DevicePtr
	bufs                                 []cu.DevicePtr

	hsteps, hout pinned                   // (MaxK) Step then (MaxTokens, fw) features, as steps; (MaxK) int32
	graphs       map[[2]int]*graph        // by (rows, tokens)
	cgraphs      map[cycleGraphKey]*graph // a target's speculative cycle's chains (cycle.go)
	acc          cu.DevicePtr             // int32: the drafts the cycle's verify accepted (argmax_accept, copy_row)
	id           uint64                   // this head among the process's (a target's cycle graphs are keyed by it)
	done         cu.Event                 // recorded after a chain left on the device (EnqueueChain)
	pend         headChain                // that chain, as the target's verify reads it
	inflight     bool                     // it may still run: its inputs' pinned copy is not to be overwritten yet

	lres  cu.DevicePtr // the layer being enqueued: its residual stream (T, dim)
	lstep int          // and its step parameters' index (dstep)
	lrow0 int          // and its first row in the attention's batch (a tree depth's first node; 0: the batch is the layer's rows)

	// trees and sampled chains (head_tree.go)
	src  *eagle3.Head // the host weights (embD is gathered from them when first needed)
	tres cu.DevicePtr // (1+MaxTokens, dim) a tree's root output, then its nodes' residual streams
	sids cu.DevicePtr // (spec.MaxK) int32 a sampled chain's draft ids
	hlog pinned       // (MaxTokens, draftVocab) float32: a depth's logits or a sampled chain's q, copied back
	embD dweight      // (draftVocab, dim) the embedding's rows of the draft vocabulary, by draft id
	hasD bool         // embD is uploaded
}

var _ eagle3.ChainRunner = (*Head)(nil)

// headIDs numbers the heads a process loads (Head.id).
var headIDs atomic.Uint64

// headOutMaxDim is the widest head whose greedy chains draft each token in
// one kernel by default (Tuning.HeadOut, draftOut). Measured on the H200
// (bench/cuda/results/s17/f, the headout lines): the gocoder head (width
// 512) 23.5 us a draft step against 25.1 in two processes, tokens and
// logits bitwise the two-kernel path's over 2000 chains; the 8B-shaped
// head (4096) 209.3 against 201.3 in one process and equal in the other.
const headOutMaxDim = 1024

// NewHead uploads h to GPU 0 with a cache of slots positions (the
// engine's DeviceHead for "cuda").
func NewHead(h *eagle3.Head, slots int) (eagle3.ChainRunner, error) {
	d, err := Open(0)
	if err != nil {
		return nil, err
	}
	return LoadHead(d, h, slots)
}

// LoadHead uploads h to d with a cache of slots positions.
func LoadHead(d *Device, h *eagle3.Head, slots int) (*Head, error) {
	c := h.Cfg
	tune, err := CurrentTuning()
	if err != nil {
		return nil, err
	}
	switch c.HeadDim {
	case 16, 32, 64, 128, 256:
	default:
		return nil, fmt.Errorf("cuda: EAGLE-3 head dim %d is not supported by the attention kernel (16, 32, 64, 128 or 256)", c.HeadDim)
	}
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return nil, fmt.Errorf("cuda: EAGLE-3 head: %d query heads are not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	if c.Dim%32 != 0 {
		return nil, fmt.Errorf("cuda: EAGLE-3 head width %d is not a multiple of 32", c.Dim)
	}
	unbind, err := d.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	hd := &Head{
		launcher: launcher{dev: d, tune: tune, pdl: d.Major >= 9 && tune.PDL, eps: c.NormEps},
		cfg:      c,
		mcfg:     model.Config{Layers: 1, Dim: c.Dim, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, FFN: c.FFN, NormEps: c.NormEps, RopeTheta: c.RopeTheta, RopeScaling: c.RopeScaling},
		slots:    slots,
		maxPos:   slots + 64,
		kvw:      c.KVHeads * c.HeadDim,
		nqkv:     (c.Heads + 2*c.KVHeads) * c.HeadDim,
		fw:       eagle3.NumAux * c.TargetDim,
		kv:       tune.KV,
		graphs:   map[[2]int]*graph{},
		src:      h,
		id:       headIDs.Add(1),
	}
	if tune.HeadOutAuto {
		hd.tune.HeadOut = c.Dim <= headOutMaxDim
	}
	hd.ap = newAttnPlan(hd.mcfg, slots, d.SMs, tune)
	if err := hd.upload(h); err != nil {
		hd.Close()
		return nil, err
	}
	if err := hd.allocState(); err != nil {
		hd.Close()
		return nil, err
	}
	if err := cu.Synchronize(); err != nil { // the pageable uploads have landed (as the target's, newTargetOn)
		hd.Close()
		return nil, fmt.Errorf("cuda: finish the EAGLE-3 head's uploads: %w", err)
	}
	return hd, nil
}

// upload copies the head's weights (tiled for the tensor cores where the
// target's would be).
func (h *Head) upload(w *eagle3.Head) error {
	m := &h.m
	var err error
	up := func(dst *dweight, tile bool, ts ...*tensor.Tensor) {
		if err == nil {
			*dst, err = m.uploadStacked(tile, "", ts...)
		}
	}
	vec := func(dst *cu.DevicePtr, v []float32) {
		if err == nil {
			*dst, err = m.uploadVec(v)
		}
	}
	up(&h.emb, false, w.Embed)
	up(&h.fc, true, w.FC)
	up(&h.qkv, true, w.Wq, w.Wk, w.Wv)
	up(&h.wo, true, w.Wo)
	up(&h.gate, true, w.Gate)
	up(&h.up, true, w.Up)
	up(&h.down, true, w.Down)
	up(&h.lm, outputOnTensorCores(), w.LMHead)
	vec(&h.inNorm, w.InputNorm)
	vec(&h.hidNorm, w.HiddenNorm)
	vec(&h.postNorm, w.PostNorm)
	vec(&h.outNorm, w.OutNorm)
	if err != nil {
		return fmt.Errorf("cuda: EAGLE-3 head: %w", err)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w.DraftToTarget[0])), 4*len(w.DraftToTarget))
	if h.d2t, err = m.upload(b); err != nil {
		return fmt.Errorf("cuda: EAGLE-3 head: %w", err)
	}
	return nil
}

// allocState allocates the run state and uploads the RoPE table.
func (h *Head) allocState() error {
	c := h.cfg
	var err error
	alloc := func(n int64) cu.DevicePtr {
		if err != nil {
			return 0
		}
		var p cu.DevicePtr
		if p, err = cu.MemAlloc(n); err != nil {
			err = fmt.Errorf("cuda: cuMemAlloc(%d bytes) for the EAGLE-3 head: %w", n, err)
			return 0
		}
		h.bufs = append(h.bufs, p)
		return p
	}
	const T = MaxTokens
	hd, hq := c.HeadDim, c.Heads
	if h.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return fmt.Errorf("cuda: create stream: %w", err)
	}
	h.ls = h.stream
	h.res = alloc(T * 4 * int64(c.Dim))
	h.cat = alloc(T * 4 * int64(2*c.Dim))
	h.qkvb = alloc(T * 4 * int64(h.nqkv))
	h.att = alloc(T * 4 * int64(hq*hd))
	h.hbuf = alloc(T * 4 * int64(c.FFN))
	h.logits = alloc(T * 4 * int64(c.DraftVocab)) // (MaxTokens, draftVocab): a tree depth's or a sampled chain's rows
	h.tres = alloc((T + 1) * 4 * int64(c.Dim))
	h.sids = alloc(4 * spec.MaxK)
	h.ids = alloc(4)
	h.acc = alloc(4)
	h.kc = alloc(int64(h.kv.elemBytes()) * int64(h.slots) * int64(h.kvw))
	h.vc = alloc(int64(h.kv.elemBytes()) * int64(h.slots) * int64(h.kvw))
	// One buffer for the step parameters and the features, so that a chain
	// uploads its inputs with one copy.
	h.steps = alloc(int64(spec.MaxK*stepBytes) + T*4*int64(h.fw))
	h.feats = h.steps + cu.DevicePtr(spec.MaxK*stepBytes)
	h.pm = alloc(T * 4 * int64(hq*h.ap.cols()))
	h.pl = alloc(T * 4 * int64(hq*h.ap.cols()))
	h.pacc = alloc(T * 4 * int64(hq*h.ap.cols()*hd))
	h.ropeCos = alloc(4 * int64(h.maxPos*hd/2))
	h.ropeSin = alloc(4 * int64(h.maxPos*hd/2))
	nCnt := int64(c.KVHeads * attnRowGroups(h.mcfg))
	if h.attnCnt = alloc(4 * nCnt); err == nil {
		err = cu.MemsetD32(h.attnCnt, 0, nCnt)
	}
	h.amPart = alloc(argmaxBlocks * 8)
	if h.amCnt = alloc(4); err == nil {
		err = cu.MemsetD32(h.amCnt, 0, 1)
	}
	h.hoPart = alloc(8 * int64((c.DraftVocab+15)/16))
	if h.hoCnt = alloc(4); err == nil {
		err = cu.MemsetD32(h.hoCnt, 0, 1)
	}
	if err != nil {
		return err
	}
	cs, sn := c.Rope(h.maxPos).Tables(h.maxPos) // the CPU head's table, scaled as its config says
	if err := uploadTables(h.ropeCos, h.ropeSin, cs, sn); err != nil {
		return err
	}
	if h.hsteps, err = allocPinned(spec.MaxK*stepBytes + T*4*h.fw); err == nil {
		h.hout, err = allocMapped(4 * spec.MaxK)
	}
	if err == nil {
		h.out, err = h.hout.devicePtr()
	}
	if err == nil {
		h.hlog, err = allocPinned(T * 4 * c.DraftVocab)
	}
	if err == nil {
		if h.done, err = cu.MakeEvent(cu.DisableTiming); err != nil {
			err = fmt.Errorf("cuda: EAGLE-3 head event: %w", err)
		}
	}
	return err
}

// Close frees everything the head holds on the device.
func (h *Head) Close() error {
	unbind, err := h.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	for _, g := range h.graphs {
		g.destroy()
	}
	for _, g := range h.cgraphs {
		g.destroy()
	}
	h.graphs, h.cgraphs = nil, nil
	for _, p := range h.bufs {
		cu.MemFree(p)
	}
	h.bufs = nil
	h.hsteps.free()
	h.hout.free()
	h.hlog.free()
	h.hsteps, h.hout, h.hlog = pinned{}, pinned{}, pinned{}
	if h.done != (cu.Event{}) {
		cu.DestroyEvent(&h.done)
		h.done = cu.Event{}
	}
	h.m.free()
	if h.stream != (cu.Stream{}) {
		h.stream.Destroy()
		h.stream = cu.Stream{}
	}
	return nil
}

// hstep is pinned step i's parameters.
func (h *Head) hstep(i int) *stepParams {
	return (*stepParams)(unsafe.Add(h.hsteps.p, i*stepBytes))
}

// dstep is device step i's parameters.
func (h *Head) dstep(i int) cu.DevicePtr { return h.steps + cu.DevicePtr(i*stepBytes) }

// GreedyChain implements eagle3.ChainRunner. Rows beyond MaxTokens (the
// first chain after a prompt the drafter did not extend when observed) go
// through in graphed chunks of MaxTokens first; the last chunk and the k-1
// draft steps are one graph.
func (h *Head) GreedyChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) ([]int32, error) {
	if k < 1 || k > spec.MaxK {
		return nil, fmt.Errorf("cuda: EAGLE-3 chain of %d rows and %d tokens", len(tokens), k)
	}
	if err := h.rows(ctx, first, tokens, feats, k, false); err != nil {
		return nil, err
	}
	return h.hout.ints()[:k], nil
}

// headChain is a chain EnqueueChain left on the device: k target ids at
// out, written when done is reached on the head's stream.
type headChain struct {
	h *Head
	k int
}

func (c *headChain) Len() int { return c.k }

// EnqueueChain implements eagle3.PendingRunner: GreedyChain without the
// copy back and the synchronize; the target's VerifyChain waits for the
// chain on the device and reads its tokens there. Nil (GreedyChain runs
// it instead) when the tuning turns it off (RIGSCOPE_CUDA_EAGLEPIPE=0).
func (h *Head) EnqueueChain(ctx context.Context, first int, tokens []int32, feats []float32, k int) (spec.PendingChain, error) {
	if !h.tune.EaglePipe {
		return nil, nil
	}
	if k < 1 || k > spec.MaxK {
		return nil, fmt.Errorf("cuda: EAGLE-3 chain of %d rows and %d tokens", len(tokens), k)
	}
	if err := h.rows(ctx, first, tokens, feats, k, true); err != nil {
		return nil, err
	}
	h.pend, h.inflight = headChain{h: h, k: k}, true
	return &h.pend, nil
}

// Extend implements eagle3.ChainRunner: the extended rows only (a prompt's
// catch-up, run as prefill work), in graphed chunks of MaxTokens.
func (h *Head) Extend(ctx context.Context, first int, tokens []int32, feats []float32) error {
	return h.rows(ctx, first, tokens, feats, 0, false)
}

// rows writes the extended rows first.. and, with k > 0, drafts k tokens
// after the last one: into hout, or with pending left at out, the last
// chunk not waited for (done is recorded after it).
func (h *Head) rows(ctx context.Context, first int, tokens []int32, feats []float32, k int, pending bool) error {
	n := len(tokens)
	switch {
	case n == 0 || k < 0 || k > spec.MaxK:
		return fmt.Errorf("cuda: EAGLE-3 chain of %d rows and %d tokens", n, k)
	case len(feats) < n*h.fw:
		return fmt.Errorf("cuda: EAGLE-3 chain: %d feature floats for %d rows of %d", len(feats), n, h.fw)
	case first < 0 || first+n+max(k-1, 0) > h.slots:
		return fmt.Errorf("cuda: EAGLE-3 chain at %d of %d rows and %d tokens exceeds the head's cache of %d", first, n, k, h.slots)
	}
	for _, id := range tokens {
		if id < 0 || int(id) >= h.cfg.Vocab {
			return fmt.Errorf("cuda: EAGLE-3 chain: token id %d outside the vocabulary of %d", id, h.cfg.Vocab)
		}
	}
	unbind, err := h.dev.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	for lo := 0; lo < n; lo += MaxTokens {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(n, lo+MaxTokens)
		if err := h.chunk(first+lo, tokens[lo:hi], feats[lo*h.fw:hi*h.fw], hi == n, k, pending && hi == n); err != nil {
			return err
		}
	}
	return nil
}

// chunk runs rows at slot base (at most MaxTokens) and, when last, the k
// draft tokens after them, and waits for it; pending: records done
// instead (the tokens stay at out; the pinned inputs are not reused
// before the target's verify has waited for done and synchronized).
func (h *Head) chunk(base int, tokens []int32, feats []float32, last bool, k int, pending bool) error {
	if h.inflight { // a chain left on the device that no verify waited for
		if err := h.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: EAGLE-3 chain: %w", err)
		}
		h.inflight = false
	}
	T := len(tokens)
	st := h.hstep(0)
	*st = stepParams{Base: int32(base), T: int32(T)}
	for i, id := range tokens {
		st.Tokens[i], st.Pos[i], st.Mask[i] = id, int32(base+i), uint32(1)<<(i+1)-1
	}
	if last {
		for j := 1; j < k; j++ { // draft step j at slot and position base+T+j-1
			p := int32(base + T + j - 1)
			*h.hstep(j) = stepParams{Base: p, T: 1}
			s := h.hstep(j)
			s.Pos[0], s.Mask[0] = p, 1
		}
	}
	copy(unsafe.Slice((*float32)(unsafe.Add(h.hsteps.p, spec.MaxK*stepBytes)), len(feats)), feats)
	if !last {
		k = 0 // rows only
	}
	// The copies are calls around the graph (as graph nodes they made a
	// draft step 3-4 us slower on the H200: bench/cuda/results/s16).
	if err := h.copyIn(T); err != nil {
		return err
	}
	if err := h.enqueueGraph(T, k); err != nil {
		return err
	}
	if pending {
		if err := h.done.Record(h.stream); err != nil {
			return fmt.Errorf("cuda: EAGLE-3 chain event: %w", err)
		}
		return nil
	}
	if err := h.stream.Synchronize(); err != nil { // the drafted tokens are in hout (out is its device address)
		return fmt.Errorf("cuda: EAGLE-3 draft of %d rows at %d: %w", T, base, err)
	}
	return nil
}

// copyIn enqueues the copy of the step parameters and T rows of features
// (hsteps) to the device.
func (h *Head) copyIn(T int) error {
	if err := cu.MemcpyHtoDAsync(h.steps, h.hsteps.p, int64(spec.MaxK*stepBytes+4*T*h.fw), h.stream); err != nil {
		return fmt.Errorf("cuda: EAGLE-3 step parameters and features: %w", err)
	}
	return nil
}

// enqueueGraph replays (capturing first) the graph of T extended rows and
// k draft tokens (k 0: the rows only, a chunk of a long extension).
func (h *Head) enqueueGraph(T, k int) error {
	return replay(h.stream, h.graphs, [2]int{T, k}, func() error { return h.enqueueChain(T, k) })
}

// enqueueChain: the T extended rows, then with k > 0 k draft tokens from
// the last one's output (row T-1 of res, so the residual stream simply
// continues there).
func (h *Head) enqueueChain(T, k int) error {
	if err := h.enqueueRows(T); err != nil {
		return err
	}
	if k == 0 {
		return nil
	}
	return h.enqueueDraftTokens(h.res+cu.DevicePtr(4*int64(T-1)*int64(h.cfg.Dim)), k)
}

// enqueueRows runs T extended rows (step 0): their hidden inputs
// fc(features) and the layer.
func (h *Head) enqueueRows(T int) error {
	// hin (T, dim) = feats (T, fw) · fcᵀ, the residual stream's start.
	if err := h.matvec("fc", h.res, h.cfg.Dim, h.feats, 0, h.fc, T, 0, 0); err != nil {
		return err
	}
	return h.enqueueLayer(h.res, T, 0, false)
}

// enqueueDraftTokens drafts k tokens from the output row last (dim): the
// first from it, then k-1 draft steps, each on the previous one's output
// in last.
func (h *Head) enqueueDraftTokens(last cu.DevicePtr, k int) error {
	if err := h.enqueueDraftToken(last, 0, k); err != nil {
		return err
	}
	for j := 1; j < k; j++ {
		if err := h.enqueueLayer(last, 1, j, h.tune.EagleInFold); err != nil {
			return err
		}
		if err := h.enqueueDraftToken(last, j, k); err != nil {
			return err
		}
	}
	return nil
}

// enqueueLayer runs the decoder layer on T rows of the residual stream
// res (T, dim) with step s's tokens, positions and mask; built: the
// previous draft step's argmax built its input already (argmax_d2t_in).
func (h *Head) enqueueLayer(res cu.DevicePtr, T, s int, built bool) error {
	// cat (T, 2*dim) = (input_layernorm(embed(tok)), hidden_norm(res)).
	if !built {
		if err := h.eagleIn(h.emb, res, T, s); err != nil {
			return err
		}
	}
	// The decoder layer: engine/model's (model.Layers), run by the head's
	// operations (head_ops.go) on res with step s.
	h.lres, h.lstep = res, s
	return model.Layers((*headOps)(h), &h.mcfg, T)
}

// eagleIn is eagle_in over T rows of res with step s's tokens looked up
// in emb (the target's embedding, or embD by draft id).
func (h *Head) eagleIn(emb dweight, res cu.DevicePtr, T, s int) error {
	c := h.cfg
	suf, err := kernelSuffix(emb.dt)
	if err != nil {
		return err
	}
	return h.kernel("eagle_in", 0, "eagle_in_"+suf, [3]int{T, 1, 1}, [3]int{256, 1, 1},
		ptr(h.cat), ptr(res), ptr(emb.w), ptr(emb.s), ptr(h.dstep(s)), ptr(h.inNorm), ptr(h.hidNorm),
		i32(c.Dim), f32(c.NormEps), i32(h.nbr()))
}

// enqueueDraftToken drafts token j from the output row (dim):
// lm_head(norm(row)), argmax, the target id into out[j] and step j+1
// (one kernel with Tuning.HeadOut: draftOut).
func (h *Head) enqueueDraftToken(row cu.DevicePtr, j, k int) error {
	c := h.cfg
	if h.tune.HeadOut {
		if done, err := h.draftOut(row, j, k); done || err != nil {
			return err
		}
	}
	if err := h.matvec("output", h.logits, c.DraftVocab, row, 0, h.lm, 1, 0, h.outNorm); err != nil {
		return err
	}
	var next cu.DevicePtr
	if j+1 < k {
		next = h.dstep(j + 1)
	}
	args := []arg{ptr(h.ids), ptr(h.logits), i32(c.DraftVocab), ptr(h.dstep(j)), ptr(h.amPart), ptr(h.amCnt),
		ptr(h.d2t), ptr(h.out), i32(j), ptr(next)}
	if next == 0 || !h.tune.EagleInFold {
		return h.kernel("argmax", 0, "argmax_d2t", [3]int{h.amBlocks(), 1, 1}, [3]int{256, 1, 1}, args...)
	}
	// The next step's input (eagle_in of its token and this output row),
	// built by the argmax's last block.
	suf, err := kernelSuffix(h.emb.dt)
	if err != nil {
		return err
	}
	args = append(args, ptr(h.cat), ptr(row), ptr(h.emb.w), ptr(h.emb.s), ptr(h.inNorm), ptr(h.hidNorm),
		i32(c.Dim), f32(c.NormEps), i32(h.nbr()))
	return h.kernel("argmax", 0, "argmax_d2t_in_"+suf, [3]int{h.amBlocks(), 1, 1}, [3]int{256, 1, 1}, args...)
}

// nbr is the head's norm_before_residual as the kernels take it.
func (h *Head) nbr() int {
	if h.cfg.NormBeforeResidual {
		return 1
	}
	return 0
}
