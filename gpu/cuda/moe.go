//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// The sparse mixture-of-experts MLP on the GPU (Mixtral, Qwen3-MoE,
// DeepSeek-V3; the kernels are kernels/moe.cu, the oracle
// engine/model/moe_forward.go): three kernels per layer and rank, all on
// the device, so the step stays one CUDA graph, plus the shared expert's
// two products when the model has one:
//
//	shared     so = Down_s·(silu(Gate_s·xn) ⊙ (Up_s·xn)), xn = RMSNorm(x; ffn_norm)
//	           (the dense MLP's glu and matvec kernels)
//	moe_logits logits = router·RMSNorm(x; ffn_norm), (E/8, T) blocks
//	moe_route  xn = RMSNorm(x; ffn_norm), from the logits softmax or
//	           sigmoid scores (+ the correction bias, grouped: choosing
//	           only), top k, weights -> ids, wts (T, k) in device memory
//	moe_glu    h[t,j] = silu(gate_e·xn[t]) ⊙ (up_e·xn[t]), e = ids[t,j]
//	moe_down   x[t] += so[t] + Σ_j wts[t,j]·(down_e·h[t,j]), j ascending
//	           (expert id), summed from so: the CPU's order
//
// Only the chosen experts' rows are read (the kernels index the stacked
// experts by the ids in device memory). At TP > 1 every rank holds its
// FFN-column slice of every expert (model.MoELayer), routes every token
// itself (the router is replicated and x is the same on every rank),
// writes its partial sums to R.part, and joinRanks adds their sum to x:
// the one allreduce of the block.

// dmoe is one MoE layer of one rank on the device.
type dmoe struct {
	router cu.DevicePtr // f32 (experts, dim), replicated
	dt     tensor.DType // the experts' type: BF16, F16 or F32
	gate   cu.DevicePtr // (experts·fl, dim): expert e's rows at e·fl
	up     cu.DevicePtr // (experts·fl, dim)
	down   cu.DevicePtr // (experts·dim, fl): expert e's rows at e·dim
	fl     int          // this rank's expert FFN columns
	expert int64        // bytes of one expert's gate, up and down
	bias   cu.DevicePtr // f32 (experts) the score correction bias; 0 without

	// The shared expert (this rank's sl columns), on the dense MLP's
	// kernels; sl 0 without.
	sgate, sup dweight // (sl, dim)
	sdown      dweight // (dim, sl)
	sl         int
}

// moeBufs is a rank's MoE scratch, sized for MaxTokens.
type moeBufs struct {
	xn  cu.DevicePtr // (MaxTokens, dim) f32 normed activations
	ids cu.DevicePtr // (MaxTokens, k) int32 chosen experts, ascending
	wts cu.DevicePtr // (MaxTokens, k) f32 their weights
	h   cu.DevicePtr // (MaxTokens·k, fl) f32 the experts' GLU outputs
	lg  cu.DevicePtr // (MaxTokens, experts) f32 the router's logits (moe_logits)
	sh  cu.DevicePtr // (MaxTokens, sl) f32 the shared expert's GLU output; 0 without
	so  cu.DevicePtr // (MaxTokens, dim) f32 the shared expert's output; 0 without
}

// expertTensors lists w's MoE tensors (routers and experts).
func expertTensors(w *model.Weights) []*tensor.Tensor {
	var ts []*tensor.Tensor
	for i := range w.Layers {
		if L := w.Layers[i].MoE; L != nil {
			ts = append(ts, L.Router)
			ts = append(ts, L.Gate...)
			ts = append(ts, L.Up...)
			ts = append(ts, L.Down...)
		}
	}
	return ts
}

// checkExperts refuses, by tensor and type, experts the MoE kernels do not
// read (quantized experts: BF16, F16 and F32 are read).
func checkExperts(w *model.Weights) error {
	for i := range w.Layers {
		L := w.Layers[i].MoE
		if L == nil {
			continue
		}
		for _, ts := range [][]*tensor.Tensor{L.Gate, L.Up, L.Down} {
			for _, t := range ts {
				if !expertType(t.DType) {
					return fmt.Errorf("cuda: expert tensor %q is %v; the GPU's expert kernels read BF16, F16 and F32 (run this model with --device cpu)", t.Name, t.DType)
				}
			}
		}
		if L.Router.DType != tensor.F32 && !expertType(L.Router.DType) && !quantized(L.Router.DType) {
			return fmt.Errorf("cuda: router tensor %q is %v, which the GPU does not read", L.Router.Name, L.Router.DType)
		}
	}
	return nil
}

func expertType(dt tensor.DType) bool {
	return dt == tensor.BF16 || dt == tensor.F16 || dt == tensor.F32
}

// expertBytes is the device memory of w's routers (as f32) and experts.
func expertBytes(w *model.Weights) int64 {
	var n int64
	for i := range w.Layers {
		if L := w.Layers[i].MoE; L != nil {
			n += 4 * int64(L.Router.Elems())
			for e := range L.Gate {
				n += tensorBytes(L.Gate[e]) + tensorBytes(L.Up[e]) + tensorBytes(L.Down[e])
			}
		}
	}
	return n
}

func tensorBytes(t *tensor.Tensor) int64 {
	b, err := t.DType.Bytes(t.Elems())
	if err != nil {
		return 0
	}
	return int64(b)
}

// uploadMoE copies MoE layer L (this rank's slice) to the device: the
// router as f32, each of gate, up and down with its experts stacked.
func (m *dmodel) uploadMoE(L *model.MoELayer, dim int) (*dmoe, error) {
	E := len(L.Gate)
	if E == 0 || len(L.Up) != E || len(L.Down) != E {
		return nil, fmt.Errorf("MoE layer with %d gate, %d up, %d down experts", len(L.Gate), len(L.Up), len(L.Down))
	}
	D := &dmoe{dt: L.Gate[0].DType, fl: L.FFNHi - L.FFNLo}
	if L.Router.Rows() != E || L.Router.Cols() != dim {
		return nil, fmt.Errorf("router %q is (%d, %d), want (%d, %d)", L.Router.Name, L.Router.Rows(), L.Router.Cols(), E, dim)
	}
	r := make([]float32, E*dim)
	for e := range E {
		cpu.DequantRow(r[e*dim:(e+1)*dim], L.Router, e)
	}
	var err error
	if D.router, err = m.uploadVec(r); err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	stack := func(what string, ts []*tensor.Tensor, rows, cols int) (cu.DevicePtr, error) {
		var all []byte
		for _, t := range ts {
			if t.DType != D.dt || t.Rows() != rows || t.Cols() != cols {
				return 0, fmt.Errorf("expert %s %q is %v (%d, %d); want %v (%d, %d) like the layer's first", what, t.Name, t.DType, t.Rows(), t.Cols(), D.dt, rows, cols)
			}
			all = append(all, denseRows(t)...)
		}
		return m.upload(all)
	}
	if D.gate, err = stack("gate", L.Gate, D.fl, dim); err != nil {
		return nil, err
	}
	if D.up, err = stack("up", L.Up, D.fl, dim); err != nil {
		return nil, err
	}
	if D.down, err = stack("down", L.Down, dim, D.fl); err != nil {
		return nil, err
	}
	D.expert = tensorBytes(L.Gate[0]) + tensorBytes(L.Up[0]) + tensorBytes(L.Down[0])
	if L.ScoreBias != nil {
		if len(L.ScoreBias) != E {
			return nil, fmt.Errorf("score correction bias of %d experts, want %d", len(L.ScoreBias), E)
		}
		if D.bias, err = m.uploadVec(L.ScoreBias); err != nil {
			return nil, fmt.Errorf("score correction bias: %w", err)
		}
	}
	if L.SharedGate != nil {
		D.sl = L.SharedHi - L.SharedLo
		if D.sgate, err = m.uploadLayerMatrix("gate_up", L.SharedGate); err != nil {
			return nil, fmt.Errorf("shared expert: %w", err)
		}
		if D.sup, err = m.uploadLayerMatrix("gate_up", L.SharedUp); err != nil {
			return nil, fmt.Errorf("shared expert: %w", err)
		}
		if D.sdown, err = m.uploadLayerMatrix("down", L.SharedDown); err != nil {
			return nil, fmt.Errorf("shared expert: %w", err)
		}
	}
	return D, nil
}

// syntheticMoE makes an MoE layer's bf16 experts (fl columns of each on
// this rank), f32 router, score bias (when cfg has one) and shared expert
// (sl columns on this rank; 0: none) on the device, from mat and vec
// (syntheticModel's random fills), for benchmarks.
func syntheticMoE(cfg model.Config, fl, sl int, mat func(rows, cols int, tile bool) (dweight, error), vec func(n int) (cu.DevicePtr, error)) (*dmoe, error) {
	E, dim := cfg.MoE.Experts, cfg.Dim
	if fl <= 0 {
		return nil, fmt.Errorf("cuda: synthetic MoE layer with %d expert columns on a rank", fl)
	}
	D := &dmoe{dt: tensor.BF16, fl: fl, expert: 2 * 3 * int64(fl) * int64(dim)}
	var err error
	if D.router, err = vec(E * dim); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		dst        *cu.DevicePtr
		rows, cols int
	}{{&D.gate, E * fl, dim}, {&D.up, E * fl, dim}, {&D.down, E * dim, fl}} {
		w, err := mat(p.rows, p.cols, false)
		if err != nil {
			return nil, err
		}
		*p.dst = w.w
	}
	if cfg.MoE.ScoreBias {
		if D.bias, err = vec(E); err != nil {
			return nil, err
		}
	}
	if sl > 0 {
		D.sl = sl
		for _, p := range []struct {
			dst        *dweight
			rows, cols int
		}{{&D.sgate, sl, dim}, {&D.sup, sl, dim}, {&D.sdown, dim, sl}} {
			if *p.dst, err = mat(p.rows, p.cols, true); err != nil {
				return nil, err
			}
		}
	}
	return D, nil
}

// allocMoE gives every rank of an MoE model its scratch (moeBufs).
func (t *Target) allocMoE() error {
	k := t.cfg.MoE.PerToken
	var err error
	for _, R := range t.ranks {
		alloc := t.allocOn(R.rd, &err) // on the rank's GPU
		fl, sl := 0, 0
		for _, L := range R.m.layers {
			if L.moe != nil {
				fl, sl = max(fl, L.moe.fl), max(sl, L.moe.sl)
			}
		}
		if fl == 0 {
			continue
		}
		R.moe = moeBufs{
			xn:  alloc(4 * int64(MaxTokens*t.cfg.Dim)),
			ids: alloc(4 * int64(MaxTokens*k)),
			wts: alloc(4 * int64(MaxTokens*k)),
			h:   alloc(4 * int64(MaxTokens*k*fl)),
			lg:  alloc(4 * int64(MaxTokens*t.cfg.MoE.Experts)),
		}
		if sl > 0 {
			R.moe.sh = alloc(4 * int64(MaxTokens*sl))
			R.moe.so = alloc(4 * int64(MaxTokens*t.cfg.Dim))
		}
		if err != nil || R.moe.xn == 0 || R.moe.ids == 0 || R.moe.wts == 0 || R.moe.h == 0 || R.moe.lg == 0 || (sl > 0 && (R.moe.sh == 0 || R.moe.so == 0)) {
			return fmt.Errorf("cuda: MoE scratch of rank %d: allocation failed: %v", R.r, err)
		}
	}
	return nil
}

// moeBlock enqueues layer l's MoE block for rank R on T tokens: into x
// itself at TP 1, into R.part (this rank's partial sums) at TP > 1.
func (t *Target) moeBlock(R *rankState, l, T int) error {
	c := t.cfg
	L := &R.m.layers[l]
	D := L.moe
	if D == nil {
		return fmt.Errorf("cuda: layer %d has no experts on the device", l)
	}
	suf, err := kernelSuffix(D.dt)
	if err != nil || quantized(D.dt) {
		return fmt.Errorf("cuda: layer %d: experts of type %v are not read by the GPU's expert kernels", l, D.dt)
	}
	dim, E, k := c.Dim, c.MoE.Experts, c.MoE.PerToken
	B := R.moe
	var so cu.DevicePtr // the shared expert's output, which moe_down starts each sum from (0: none)
	if D.sl > 0 {
		// so = Down_s·(silu(Gate_s·xn) ⊙ (Up_s·xn)), the FFN norm fused (the
		// dense MLP's kernels: SiLU, as the CPU's moeBlock).
		t.gelu = false
		if err := t.glu(B.sh, 0, R.x, D.sgate, D.sup, T, L.ffnNorm); err != nil {
			return err
		}
		if err := t.matvec("down_shexp", B.so, dim, B.sh, 0, D.sdown, T, 0, 0); err != nil {
			return err
		}
		so = B.so
	}
	norm, sig := 0, 0
	if c.MoE.NormTopK {
		norm = 1
	}
	if c.MoE.Scoring == model.ScoreSigmoid {
		sig = 1
	}
	groups := c.MoE.Groups
	if groups < 2 {
		groups = 0
	}
	const warps = 8 // moe.cu's MOE_WARPS
	// The router's logits by (E/8, T) blocks (one block per token would
	// read the E·dim router alone), then the choice per token.
	if err := t.kernel("moe_logits", int64(4*E*dim), "moe_logits", [3]int{(E + warps - 1) / warps, T, 1}, [3]int{32 * warps, 1, 1},
		ptr(B.lg), ptr(R.x), ptr(L.ffnNorm), ptr(D.router), i32(dim), i32(E), f32(t.eps)); err != nil {
		return err
	}
	if err := t.kernel("moe_route", 0, "moe_route", [3]int{T, 1, 1}, [3]int{256, 1, 1},
		ptr(B.xn), ptr(B.ids), ptr(B.wts), ptr(R.x), ptr(L.ffnNorm), ptr(D.router),
		i32(dim), i32(E), i32(k), i32(norm), f32(c.MoE.RoutedScale), f32(t.eps),
		i32(sig), ptr(D.bias), i32(groups), i32(c.MoE.TopKGroups), ptr(B.lg)); err != nil {
		return err
	}
	active := int64(T*k) * D.expert // an upper bound: tokens may share experts
	if err := t.kernel("moe_glu", active*2/3, "moe_glu_"+suf, [3]int{(D.fl + warps - 1) / warps, T * k, 1}, [3]int{32 * warps, 1, 1},
		ptr(B.h), ptr(B.ids), ptr(B.xn), ptr(D.gate), ptr(D.up), i32(dim), i32(D.fl), i32(k)); err != nil {
		return err
	}
	out, add := R.x, 1
	if len(t.ranks) > 1 {
		out, add = R.part, 0
	}
	return t.kernel("moe_down", active/3, "moe_down_"+suf, [3]int{(dim + warps - 1) / warps, T, 1}, [3]int{32 * warps, 1, 1},
		ptr(out), ptr(B.ids), ptr(B.wts), ptr(B.h), ptr(D.down), i32(dim), i32(D.fl), i32(k), i32(add), ptr(so))
}

// activeBytes is what one decode token reads of the layer's experts and
// router: k routed experts, the router and the shared expert.
func (D *dmoe) activeBytes(cfg model.Config) int64 {
	if D == nil {
		return 0
	}
	return int64(cfg.MoE.PerToken)*D.expert + 4*int64(cfg.MoE.Experts*cfg.Dim) + D.sgate.bytes() + D.sup.bytes() + D.sdown.bytes()
}
