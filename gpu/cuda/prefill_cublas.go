//go:build cuda

package cuda

import (
	"fmt"
	"slices"
	"sync"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// The prefill path's weight products through cuBLAS (RIGSCOPE_CUDA_PREFILL
// =cublas, or cublasfa with pf_fa's tensor-core attention): bf16 x and
// weights, float32 accumulation and output (cublasGemmEx,
// CUBLAS_COMPUTE_32F), the norms and the GLU in small kernels around them
// (kernels/cublas.cu), attention and the cache writes as the bf16 mode
// (gemm.cu). cuBLAS reads row-major matrices; the layer weights are stored
// in the tensor cores' fragment order (tileBF16), which no stride
// describes, so cuBLAS reads a row-major copy made on the device
// (cb_untile): kept for all layers when the device has room (cbResident),
// else untiled into one scratch matrix before each product. Weights stored
// row-major (RIGSCOPE_CUDA_TC=0) are read as they are. Without cuBLAS the
// target falls back to the split mode and says why (PrefillPath).

// cbState is the cuBLAS path's state (prefillState.cb).
type cbState struct {
	b       *blas
	ready   bool
	err     error     // why the path is not used (initPrefill fell back)
	layers  []cbLayer // per layer: row-major matrices, or 0 (untile into scratch)
	scratch cu.DevicePtr
	copied  int64          // bytes of the resident copy
	bufs    []cu.DevicePtr // this state's allocations (also in Target.bufs, which Close frees)
	gu      cu.DevicePtr   // (P, 2 ffn) f32: the gate and up products of a token side by side

	forceScratch bool // cuda-check: untile before each product even when the copy fits
}

// cbLayer is a layer's matrices as cuBLAS reads them, row-major bf16 (0:
// untiled into the scratch before the product). gate and up are adjacent
// (one product) when up == gate + ffn rows.
type cbLayer struct{ qkv, wo, gate, up, down cu.DevicePtr }

// cublasMode says whether mode runs its products through cuBLAS.
func cublasMode(mode string) bool { return mode == prefillCublas || mode == prefillCublasFA }

// cbRowMajor says whether cuBLAS reads w as stored: bf16, row-major.
func cbRowMajor(w dweight) bool {
	return w.dt == tensor.BF16 && !w.tiled && len(w.parts) == 0 && w.qs == nil
}

var (
	blasMu      sync.Mutex
	blasHandles = map[int]*blas{} // per device ordinal, for the process (as the loaded library)
)

// deviceBLAS is device d's cuBLAS handle, made on first use (d bound).
// Its stream is set before each chunk's products (cbChunk), under blasMu.
func deviceBLAS(d *Device, s cu.Stream) (*blas, error) {
	blasMu.Lock()
	defer blasMu.Unlock()
	if b := blasHandles[d.Ordinal]; b != nil {
		return b, nil
	}
	b, err := newBLAS(s)
	if err != nil {
		return nil, err
	}
	blasHandles[d.Ordinal] = b
	return b, nil
}

// cbInit readies the cuBLAS path (the device bound, the prefill buffers
// allocated): the handle, the GLU buffer, and the resident row-major copy
// of the layer weights or the scratch matrix. Once per target.
func (t *Target) cbInit() error {
	cb := &t.pf.cb
	if cb.ready {
		return nil
	}
	for _, k := range []string{"cb_untile", "cb_prep", "cb_glu"} {
		if !t.dev.has(k) {
			return fmt.Errorf("kernel %s not in the %s PTX", k, t.dev.PTX)
		}
	}
	R := t.ranks[0]
	if len(R.m.layers) == 0 {
		return fmt.Errorf("a model without layers")
	}
	if R.dims.ffn%2 != 0 || t.cfg.Dim%2 != 0 {
		return fmt.Errorf("dim %d and FFN %d must be even (cb_prep, cb_glu)", t.cfg.Dim, R.dims.ffn)
	}
	b, err := deviceBLAS(t.dev, t.stream)
	if err != nil {
		return err
	}
	var bufs []cu.DevicePtr
	alloc := func(n int64, what string) (cu.DevicePtr, error) {
		p, err := cu.MemAlloc(n)
		if err != nil {
			return 0, fmt.Errorf("cuMemAlloc(%d bytes) for %s: %w", n, what, err)
		}
		bufs = append(bufs, p)
		return p, nil
	}
	fail := func(err error) error {
		t.stream.Synchronize() // untile and warm-up launches may still read or write the buffers
		for _, p := range bufs {
			cu.MemFree(p)
		}
		*cb = cbState{forceScratch: cb.forceScratch}
		return err
	}
	if cb.gu, err = alloc(PrefillChunk*2*4*int64(R.dims.ffn), "the GLU's products"); err != nil {
		return fail(err)
	}
	ls := R.m.layers
	var copyBytes, most int64 // the tiled matrices' bytes, all and the largest product's
	for _, L := range ls {
		for _, w := range []dweight{L.qkv, L.wo, L.down} {
			if !cbRowMajor(w) {
				copyBytes += w.bytes()
				most = max(most, w.bytes())
			}
		}
		if !cbRowMajor(L.gate) || !cbRowMajor(L.up) {
			copyBytes += L.gate.bytes() + L.up.bytes()
			most = max(most, L.gate.bytes()+L.up.bytes())
		}
	}
	free, total, err := t.dev.MemInfo()
	if err != nil {
		return fail(err)
	}
	resident := !cb.forceScratch && cbResident(copyBytes, free, total)
	cb.layers = make([]cbLayer, len(ls))
	if most > 0 && !resident {
		if cb.scratch, err = alloc(most, "the row-major scratch matrix"); err != nil {
			return fail(err)
		}
	}
	for l, L := range ls {
		c := &cb.layers[l]
		var base cu.DevicePtr
		if resident {
			var n int64
			for _, w := range []dweight{L.qkv, L.wo, L.gate, L.up, L.down} {
				if !cbRowMajor(w) {
					n += w.bytes()
				}
			}
			if n > 0 {
				if base, err = alloc(n, fmt.Sprintf("layer %d's row-major weights", l)); err != nil {
					return fail(err)
				}
			}
		}
		// place: the row-major matrix of w, copied to base when resident.
		place := func(w dweight) (cu.DevicePtr, error) {
			if cbRowMajor(w) {
				return w.w, nil
			}
			if !resident {
				return 0, nil
			}
			p := base
			base += cu.DevicePtr(w.bytes())
			return p, t.cbUntile(p, w)
		}
		for _, m := range []struct {
			dst *cu.DevicePtr
			w   dweight
		}{{&c.qkv, L.qkv}, {&c.wo, L.wo}, {&c.gate, L.gate}, {&c.up, L.up}, {&c.down, L.down}} {
			if *m.dst, err = place(m.w); err != nil {
				return fail(fmt.Errorf("layer %d: %w", l, err))
			}
		}
	}
	cb.b = b
	if err := t.cbWarm(); err != nil {
		return fail(fmt.Errorf("warm-up products: %w", err))
	}
	if err := t.stream.Synchronize(); err != nil {
		return fail(fmt.Errorf("row-major copy of the layer weights and warm-up products: %w", err))
	}
	if resident {
		cb.copied = copyBytes
	}
	t.bufs = append(t.bufs, bufs...)
	cb.b, cb.ready, cb.bufs = b, true, bufs
	return nil
}

// cbWarm runs each of a layer's four product shapes once at PrefillChunk
// tokens into the GLU buffer (its contents are scratch), so that cuBLAS
// picks and loads its kernels (lazily loaded modules) at load, not in a
// prompt's first chunk. wo and down add, as in the layers.
func (t *Target) cbWarm() error {
	p, R := &t.pf, t.ranks[0]
	L, W := &R.m.layers[0], p.cb.layers[0]
	room := 2 * R.dims.ffn // gu's row: the outputs below fit it
	gu := 2 * R.dims.ffn   // gate and up in one product when adjacent (as cbLayerRun)
	if W.gate != 0 && W.up != W.gate+cu.DevicePtr(L.gate.bytes()) {
		gu = R.dims.ffn
	}
	blasMu.Lock()
	defer blasMu.Unlock()
	if err := p.cb.b.setStream(t.stream); err != nil {
		return err
	}
	for _, m := range []struct {
		w    cu.DevicePtr
		x    cu.DevicePtr
		N, K int
		add  bool
	}{
		{W.qkv, p.ah, L.qkv.rows, L.qkv.cols, false},
		{W.wo, p.ah, L.wo.rows, L.wo.cols, true},
		{W.gate, p.ah, gu, L.gate.cols, false},
		{W.down, p.hh, L.down.rows, L.down.cols, true},
	} {
		if m.N > room {
			continue
		}
		w := m.w
		if w == 0 {
			w = p.cb.scratch
		}
		beta := float32(0)
		if m.add {
			beta = 1
		}
		if err := p.cb.b.gemmRows(p.cb.gu, m.N, m.x, w, m.N, m.K, PrefillChunk, 1, beta); err != nil {
			return err
		}
	}
	return nil
}

// cbDrop frees the cuBLAS path's buffers and forgets its state, keeping
// forceScratch (cuda-check, to make it again the other way; device bound).
func (t *Target) cbDrop() {
	cb := &t.pf.cb
	drop := map[cu.DevicePtr]bool{}
	for _, p := range cb.bufs {
		drop[p] = true
		cu.MemFree(p)
	}
	t.bufs = slices.DeleteFunc(t.bufs, func(p cu.DevicePtr) bool { return drop[p] })
	*cb = cbState{forceScratch: cb.forceScratch}
}

// cbUntile enqueues the row-major copy of the tiled matrix w into dst.
func (t *Target) cbUntile(dst cu.DevicePtr, w dweight) error {
	if !w.tiled || w.dt != tensor.BF16 || w.rows%16 != 0 || w.cols%16 != 0 {
		return fmt.Errorf("cuBLAS path: a %dx%d %v matrix that is neither row-major bf16 nor tiled", w.rows, w.cols, w.dt)
	}
	chunks := int64(w.rows) * int64(w.cols) / 8
	return t.pfLaunch("untile", 0, "cb_untile", [3]int{int((chunks + 255) / 256), 1, 1}, [3]int{256, 1, 1}, 0,
		ptr(dst), ptr(w.w), i32(w.rows), i32(w.cols))
}

// cbGemm enqueues out (n, N) f32, rows ldo apart, = x.W^T (+ out when
// add) for x (n, K) bf16 and W (N, K): the row-major w (0: untiled from
// tiled into the scratch first), timed as kind when profiling.
func (t *Target) cbGemm(kind string, out cu.DevicePtr, ldo int, x, w cu.DevicePtr, tiled []dweight, N, K, n int, add bool) error {
	if w == 0 {
		w = t.pf.cb.scratch
		p := w
		for _, m := range tiled {
			if err := t.cbUntile(p, m); err != nil {
				return err
			}
			p += cu.DevicePtr(m.bytes())
		}
	}
	pr := t.pf.prof
	if pr != nil {
		if err := pr.before(t.stream); err != nil {
			return err
		}
	}
	beta := float32(0)
	if add {
		beta = 1
	}
	if err := t.pf.cb.b.gemmRows(out, ldo, x, w, N, K, n, 1, beta); err != nil {
		return err
	}
	if pr != nil {
		return pr.after(t.stream, kind, 2*int64(n)*int64(N)*int64(K))
	}
	return nil
}

// cbLayerRun enqueues layer l of a chunk of n tokens on the cuBLAS path;
// kv and attn are the bf16 mode's cache and attention launches.
func (t *Target) cbLayerRun(l, n int, kv, attn pfStep) error {
	p, c, R := &t.pf, t.cfg, t.ranks[0]
	L, W := &R.m.layers[l], p.cb.layers[l]
	dim, ffn := c.Dim, R.dims.ffn
	prep := func(g cu.DevicePtr) error {
		return t.pfLaunch("prep", 0, "cb_prep", [3]int{n, 1, 1}, [3]int{256, 1, 1}, 0, ptr(p.ah), ptr(p.x), ptr(g), i32(dim), f32(t.eps))
	}
	if err := prep(L.attnNorm); err != nil {
		return err
	}
	if err := t.cbGemm("qkv", p.qkv, R.nqkv, p.ah, W.qkv, []dweight{L.qkv}, L.qkv.rows, L.qkv.cols, n, false); err != nil {
		return err
	}
	for _, s := range []pfStep{kv, attn} {
		if err := t.pfLaunch(s.kind, s.flops, s.name, s.grid, s.blk, s.smem, s.args...); err != nil {
			return err
		}
	}
	if err := t.cbGemm("wo", p.x, dim, p.ah, W.wo, []dweight{L.wo}, L.wo.rows, L.wo.cols, n, true); err != nil {
		return err
	}
	if err := prep(L.ffnNorm); err != nil {
		return err
	}
	gateBytes := cu.DevicePtr(L.gate.bytes())
	if W.gate == 0 || W.up == W.gate+gateBytes { // one product of [Wg; Wu] (the scratch holds them so too)
		if err := t.cbGemm("gate_up", p.cb.gu, 2*ffn, p.ah, W.gate, []dweight{L.gate, L.up}, 2*ffn, dim, n, false); err != nil {
			return err
		}
	} else {
		if err := t.cbGemm("gate_up", p.cb.gu, 2*ffn, p.ah, W.gate, []dweight{L.gate}, ffn, dim, n, false); err != nil {
			return err
		}
		if err := t.cbGemm("gate_up", p.cb.gu+cu.DevicePtr(4*ffn), 2*ffn, p.ah, W.up, []dweight{L.up}, ffn, dim, n, false); err != nil {
			return err
		}
	}
	pairs := n * ffn / 2
	if err := t.pfLaunch("glu", 0, "cb_glu", [3]int{(pairs + 255) / 256, 1, 1}, [3]int{256, 1, 1}, 0,
		ptr(p.hh), ptr(p.cb.gu), i32(ffn), i32(n)); err != nil {
		return err
	}
	return t.cbGemm("down", p.x, dim, p.hh, W.down, []dweight{L.down}, L.down.rows, L.down.cols, n, true)
}

// cbBegin readies the cuBLAS path (cuda-check switches modes on a loaded
// target) and binds the device's handle to the target's stream for a
// chunk's products; call the returned function when they are enqueued.
func (t *Target) cbBegin() (func(), error) {
	if err := t.cbInit(); err != nil {
		return nil, fmt.Errorf("cuBLAS prefill: %w", err)
	}
	blasMu.Lock()
	if err := t.pf.cb.b.setStream(t.stream); err != nil {
		blasMu.Unlock()
		return nil, err
	}
	return blasMu.Unlock, nil
}

// PrefillPath says how this target runs prompts longer than MaxTokens, for
// stats and logs: the prefill mode, and for cuBLAS the library and where
// its row-major weights come from, or why cuBLAS was not used.
func (t *Target) PrefillPath() string {
	p := &t.pf
	mode := p.mode
	if mode == "" {
		mode = t.tune.Prefill
	}
	switch {
	case mode == prefillOff || !t.prefillModel():
		return fmt.Sprintf("off (%d tokens a forward)", MaxTokens)
	case cublasMode(mode) && p.cb.ready:
		how := "weights read as stored (row-major)"
		switch {
		case p.cb.copied > 0:
			how = fmt.Sprintf("row-major copy of the layer weights, %.2f GiB", float64(p.cb.copied)/(1<<30))
		case p.cb.scratch != 0:
			how = "layer weights untiled into a scratch matrix before each product (no room for a copy)"
		}
		return fmt.Sprintf("%s: %s, %s", mode, p.cb.b, how)
	case p.cb.err != nil:
		return fmt.Sprintf("%s (cuBLAS asked for, not used: %v)", mode, p.cb.err)
	}
	return mode
}
