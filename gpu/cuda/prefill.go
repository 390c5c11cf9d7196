//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// PrefillChunk is the most tokens one prefill forward takes: a prompt
// chain longer than MaxTokens runs through the matrix-matrix kernels of
// kernels/gemm.cu in chunks of up to this many tokens, each chunk one
// pass over the weights (the 16-token path reads them once per 16 tokens).
const PrefillChunk = 512

// prefillState is the prefill path's state: its mode (Tuning.Prefill), chunk
// size and buffers for PrefillChunk tokens (allocated at load: initPrefill).
type prefillState struct {
	mode  string // prefillOff, prefillBF16, prefillSplit, prefillBF16FA, prefillCublas or prefillCublasFA
	chunk int    // tokens per forward (PrefillChunk; cuda-check sets smaller ones)
	warps int    // the products' warps at 128-token tiles: 8 (0), or 4 (the *w4 kernels; cuda-check compares)

	x      cu.DevicePtr // (P, dim) f32: the chunk's residual stream
	qkv    cu.DevicePtr // (P, nqkv) f32
	ah, al cu.DevicePtr // (P, max(dim, hq*hd)) bf16: a product's input, hi and lo (rmsnorm(x)*g, or attention's output)
	hh, hl cu.DevicePtr // (P, ffn) bf16: the GLU's output, hi and lo (down's input)
	rs     cu.DevicePtr // (P) f32: 1/rms of each token's x (the fused norms)
	tokPos cu.DevicePtr // (2P) int32: tokens, then positions
	host   pinned       // (2P) int32, the same
	feats  pinned       // (captured layers, P, dim) f32: a chunk's EAGLE-3 features, copied out per layer
	smem   map[string]bool
	prof   *profiler // set by cuda-check: every launch timed, by kind (flops in its bytes)
	cb     cbState   // the cuBLAS products (prefill_cublas.go)
}

// prefillBytes is the device memory of the prefill buffers for a rank of
// dims d (stateBytes counts it; TP > 1 has none).
func prefillBytes(c model.Config, d shardDims, tp int) int64 {
	const P = PrefillChunk
	if tp > 1 {
		return 0
	}
	hd := c.HeadDim
	a := max(c.Dim, d.hq*hd)
	// the cuBLAS path's GLU products (P, 2 ffn) f32 and its workspace,
	// counted whatever the mode (prefill_cublas.go; its row-major weight
	// copy is made only from memory left free after loading)
	cublas := P*2*4*int64(d.ffn) + cublasWorkspace
	return P*(4*int64(c.Dim)+4*int64((d.hq+2*d.hk)*hd)+2*2*int64(a)+2*2*int64(d.ffn)+4+8) + cublas
}

// prefillable says whether b runs on the prefill path: a plain chain
// (no tree) of more than MaxTokens tokens asking for no more than the last
// logits row, on a model the path runs (prefillModel).
func (t *Target) prefillable(b model.Batch) bool {
	if t.pf.mode == "" {
		t.pf.mode = t.tune.Prefill
	}
	if t.pf.chunk <= 0 || t.pf.chunk > PrefillChunk {
		t.pf.chunk = PrefillChunk
	}
	return t.pf.mode != prefillOff && len(b.Tokens) > MaxTokens && b.Parent == nil && b.Logits != model.LogitsAll &&
		t.prof == nil && !t.anyRemote() && t.prefillModel() // the prefill path runs the ranks on the home GPU
}

// prefillModel says whether the prefill path runs this model: the Llama
// block with at most RoPE scaling (the layers' tables, arch.go; biases,
// head norms, windows and Gemma 3 keep the 16-token path until gemm.cu
// learns them), one rank, bf16 layer weights on the tensor cores (or, on
// the cuBLAS path, row-major), a head dim pf_attn has.
func (t *Target) prefillModel() bool {
	c := t.cfg
	c.RopeScaling.Type = model.RopeScaleNone
	if len(c.Extensions()) > 0 {
		return false
	}
	switch t.cfg.HeadDim {
	case 32, 64, 128, 256:
	default:
		return false
	}
	if len(t.ranks) != 1 {
		return false
	}
	rowMajorOK := cublasMode(t.pf.mode) || t.pf.mode == "" && cublasMode(t.tune.Prefill)
	for _, L := range t.ranks[0].m.layers {
		for _, w := range []dweight{L.qkv, L.wo, L.gate, L.up, L.down} {
			if !(w.tiled && w.dt == tensor.BF16) && !(rowMajorOK && cbRowMajor(w)) { // tiled FP8 (f8tc*): not on the prefill kernels
				return false
			}
		}
	}
	return true
}

// initPrefill readies the prefill path at load (prefillModel), so that a prompt's
// first chunk pays no allocation or kernel setup: the buffers (counted in
// stateBytes) and the products' and attention's shared-memory limits, and
// for the cuBLAS modes the library, its handle and the row-major weights;
// when cuBLAS cannot be used the target falls back to the split mode and
// PrefillPath says why. The device is bound.
func (t *Target) initPrefill() error {
	t.pf.mode, t.pf.chunk = t.tune.Prefill, PrefillChunk
	if !t.dev.has("pfs_gemm") { // a PTX variant (RIGSCOPE_CUDA_PTX) built without gemm.cu
		t.pf.mode = prefillOff
	}
	if t.pf.mode == prefillOff || !t.prefillModel() {
		return nil
	}
	if err := t.allocPrefill(); err != nil {
		return err
	}
	if cublasMode(t.pf.mode) {
		if err := t.cbInit(); err != nil {
			t.pf.cb.err, t.pf.mode = err, prefillSplit
			if !t.prefillModel() { // row-major weights: only cuBLAS reads them
				t.pf.mode = prefillOff
				return nil
			}
		}
	}
	hd := t.cfg.HeadDim
	for _, pre := range []string{"pf", "pfs"} {
		for _, kind := range []string{"gemm", "glu"} {
			for _, v := range []struct {
				suf string
				bn  int
			}{{"", 128}, {"64", 64}, {"w4", 128}} {
				if err := t.setSmem(pre+"_"+kind+v.suf, pfGemmSmem(v.bn, pre == "pfs")); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range []string{"pf_prep", t.kv.kernel("pf_kv")} { // looked up (loaded) now, not in the first chunk
		if _, err := t.dev.fn(name); err != nil {
			return err
		}
	}
	return t.setSmem(t.kv.kernel(fmt.Sprintf("pf_attn_%d", hd)), pfAttnSmem(hd))
}

// pfAttnSmem is pf_attn's dynamic shared memory at head dim hd (gemm.cu:
// 32 query rows and a 32-slot chunk of K and V, p of the rows).
func pfAttnSmem(hd int) int { return 4 * (32*hd + 32*(hd+4) + 32*hd + 32*32) }

// setSmem looks kernel name up and raises its dynamic shared memory limit
// to smem when it passes the default 48 KB (once per name).
func (t *Target) setSmem(name string, smem int) error {
	if t.pf.smem[name] {
		return nil
	}
	fn, err := t.dev.fn(name)
	if err != nil || smem <= 48<<10 {
		return err
	}
	if err := setMaxDynamicSmem(fn, smem); err != nil {
		return fmt.Errorf("cuda: %s: %w", name, err)
	}
	if t.pf.smem == nil {
		t.pf.smem = map[string]bool{}
	}
	t.pf.smem[name] = true
	return nil
}

// allocPrefill makes the prefill buffers (the device is bound).
func (t *Target) allocPrefill() error {
	p := &t.pf
	if p.x != 0 {
		return nil
	}
	const P = PrefillChunk
	c, R := t.cfg, t.ranks[0]
	var err error
	alloc := func(n int64) cu.DevicePtr {
		if err != nil {
			return 0
		}
		var d cu.DevicePtr
		if d, err = cu.MemAlloc(n); err != nil {
			err = fmt.Errorf("cuda: cuMemAlloc(%d bytes) for the prefill buffers: %w", n, err)
			return 0
		}
		t.bufs = append(t.bufs, d)
		return d
	}
	a := int64(max(c.Dim, R.dims.hq*c.HeadDim))
	x := alloc(P * 4 * int64(c.Dim))
	p.qkv = alloc(P * 4 * int64(R.nqkv))
	p.ah, p.al = alloc(P*2*a), alloc(P*2*a)
	p.hh, p.hl = alloc(P*2*int64(R.dims.ffn)), alloc(P*2*int64(R.dims.ffn))
	p.rs = alloc(P * 4)
	p.tokPos = alloc(2 * P * 4)
	if err != nil {
		return err
	}
	if p.host, err = allocPinned(2 * P * 4); err != nil {
		return fmt.Errorf("cuda: host buffer for prefill tokens: %w", err)
	}
	p.x = x
	return nil
}

// runPrefill runs the chain b in chunks of up to pf.chunk tokens; on error
// the cache keeps its old length. It returns the rows of results (1 with
// LogitsLast: the last token's logits or id at row 0, as exec).
func (t *Target) runPrefill(ctx context.Context, b model.Batch, idsOnly bool) (int, error) {
	if err := t.dropAhead(); err != nil { // ahead.go
		return 0, err
	}
	T, base := len(b.Tokens), t.n
	switch {
	case b.Pos != nil && len(b.Pos) != T:
		return 0, fmt.Errorf("cuda: batch of %d tokens with %d positions", T, len(b.Pos))
	case base+T > t.MaxLen():
		return 0, fmt.Errorf("cuda: %d cached + %d new tokens exceed the context of %d positions; start a new run or raise --ctx", base, T, t.MaxLen())
	}
	for i, id := range b.Tokens {
		if id < 0 || int(id) >= t.cfg.Vocab {
			return 0, fmt.Errorf("cuda: token id %d outside the vocabulary of %d", id, t.cfg.Vocab)
		}
		if b.Pos != nil && (b.Pos[i] < 0 || int(b.Pos[i]) >= t.maxPos) {
			return 0, fmt.Errorf("cuda: position %d outside [0, %d)", b.Pos[i], t.maxPos)
		}
	}
	unbind, err := t.dev.Bind()
	if err != nil {
		return 0, err
	}
	defer unbind()
	if err := t.allocPrefill(); err != nil {
		return 0, err
	}
	chunk := t.pf.chunk
	for i := 0; i < T; i += chunk {
		if err := ctx.Err(); err != nil {
			t.n = base
			return 0, err
		}
		j := min(T, i+chunk)
		var pos []int32
		if b.Pos != nil {
			pos = b.Pos[i:j]
		}
		last := j == T && b.Logits == model.LogitsLast
		if err := t.prefillChunk(b.Tokens[i:j], pos, last, idsOnly, i == 0); err != nil {
			t.n = base
			return 0, fmt.Errorf("cuda: prefill of tokens [%d, %d) at %d: %w", i, j, base, err)
		}
	}
	if b.Logits == model.LogitsLast {
		return 1, nil
	}
	return 0, nil
}

// prefillChunk runs n = len(toks) tokens at t.n (positions pos, or t.n+i)
// through the model and, when logits is set, the last one's logits (or id)
// into row 0 of the outputs; captured features (SetCapture) start a new
// forward when first is set, else they are appended. It waits for the
// device.
func (t *Target) prefillChunk(toks, pos []int32, logits, idsOnly, first bool) error {
	p, c, R := &t.pf, t.cfg, t.ranks[0]
	m := R.m
	n, base, hd := len(toks), t.n, c.HeadDim
	h := p.host.ints()
	for i, id := range toks {
		h[i] = id
		h[PrefillChunk+i] = int32(base + i)
		if pos != nil {
			h[PrefillChunk+i] = pos[i]
		}
	}
	tok, ps := p.tokPos, p.tokPos+4*PrefillChunk
	if err := cu.MemcpyHtoDAsync(p.tokPos, p.host.p, int64(p.host.n), t.stream); err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	if logits { // argmax_rows reads the temperature and seed
		st := (*stepParams)(t.hstep.p)
		st.Base, st.T, st.Temp, st.Seed = int32(base+n-1), 1, t.Temp, t.Seed
		if err := cu.MemcpyHtoDAsync(t.step, t.hstep.p, int64(stepBytes), t.stream); err != nil {
			return fmt.Errorf("step parameters: %w", err)
		}
	}
	suf, err := kernelSuffix(m.emb.dt)
	if err != nil {
		return err
	}
	if err := t.kernel("embed", 0, "embed_"+suf, [3]int{n, 1, 1}, [3]int{128, 1, 1},
		ptr(p.x), ptr(m.emb.w), ptr(m.emb.s), ptr(tok), i32(c.Dim)); err != nil {
		return err
	}
	if cublasMode(p.mode) {
		done, err := t.cbBegin()
		if err != nil {
			return err
		}
		defer done()
	}
	pre, al, hl := "pfs", p.al, p.hl
	if p.mode != prefillSplit { // bf16 modes and cuBLAS: x and attention's output in bf16 only
		pre, al, hl = "pf", 0, 0
	}
	inter := 0
	if c.RopeLayout == model.RopeInterleaved {
		inter = 1
	}
	attnSmem := pfAttnSmem(hd)
	hq, hk := R.dims.hq, R.dims.hk
	tiles := func(rows, per int) int { return (rows + per - 1) / per }
	flops := func(n int, w dweight) int64 { return 2 * int64(n) * int64(w.rows) * int64(w.cols) }
	// attention: q.k and p.v of each query row over the slots it sees
	attnFlops := 4 * int64(hq) * int64(hd) * (int64(n)*int64(base) + int64(n)*int64(n+1)/2)
	for l := range c.Layers {
		L, a := &m.layers[l], &t.attn[l] // a: the layer's RoPE tables and score scale (arch.go)
		kc, vc := t.layerCache(R, l)
		qkv := t.pfGemm(pre, "gemm", L.qkv.rows, n, al != 0)
		wo := t.pfGemm(pre, "gemm", L.wo.rows, n, al != 0)
		glu := t.pfGemm(pre, "glu", L.gate.rows, n, al != 0)
		dn := t.pfGemm(pre, "gemm", L.down.rows, n, al != 0)
		attn := pfStep{"attention", t.kv.kernel(fmt.Sprintf("pf_attn_%d", hd)), attnFlops, [3]int{tiles(hq/hk*n, 32), hk, 1}, [3]int{128, 1, 1}, attnSmem,
			[]arg{ptr(p.ah), ptr(al), ptr(p.qkv), i32(R.nqkv), ptr(kc), ptr(vc), ptr(ps), i32(base), i32(n), ptr(a.cs), ptr(a.sn), i32(hq), i32(hk), f32(a.scale), i32(inter)}}
		if (p.mode == prefillBF16FA || p.mode == prefillCublasFA) && (hd == 64 || hd == 128) {
			attn = pfStep{"attention", t.kv.kernel(fmt.Sprintf("pf_fa_%d", hd)), attnFlops, [3]int{tiles(hq/hk*n, 64), hk, 1}, [3]int{128, 1, 1}, 3 * 64 * hd * 2,
				[]arg{ptr(p.ah), ptr(p.qkv), i32(R.nqkv), ptr(kc), ptr(vc), ptr(ps), i32(base), i32(n), ptr(a.cs), ptr(a.sn), i32(hq), i32(hk), f32(a.scale), i32(inter)}}
		}
		steps := []pfStep{
			{"prep", "pf_prep", 0, [3]int{n, 1, 1}, [3]int{256, 1, 1}, 0,
				[]arg{ptr(p.ah), ptr(al), ptr(p.rs), ptr(p.x), ptr(L.attnNorm), i32(c.Dim), f32(t.eps)}},
			{"qkv", qkv.name, flops(n, L.qkv), qkv.grid, qkv.block, qkv.smem,
				[]arg{ptr(p.qkv), i32(R.nqkv), ptr(p.ah), ptr(al), ptr(p.rs), ptr(L.qkv.w), i32(L.qkv.rows), i32(L.qkv.cols), i32(n), i32(0)}},
			{"kv", t.kv.kernel("pf_kv"), 0, [3]int{n, 1, 1}, [3]int{128, 1, 1}, 0,
				[]arg{ptr(kc), ptr(vc), ptr(p.qkv), i32(R.nqkv), ptr(ps), i32(base), ptr(a.cs), ptr(a.sn), i32(hq), i32(hk), i32(hd), i32(inter)}},
			attn,
			{"wo", wo.name, flops(n, L.wo), wo.grid, wo.block, wo.smem,
				[]arg{ptr(p.x), i32(c.Dim), ptr(p.ah), ptr(al), ptr(0), ptr(L.wo.w), i32(L.wo.rows), i32(L.wo.cols), i32(n), i32(1)}},
			{"prep", "pf_prep", 0, [3]int{n, 1, 1}, [3]int{256, 1, 1}, 0,
				[]arg{ptr(p.ah), ptr(al), ptr(p.rs), ptr(p.x), ptr(L.ffnNorm), i32(c.Dim), f32(t.eps)}},
			{"gate_up", glu.name, 2 * flops(n, L.gate), glu.grid, glu.block, glu.smem,
				[]arg{ptr(p.hh), ptr(hl), ptr(p.ah), ptr(al), ptr(p.rs), ptr(L.gate.w), ptr(L.up.w), i32(L.gate.rows), i32(L.gate.cols), i32(n)}},
			{"down", dn.name, flops(n, L.down), dn.grid, dn.block, dn.smem,
				[]arg{ptr(p.x), i32(c.Dim), ptr(p.hh), ptr(hl), ptr(0), ptr(L.down.w), i32(L.down.rows), i32(L.down.cols), i32(n), i32(1)}},
		}
		if cublasMode(p.mode) { // the same cache and attention launches around cuBLAS products
			if err := t.cbLayerRun(l, n, steps[2], steps[3]); err != nil {
				return fmt.Errorf("layer %d: %w", l, err)
			}
			steps = nil
		}
		for _, s := range steps {
			if err := t.pfLaunch(s.kind, s.flops, s.name, s.grid, s.blk, s.smem, s.args...); err != nil {
				return fmt.Errorf("layer %d: %w", l, err)
			}
		}
		if err := t.prefillCapture(l, n); err != nil {
			return err
		}
	}
	if logits {
		if err := t.matvec("output", t.logits, c.Vocab, p.x+cu.DevicePtr(4*(n-1)*c.Dim), 0, m.out, 1, 0, m.outNorm); err != nil {
			return err
		}
		if err := t.kernel("argmax", 0, "argmax_rows", [3]int{t.amBlocks(), 1, 1}, [3]int{256, 1, 1},
			ptr(t.ids), ptr(t.logits), i32(c.Vocab), ptr(t.step), ptr(t.amPart), ptr(t.amCnt)); err != nil {
			return err
		}
		if !idsOnly { // ids are written to mapped host memory (hids)
			if err := cu.MemcpyDtoHAsync(t.hlogits.p, t.logits, int64(4*c.Vocab), t.stream); err != nil {
				return fmt.Errorf("copy results back: %w", err)
			}
		}
	}
	if err := t.stream.Synchronize(); err != nil {
		return err
	}
	t.prefillCollect(n, first)
	if logits {
		if idsOnly {
			t.outIDs = grow(t.outIDs, 1)
			t.outIDs[0] = t.hids.ints()[0]
		} else {
			t.out = grow(t.out, c.Vocab)
			copy(t.out, t.hlogits.floats()[:c.Vocab])
		}
	}
	t.n += n
	return nil
}

// pfStep is one launch of a prefill layer: its kind (profiles), kernel,
// flops of its products, grid, block, dynamic shared memory, arguments.
type pfStep struct {
	kind, name string
	flops      int64
	grid, blk  [3]int
	smem       int
	args       []arg
}

// pfKernel is a prefill product's launch.
type pfKernel struct {
	name        string
	grid, block [3]int
	smem        int
}

// pfGemm is a product kernel (pre_kind[64|w4]) for rows weight rows (128
// a block, the GLU's 64 of each matrix) and n tokens: 128 tokens a block,
// or 64 where 128 would leave SMs without a block (llama-8b's wo and down
// at 512 tokens: 128 blocks on 132 SMs); 8 warps at 128 tokens (or 4
// when pf.warps says so), 4 at 64. split: x hi and lo (gemm.cu's stage holds both).
func (t *Target) pfGemm(pre, kind string, rows, n int, split bool) pfKernel {
	per := 128
	if kind == "glu" {
		per = 64
	}
	rb := (rows + per - 1) / per
	bn, suf := 128, ""
	if rb*((n+127)/128) < t.dev.SMs {
		bn, suf = 64, "64"
	}
	nw := 8
	if bn == 64 {
		nw = 4
	} else if t.pf.warps == 4 {
		nw, suf = 4, "w4"
	}
	return pfKernel{pre + "_" + kind + suf, [3]int{(n + bn - 1) / bn, rb, 1}, [3]int{32 * nw, 1, 1}, pfGemmSmem(bn, split)}
}

// pfGemmSmem is a product kernel's dynamic shared memory: PF_ST (4)
// stages of 8 row tiles x 2 k tiles of weights (8 KB) and bn tokens x 32 k
// of x in bf16, hi and, split, lo.
func pfGemmSmem(bn int, split bool) int {
	xs := 1
	if split {
		xs = 2
	}
	return 4 * (8*2*512 + xs*bn*32*2)
}

// pfLaunch launches a prefill kernel (of kind, doing flops in its
// products) on the target's stream with smem bytes of dynamic shared
// memory (raising the kernel's limit past 48 KB on first use).
func (t *Target) pfLaunch(kind string, flops int64, name string, grid, block [3]int, smem int, args ...arg) error {
	fn, err := t.dev.fn(name)
	if err != nil {
		return err
	}
	if err := t.setSmem(name, smem); err != nil {
		return err
	}
	if pr := t.pf.prof; pr != nil {
		if err := pr.before(t.stream); err != nil {
			return err
		}
	}
	if err := launchWith(t.pdl, fn, grid, block, smem, t.stream, args...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if pr := t.pf.prof; pr != nil {
		return pr.after(t.stream, kind, flops)
	}
	return nil
}

// featSlot is layer l's slot in pf.feats: how many captured layers come
// before it.
func (t *Target) featSlot(l int) int {
	n := 0
	for _, on := range t.cap.on[:l] {
		if on {
			n++
		}
	}
	return n
}

// prefillCapture enqueues the copy of the chunk's x (n, dim) after layer l
// to pf.feats when l is captured (EAGLE-3), growing pf.feats for the
// capture set first.
func (t *Target) prefillCapture(l, n int) error {
	c, p := &t.cap, &t.pf
	if c.on == nil || !c.on[l] {
		return nil
	}
	row := int64(PrefillChunk) * int64(t.cfg.Dim) * 4
	if need := int64(t.featSlot(len(c.on))) * row; int64(p.feats.n) < need {
		if err := t.stream.Synchronize(); err != nil { // an earlier layer's copy may still be reading the old buffer
			return err
		}
		p.feats.free()
		var err error
		if p.feats, err = allocPinned(int(need)); err != nil {
			p.feats = pinned{}
			return fmt.Errorf("cuda: host buffer for prefill features: %w", err)
		}
	}
	if err := cu.MemcpyDtoHAsync(unsafe.Add(p.feats.p, int64(t.featSlot(l))*row), p.x, int64(n*t.cfg.Dim*4), t.stream); err != nil {
		return fmt.Errorf("cuda: copy features of layer %d back: %w", l, err)
	}
	return nil
}

// prefillCollect appends the chunk's captured features (the stream is
// synchronized) to the per-layer outputs, as collectCapture does for a
// step; first starts a new forward.
func (t *Target) prefillCollect(n int, first bool) {
	c := &t.cap
	if len(c.layers) == 0 {
		return
	}
	dim := t.cfg.Dim
	host := t.pf.feats.floats()
	for i, l := range c.layers {
		if first {
			c.out[i] = c.out[i][:0]
		}
		if c.on == nil || l < 0 || l >= len(c.on) || !c.on[l] {
			continue
		}
		o := t.featSlot(l) * PrefillChunk * dim
		c.out[i] = append(c.out[i], host[o:o+n*dim]...)
	}
}
