//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// dweight is a weight matrix (rows, cols) in device memory. The
// quantized types (quantized: Q4_K, Q5_K, Q6_K, Q4_0, Q8_0) are uploaded
// as the file stores them, ggml blocks row after row (kernels/quant.cu reads
// them), and qs points at the model's activation scratch (qscratch); a stack
// of quantized matrices of different types (a Q4_K_M file's Q4_K Wq, Wk
// and Q6_K Wv) is kept as parts, each its own matrix, that share one
// quantized activation. Other types are dense row-major in their file
// dtype and s is 0, except tiled bf16 matrices, stored in the tensor-core
// fragment order of tileBF16, and tiled FP8 ones (tileFP8; s their scale
// grid, as row-major FP8's).
type dweight struct {
	dt         tensor.DType
	w, s       cu.DevicePtr
	rows, cols int
	tiled      bool
	qs         *qscratch // quantized: the model's activation scratch (quant.go), at least cols wide
	parts      []dweight // quantized stacks of mixed types: the runs of one type, in row order
	sbytes     int64     // F8_E4M3: the scale grid at s (fp8_layout.go), read with the weights
}

// useTensorCores says whether bf16 layer matrices and the output
// projection are tiled for the tensor-core kernels (tc_*).
// RIGSCOPE_CUDA_TC=0 keeps them row-major on the CUDA-core kernels (mv_*),
// for comparison; RIGSCOPE_CUDA_TCOUT=0 only the output projection (on the
// CUDA cores a verify of 5 re-reads x per 4 rows: llama-8b 241 -> 436 us).
func useTensorCores() bool { t, _ := CurrentTuning(); return t.TensorCores }

func outputOnTensorCores() bool { t, _ := CurrentTuning(); return t.OutputTC }

// tileable: a bf16 matrix whose rows and cols are multiples of 16.
func tileable(dt tensor.DType, rows, cols int) bool {
	return dt == tensor.BF16 && rows%16 == 0 && cols%16 == 0 && useTensorCores()
}

// fp8OnTensorCores is which FP8 layer matrices are tiled for the
// tensor-core kernels (f8tc*) by default (Tuning.F8TC: "", "all" or a
// product kind).
func fp8OnTensorCores() string { t, _ := CurrentTuning(); return t.F8TC }

// fp8Tileable: an FP8 layer matrix of kind whose rows and cols are
// multiples of 16, on a model that tiles that kind.
func (m *dmodel) fp8Tileable(kind string, rows, cols int) bool {
	return (m.fp8TC == "all" || m.fp8TC == kind && kind != "") && rows%16 == 0 && cols%16 == 0
}

// gpuTypes lists the weight types the GPU kernels read, for messages.
const gpuTypes = "BF16, F16, F32, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, F8_E4M3"

// kernelSuffix names the kernel variant for the weight's dtype.
func kernelSuffix(dt tensor.DType) (string, error) {
	switch dt {
	case tensor.BF16:
		return "bf16", nil
	case tensor.F16:
		return "f16", nil
	case tensor.F32:
		return "f32", nil
	case tensor.Q8_0:
		return "q80", nil
	case tensor.Q4_0:
		return "q40", nil
	case tensor.Q4_K:
		return "q4k", nil
	case tensor.Q5_K:
		return "q5k", nil
	case tensor.Q6_K:
		return "q6k", nil
	case tensor.F8_E4M3:
		return "f8", nil
	}
	return "", fmt.Errorf("cuda: weights of type %v are not supported on the GPU (%s are)", dt, gpuTypes)
}

// quantized says whether dt is read by the quantized kernels (quant.cu).
func quantized(dt tensor.DType) bool {
	switch dt {
	case tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		return true
	}
	return false
}

// qxBytes is one activation scratch buffer of rows of cols values
// quantized by qx (quant.cu): int8 (MaxTokens, cols), float2 (MaxTokens,
// cols/16), float sums of squares (MaxTokens, cols/32).
func qxBytes(cols int) int64 { return int64(MaxTokens) * int64(cols) * 13 / 8 } // 1 + 8/16 + 4/32 bytes per value

// qscratchBytes is a qscratch of cols: two buffers and the counters.
func qscratchBytes(cols int) int64 { return 2*qxBytes(cols) + int64(4*(cols/32+1)) }

// bytes is the device memory the weight reads per pass.
func (w dweight) bytes() int64 {
	if len(w.parts) > 0 {
		var n int64
		for _, p := range w.parts {
			n += p.bytes()
		}
		return n
	}
	rb, err := w.dt.Bytes(w.cols)
	if err != nil { // not a whole number of blocks: refused at upload
		return 0
	}
	return int64(w.rows)*int64(rb) + w.sbytes
}

// dlayer is one decoder block on the device.
type dlayer struct {
	attnNorm, ffnNorm cu.DevicePtr // f32 (dim)
	qkv               dweight      // (hq*hd + 2*hk*hd, dim): Wq, Wk, Wv stacked
	wo                dweight      // (dim, hq*hd)
	gate, up          dweight      // (ffn, dim)
	down              dweight      // (dim, ffn)
	bias, qkNorm      cu.DevicePtr // f32 (hq*hd+2*hk*hd) q|k|v biases, (2*hd) q|k head norms; 0 without (arch.go)
	postAttn, postFFN cu.DevicePtr // f32 (dim) Gemma 3's post-attention and post-MLP norms; 0 without
	moe               *dmoe        // an MoE layer's router and experts (moe.go), in place of gate, up, down; nil for a dense MLP
	mla               *dmla        // latent attention's weights (mla.go), in place of qkv; nil without
}

// dmodel is the whole model on one device.
type dmodel struct {
	cfg     model.Config
	fp8TC   string  // F8_E4M3 layer matrices tiled for the tensor cores when tileable: "all" or one product kind (Tuning.F8TC; the checks set it per model)
	emb     dweight // (vocab, dim)
	layers  []dlayer
	outNorm cu.DevicePtr // f32 (dim)
	out     dweight      // (vocab, dim)
	arch    archWeights  // RoPE divisors (arch.go)
	allocs  []cu.DevicePtr
	qs      *qscratch // activation scratch of the quantized products
}

// scratch is the model's activation scratch for quantized products of
// cols columns, allocated (larger) when the one it has is too small.
// Every product of a rank runs on its stream in order, so they share it.
func (m *dmodel) scratch(cols int) (*qscratch, error) {
	if m.qs == nil || m.qs.cols < cols {
		p, err := m.alloc(qscratchBytes(cols))
		if err != nil {
			return nil, err
		}
		b := qxBytes(cols)
		qs := &qscratch{buf: [2]cu.DevicePtr{p, p + cu.DevicePtr(b)}, cnt: p + cu.DevicePtr(2*b), cols: cols}
		if err := cu.MemsetD32(qs.cnt, 0, int64(cols/32+1)); err != nil {
			return nil, fmt.Errorf("cuda: clear the quantization counters: %w", err)
		}
		m.qs = qs
	}
	return m.qs, nil
}

func (m *dmodel) alloc(n int64) (cu.DevicePtr, error) {
	p, err := cu.MemAlloc(n)
	if err != nil {
		return 0, fmt.Errorf("cuda: cuMemAlloc(%d bytes): %w", n, err)
	}
	m.allocs = append(m.allocs, p)
	return p, nil
}

func (m *dmodel) upload(b []byte) (cu.DevicePtr, error) {
	p, err := m.alloc(int64(len(b)))
	if err != nil {
		return 0, err
	}
	if err := cu.MemcpyHtoD(p, unsafe.Pointer(&b[0]), int64(len(b))); err != nil {
		return 0, fmt.Errorf("cuda: upload %d bytes: %w", len(b), err)
	}
	return p, nil
}

func (m *dmodel) free() {
	for _, p := range m.allocs {
		cu.MemFree(p)
	}
	m.allocs = nil
}

// denseRows returns the tensor's rows packed densely (views of shards have a stride).
func denseRows(t *tensor.Tensor) []byte {
	rb := t.RowBytes()
	if t.Stride == 0 || t.Stride == rb {
		return t.Data[:t.Rows()*rb]
	}
	out := make([]byte, 0, t.Rows()*rb)
	for r := 0; r < t.Rows(); r++ {
		out = append(out, t.Row(r)...)
	}
	return out
}

// uploadMatrix stacks the tensors' rows (same dtype and cols) into one
// device matrix (quantized types as stored).
func (m *dmodel) uploadMatrix(ts ...*tensor.Tensor) (dweight, error) {
	return m.uploadStacked(false, "", ts...)
}

// uploadLayerMatrix is uploadMatrix for the matrices of the decoder
// layers, which go to the tensor-core kernels when tileable (FP8 ones
// where the model tiles their kind: qkv, wo, gate_up, down, or "" for
// others).
func (m *dmodel) uploadLayerMatrix(kind string, ts ...*tensor.Tensor) (dweight, error) {
	return m.uploadStacked(true, kind, ts...)
}

func (m *dmodel) uploadStacked(tile bool, kind string, ts ...*tensor.Tensor) (dweight, error) {
	dt, cols := ts[0].DType, ts[0].Cols()
	rows := 0
	mixed := false
	for _, t := range ts {
		if _, err := kernelSuffix(t.DType); err != nil {
			return dweight{}, fmt.Errorf("%w (tensor %q)", err, t.Name)
		}
		if t.Cols() != cols || t.DType != dt && !(quantized(t.DType) && quantized(dt)) {
			return dweight{}, fmt.Errorf("cuda: cannot stack %q (%v, %d cols) with %q (%v, %d cols)", t.Name, t.DType, t.Cols(), ts[0].Name, dt, cols)
		}
		if _, err := t.DType.Bytes(cols); err != nil {
			return dweight{}, fmt.Errorf("cuda: tensor %q: rows of %d: %w", t.Name, cols, err)
		}
		mixed = mixed || t.DType != dt
		rows += t.Rows()
	}
	need := colsMultiple(dt, tile && tileable(dt, rows, cols))
	if dt == tensor.F8_E4M3 {
		need = fp8Cols
	}
	if cols%need != 0 {
		return dweight{}, fmt.Errorf("cuda: tensor %q (%v) has %d columns; the GPU kernels need a multiple of %d", ts[0].Name, dt, cols, need)
	}
	if mixed { // runs of one type, each its own matrix
		w := dweight{dt: dt, rows: rows, cols: cols}
		for i := 0; i < len(ts); {
			j := i + 1
			for j < len(ts) && ts[j].DType == ts[i].DType {
				j++
			}
			p, err := m.uploadStacked(false, "", ts[i:j]...)
			if err != nil {
				return w, err
			}
			w.parts = append(w.parts, p)
			w.qs = p.qs
			i = j
		}
		return w, nil
	}
	w := dweight{dt: dt, rows: rows, cols: cols}
	var all []byte
	for _, t := range ts {
		all = append(all, denseRows(t)...)
	}
	var err error
	if quantized(dt) { // as stored; the products quantize x into the scratch
		if w.qs, err = m.scratch(cols); err != nil {
			return w, err
		}
		all = append(all, make([]byte, quantPad)...)
	} else if tile && tileable(dt, rows, cols) {
		all, w.tiled = tileBF16(all, rows, cols), true
	} else if dt == tensor.F8_E4M3 {
		grid, err := fp8ScaleGrid(ts)
		if err != nil {
			return w, err
		}
		if w.s, err = m.upload(grid); err != nil {
			return w, err
		}
		w.sbytes = int64(len(grid))
		if tile && m.fp8Tileable(kind, rows, cols) {
			all, w.tiled = tileFP8(all, rows, cols), true
		}
	}
	w.w, err = m.upload(all)
	return w, err
}

func (m *dmodel) uploadVec(v []float32) (cu.DevicePtr, error) {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], mathFloat32bits(f))
	}
	return m.upload(b)
}

// matrices lists w's weight matrices.
func matrices(w *model.Weights) []*tensor.Tensor {
	ts := []*tensor.Tensor{w.TokEmbd, w.Output}
	for i := range w.Layers {
		L := &w.Layers[i]
		if a := L.MLA; a != nil { // latent attention's products (mla.go)
			ts = append(ts, a.QA, a.KVA, a.QB, L.Wo)
		} else {
			ts = append(ts, L.Wq, L.Wk, L.Wv, L.Wo)
		}
		if L.MoE == nil { // an MoE layer's routed experts: expertTensors (moe.go)
			ts = append(ts, L.Gate, L.Up, L.Down)
		} else if L.MoE.SharedGate != nil { // its shared expert runs on the dense MLP's kernels
			ts = append(ts, L.MoE.SharedGate, L.MoE.SharedUp, L.MoE.SharedDown)
		}
	}
	return ts
}

// quantCols is the widest row among w's quantized matrices (0: none): the
// size of the model's activation scratch.
func quantCols(w *model.Weights) int {
	n := 0
	for _, t := range matrices(w) {
		if quantized(t.DType) {
			n = max(n, t.Cols())
		}
	}
	return n
}

// checkTypes refuses, by tensor and type, weights the GPU kernels do not
// read, and quantized rows that are not a whole number of blocks.
func checkTypes(w *model.Weights) error {
	for _, t := range matrices(w) {
		if _, err := kernelSuffix(t.DType); err != nil {
			return fmt.Errorf("%w (tensor %q)", err, t.Name)
		}
		if _, err := t.DType.Bytes(t.Cols()); err != nil {
			return fmt.Errorf("cuda: tensor %q: %w", t.Name, err)
		}
	}
	return checkExperts(w) // moe.go
}

// modelBytes estimates the device memory of w's weights once uploaded
// (quantized ones as stored, plus their activation scratch).
func modelBytes(w *model.Weights) int64 {
	var n int64
	for _, t := range matrices(w) {
		n += dweight{dt: t.DType, rows: t.Rows(), cols: t.Cols()}.bytes()
	}
	if c := quantCols(w); c > 0 {
		n += qscratchBytes(c)
	}
	return n + expertBytes(w) + mlaBytes(w) // moe.go, mla.go
}

// uploadModel copies one rank's weights to the current device.
func uploadModel(w *model.Weights) (*dmodel, error) {
	m := &dmodel{cfg: w.Cfg, fp8TC: fp8OnTensorCores()}
	var err error
	fail := func(e error) (*dmodel, error) { m.free(); return nil, e }
	if c := quantCols(w); c > 0 { // one scratch for every quantized product
		if _, err := m.scratch(c); err != nil {
			return fail(err)
		}
	}
	if m.emb, err = m.uploadMatrix(w.TokEmbd); err != nil {
		return fail(err)
	}
	if m.out, err = m.uploadStacked(outputOnTensorCores(), "", w.Output); err != nil {
		return fail(err)
	}
	if m.outNorm, err = m.uploadVec(w.OutNorm); err != nil {
		return fail(err)
	}
	m.arch = archWeights{ropeDiv: w.RopeDivisors, localRopeDiv: w.LocalRopeDivisors}
	m.layers = make([]dlayer, len(w.Layers))
	for i := range w.Layers {
		L, D := &w.Layers[i], &m.layers[i]
		if D.attnNorm, err = m.uploadVec(L.AttnNorm); err != nil {
			return fail(err)
		}
		if err = m.uploadArch(L, D); err != nil {
			return fail(err)
		}
		if D.ffnNorm, err = m.uploadVec(L.FFNNorm); err != nil {
			return fail(err)
		}
		if L.MLA != nil { // mla.go
			if D.mla, err = m.uploadMLA(L.MLA); err != nil {
				return fail(fmt.Errorf("cuda: layer %d latent attention: %w", i, err))
			}
		} else if D.qkv, err = m.uploadLayerMatrix("qkv", L.Wq, L.Wk, L.Wv); err != nil {
			return fail(err)
		}
		if D.wo, err = m.uploadLayerMatrix("wo", L.Wo); err != nil {
			return fail(err)
		}
		if L.MoE != nil { // moe.go
			if D.moe, err = m.uploadMoE(L.MoE, w.Cfg.Dim); err != nil {
				return fail(fmt.Errorf("cuda: layer %d experts: %w", i, err))
			}
			continue
		}
		if D.gate, err = m.uploadLayerMatrix("gate_up", L.Gate); err != nil {
			return fail(err)
		}
		if D.up, err = m.uploadLayerMatrix("gate_up", L.Up); err != nil {
			return fail(err)
		}
		if D.down, err = m.uploadLayerMatrix("down", L.Down); err != nil {
			return fail(err)
		}
	}
	return m, nil
}

// syntheticModel makes a bf16 model (one rank's shard sh of cfg's shape) directly on the device
// (uniform random weights from seed, norms near 1): for benchmarks, where
// generating billions of weights on the CPU would take minutes. With dt
// F8_E4M3 the layer matrices are e4m3 with 128x128 block scales (as
// DeepSeek-V3 and Qwen3 FP8 files; the embedding and output stay bf16, as
// FP8 releases keep lm_head), the same values' range at e4m3's precision.
func syntheticModel(d *Device, cfg model.Config, sh shardDims, seed uint32, dt tensor.DType) (*dmodel, error) {
	m := &dmodel{cfg: cfg, fp8TC: fp8OnTensorCores()}
	s := d.newStream0()
	fillBF16, err := d.fn("fill_bf16")
	if err != nil {
		return nil, err
	}
	fillF32, err := d.fn("fill_f32")
	if err != nil {
		return nil, err
	}
	// mat fills a (rows, cols) bf16 matrix; tile marks layer matrices for
	// the tensor-core kernels (the values are random, so the order of the
	// elements does not matter).
	fillF8, err := d.fn("fill_f8")
	if err != nil {
		return nil, err
	}
	mat := func(rows, cols int, tile bool) (dweight, error) {
		w := dweight{dt: tensor.BF16, rows: rows, cols: cols, tiled: tile && tileable(tensor.BF16, rows, cols)}
		p, err := m.alloc(w.bytes())
		if err != nil {
			return w, err
		}
		w.w = p
		seed++
		a := float32(1.7 / sqrtf(float64(cols)))
		return w, launch(fillBF16, [3]int{4 * d.SMs, 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(p), i64(rows*cols), uint64(seed), f32(a))
	}
	layerMat := func(kind string, rows, cols int) (dweight, error) {
		if dt == tensor.F8_E4M3 {
			return m.syntheticFP8(fillF8, s, d.SMs, kind, rows, cols, &seed)
		}
		return mat(rows, cols, true)
	}
	vec := func(n int) (cu.DevicePtr, error) {
		p, err := m.alloc(int64(4 * n))
		if err != nil {
			return 0, err
		}
		seed++
		return p, launch(fillF32, [3]int{d.SMs, 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(p), i64(n), uint64(seed), f32(0.1), f32(1))
	}
	fail := func(e error) (*dmodel, error) { m.free(); return nil, e }
	hd := cfg.HeadDim
	if m.emb, err = mat(cfg.Vocab, cfg.Dim, false); err != nil {
		return fail(err)
	}
	if m.out, err = mat(sh.vocab, cfg.Dim, outputOnTensorCores()); err != nil {
		return fail(err)
	}
	if m.outNorm, err = vec(cfg.Dim); err != nil {
		return fail(err)
	}
	m.layers = make([]dlayer, cfg.Layers)
	for i := range m.layers {
		D := &m.layers[i]
		steps := []func() error{
			func() (e error) { D.attnNorm, e = vec(cfg.Dim); return },
			func() (e error) { D.ffnNorm, e = vec(cfg.Dim); return },
		}
		if cfg.MLA.Enabled() { // mla.go
			steps = append(steps,
				func() (e error) {
					D.mla, e = syntheticMLA(cfg, sh.hq, func(rows, cols int) (dweight, error) { return layerMat("qkv", rows, cols) }, vec)
					return
				},
				func() (e error) { D.wo, e = layerMat("wo", cfg.Dim, sh.hq*cfg.MLA.VDim); return })
		} else {
			steps = append(steps,
				func() (e error) { D.qkv, e = layerMat("qkv", (sh.hq+2*sh.hk)*hd, cfg.Dim); return },
				func() (e error) { D.wo, e = layerMat("wo", cfg.Dim, sh.hq*hd); return })
		}
		if cfg.MoE.Sparse(i) { // moe.go (bf16 experts; an FP8 synthetic MoE is not built)
			steps = append(steps, func() (e error) { D.moe, e = syntheticMoE(cfg, sh.moeFFN, sh.moeShared, mat, vec); return })
		} else {
			steps = append(steps,
				func() (e error) { D.gate, e = layerMat("gate_up", sh.ffn, cfg.Dim); return },
				func() (e error) { D.up, e = layerMat("gate_up", sh.ffn, cfg.Dim); return },
				func() (e error) { D.down, e = layerMat("down", cfg.Dim, sh.ffn); return })
		}
		for _, f := range steps {
			if err := f(); err != nil {
				return fail(err)
			}
		}
	}
	if err := m.syntheticArch(cfg, sh, vec); err != nil {
		return fail(err)
	}
	if err := s.Synchronize(); err != nil {
		return fail(fmt.Errorf("cuda: synthetic weights: %w", err))
	}
	return m, nil
}

// weightBytes is what one full pass reads from the weights (the
// embedding contributes one row per token, not counted).
func (m *dmodel) weightBytes() int64 {
	n := m.out.bytes()
	for _, L := range m.layers {
		n += L.qkv.bytes() + L.wo.bytes() + L.gate.bytes() + L.up.bytes() + L.down.bytes() + L.moe.activeBytes(m.cfg) + L.mla.bytes()
	}
	return n
}
