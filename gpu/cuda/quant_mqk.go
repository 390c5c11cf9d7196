//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// Q4_K and Q6_K products with x in Q8_K on the int8 tensor cores
// (kernels/quant_mqk.cu; RIGSCOPE_CUDA_MQK=4|8|16, experimental, off by
// default): qk_x quantizes x (T, cols) (with a fused RMSNorm: rmsnorm(x) *
// g) to Q8_K, one float scale per 256 as the CPU's k-quant products do,
// into the matrix's activation scratch; then mqk_* (store, add) or mqkg_*
// (the GLU) combine each weight block with it in integers, so the float
// work per weight no longer grows with T. A process runs them at every T
// for every Q4_K or Q6_K matrix (stacks of them too), so a verify's rows are
// bitwise the decode's. As with the fp16 path (quant_mh.go), such a
// product reads float x: it neither reads a quantized x nor quantizes its
// output (qin, qfuse), and readsQX tells the producers of its x.

// mqkOn says whether w's products (each part of a stack) run on mqk.
func (t *launcher) mqkOn(w dweight) bool {
	if t.tune.MQK == 0 || w.qs == nil || w.cols%256 != 0 {
		return false
	}
	for _, p := range stackParts(w) {
		if p.dt != tensor.Q4_K && p.dt != tensor.Q6_K {
			return false
		}
	}
	return true
}

// mqkX is x (T, cols) in Q8_K in a matrix's activation scratch (qk_x in
// kernels/quant_mqk.cu): q (MaxTokens, cols) int8, d (MaxTokens, cols/256)
// float32, sums per 32 and per 16 (MaxTokens, cols/32 and cols/16) int16;
// 1.2 bytes a column a token, within one qxBytes buffer.
type mqkX struct{ q, d, s32, s16 cu.DevicePtr }

func mqkXPtrs(buf cu.DevicePtr, cols int) mqkX {
	q := buf
	d := q + cu.DevicePtr(MaxTokens*cols)
	s32 := d + cu.DevicePtr(4*MaxTokens*cols/256)
	return mqkX{q, d, s32, s32 + cu.DevicePtr(2*MaxTokens*cols/32)}
}

// mqkQuantize launches qk_x for x (T, w.cols), with norm's RMSNorm when
// set, into w's scratch buffer 0.
func (t *launcher) mqkQuantize(x cu.DevicePtr, w dweight, T int, norm cu.DevicePtr) (mqkX, error) {
	xq := mqkXPtrs(w.qs.buf[0], w.cols)
	err := t.kernel("quantx", 0, "qk_x", [3]int{w.cols / 256, T, 1}, [3]int{256, 1, 1},
		ptr(x), i32(w.cols), ptr(xq.q), ptr(xq.d), ptr(xq.s32), ptr(xq.s16), ptr(norm), f32(t.eps))
	return xq, err
}

// mqkName is the kernel (prefix mqk or mqkg) of a dt product at T tokens
// in blocks of warps warps, each loading U super-blocks at a time (the GLU
// has U 1 only).
func mqkName(prefix string, dt tensor.DType, T, warps, U int) string {
	nt, suf := 8, "q4k"
	if T > 8 {
		nt = 16
	}
	if dt == tensor.Q6_K {
		suf = "q6k"
	}
	if prefix == "mqkg" {
		return fmt.Sprintf("mqkg_%s_%d_w%d", suf, nt, warps)
	}
	return fmt.Sprintf("mqk_%s_%d_w%d_u%d", suf, nt, warps, U)
}

// mqkShape is the block shape of a product of a (rows, cols) dt matrix
// (glu: the gate and up pair) at T tokens: W warps a block, U super-blocks
// a warp loads at a time. W fixes a row's float chain (warp s adds
// super-blocks s, s + W, ...), so it depends on the matrix only, never on
// T; U does not change the bits. Tuning.MQK 4, 8 or 16 is W for every
// matrix, U 1. With auto, from the kernel table of bench/cuda/results/s35
// (m1, H100, llama-8b shapes, T = 1 and 5): the GLU in blocks of 4 warps
// (26.1 against 28.4 us at T = 1, 33.4 against 37.0 at T = 5), Q6_K
// matrices wider than deep too (qkv: 10.8 against 12.3, 17.1 against 21.1
// with U 2), square Q4_K ones (wo) with U 2 past one token (7.0 against
// 7.7 us at T = 5), everything else 8 warps, U 1.
func (t *launcher) mqkShape(dt tensor.DType, rows, cols int, glu bool, T int) (W, U int) {
	if t.tune.MQK != mqkAuto {
		return t.tune.MQK, 1
	}
	switch {
	case glu:
		return 4, 1
	case dt == tensor.Q6_K && rows > cols:
		return 4, min(T, 2)
	case dt == tensor.Q4_K && rows == cols:
		return 8, min(T, 2)
	}
	return 8, 1
}

// mqkKernel is the launcher's kernel for a product of shape (W, U) at T
// tokens: at one token its dp4a twin (mqk1_q4k_wW, mqkg1_q4k_wW,
// mqk1_q6k_wW: the same integer sums and float chain per row, so the same
// bits) unless Tuning.MQK1 is off.
func (t *launcher) mqkKernel(prefix string, dt tensor.DType, T, W, U int) string {
	if T == 1 && t.tune.MQK1 {
		return mqk1Name(prefix, dt, W)
	}
	return mqkName(prefix, dt, T, W, U)
}

// mqk1Name is the one-token twin of mqkName(prefix, dt, 1, warps, U).
func mqk1Name(prefix string, dt tensor.DType, warps int) string {
	suf := "q4k"
	if dt == tensor.Q6_K {
		suf = "q6k"
	}
	return fmt.Sprintf("%s1_%s_w%d", prefix, suf, warps)
}

// mqkMatvec is qmatvec on mqk (mqkOn(w)): out (T, ldo) [+]= x (T, cols) .
// w^T, x rmsnorm(x, norm) when norm is set; the parts of a stack write
// their columns of out from the one Q8_K x.
func (t *launcher) mqkMatvec(cat string, out cu.DevicePtr, ldo int, x cu.DevicePtr, w dweight, T, mode int, norm cu.DevicePtr) error {
	t.qfuse, t.qin = nil, qready{}
	xq, err := t.mqkQuantize(x, w, T, norm)
	if err != nil {
		return err
	}
	row := 0
	for _, p := range stackParts(w) {
		W, U := t.mqkShape(p.dt, p.rows, p.cols, false, T)
		s := xq.s32
		if p.dt == tensor.Q6_K {
			s = xq.s16
		}
		err := t.kernel(cat, p.bytes(), t.mqkKernel("mqk", p.dt, T, W, U), [3]int{(p.rows + 15) / 16, 1, 1}, [3]int{32 * W, 1, 1},
			ptr(out+cu.DevicePtr(4*row)), i32(ldo), ptr(xq.q), ptr(xq.d), ptr(s), ptr(p.w), i32(p.rows), i32(p.cols), i32(T), i32(mode))
		if err != nil {
			return err
		}
		row += p.rows
	}
	return nil
}

// mqkGLU is qglu on mqk (Q4_K gate and up): out (T, rows) =
// act(rmsnorm(x).g^T) * (rmsnorm(x).u^T) in one mqkg_* launch.
func (t *launcher) mqkGLU(out, x cu.DevicePtr, g, u dweight, T int, norm cu.DevicePtr, act int) error {
	t.qfuse, t.qin = nil, qready{}
	W, U := t.mqkShape(g.dt, g.rows, g.cols, true, T)
	xq, err := t.mqkQuantize(x, g, T, norm)
	if err != nil {
		return err
	}
	return t.kernel("gate_up", g.bytes()+u.bytes(), t.mqkKernel("mqkg", g.dt, T, W, U), [3]int{(g.rows + 15) / 16, 1, 1}, [3]int{32 * W, 1, 1},
		ptr(out), i32(g.rows), ptr(xq.q), ptr(xq.d), ptr(xq.s32), ptr(g.w), ptr(u.w), i32(g.rows), i32(g.cols), i32(T), i32(act))
}
