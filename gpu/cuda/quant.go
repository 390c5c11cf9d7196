//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"
)

// Products with quantized weights (kernels/quant.cu): the activation x
// (T, cols) is quantized once per product by qx into the weight's scratch
// (int8 per element, a float scale per 32 and the sum of each 16; with a
// fused RMSNorm, x*g and the sums of squares of x), then mq* dots every
// weight block, as stored, with it in integers (dp4a) and combines the
// groups in float32.

// mqRows is MQ_ROWS in quant.cu: the rows a block of mq* owns for T tokens.
func mqRows(T int) int {
	if bucket(T) <= 8 {
		return 4
	}
	return 2
}

// mqSplit is mqSplit for this device, or the K split cuda-check forces.
func (t *launcher) mqSplit(rows int) int {
	if t.mqks != 0 {
		return t.mqks
	}
	return mqSplit(rows, t.dev.SMs)
}

// mqGrid is the grid of an mq* product of rows rows at T tokens split ks
// ways: blocks of 4/ks row groups of mqRows(T) rows.
func mqGrid(rows, T, ks int) [3]int {
	per := mqRows(T) * (mvThreads / 32 / ks)
	return [3]int{(rows + per - 1) / per, 1, 1}
}

// qxPtrs are the parts of the activation scratch at xq for rows of K
// values: int8 (MaxTokens, K), float2 (MaxTokens, K/16), float sums of
// squares per 32-block (MaxTokens, K/32).
func qxPtrs(xq cu.DevicePtr, K int) (q, m, ss cu.DevicePtr) {
	q = xq
	m = q + cu.DevicePtr(MaxTokens*K)
	ss = m + cu.DevicePtr(MaxTokens*K/16*8)
	return q, m, ss
}

// quantizeX launches qx: x (T, K) [times norm's g] into w's scratch, in
// the activation order of w's type.
func (t *launcher) quantizeX(x cu.DevicePtr, w dweight, T int, norm cu.DevicePtr) (q, m, ss cu.DevicePtr, err error) {
	if w.xq == 0 {
		return 0, 0, 0, fmt.Errorf("cuda: %v matrix (%d, %d) has no activation scratch", w.dt, w.rows, w.cols)
	}
	q, m, ss = qxPtrs(w.xq, w.cols)
	err = t.kernel("quantx", 0, "qx", [3]int{(w.cols/32 + 7) / 8, T, 1}, [3]int{256, 1, 1},
		ptr(q), ptr(m), ptr(ss), ptr(x), ptr(norm), i32(w.cols), i32(qxPerm(w.dt)))
	return q, m, ss, err
}

// qmatvec is matvec for a quantized w: out (T, ldo) [+]= x (T, cols) .
// w^T, x rmsnorm(x, norm) when norm is set; the parts of a mixed stack
// write their columns of out, x quantized again (the same values) only
// where a part's type reads another order (Q4_K_M's Q6_K attn_v).
func (t *launcher) qmatvec(cat string, out cu.DevicePtr, ldo int, x cu.DevicePtr, w dweight, T, mode int, norm cu.DevicePtr) error {
	parts := w.parts
	if len(parts) == 0 {
		parts = []dweight{w}
	}
	var q, m, ss cu.DevicePtr
	perm := -1
	row := 0
	for _, p := range parts {
		suf, err := kernelSuffix(p.dt)
		if err != nil {
			return err
		}
		if qxPerm(p.dt) != perm {
			if q, m, ss, err = t.quantizeX(x, p, T, norm); err != nil {
				return err
			}
			perm = qxPerm(p.dt)
		}
		o := out + cu.DevicePtr(4*row)
		ks := t.mqSplit(p.rows)
		grid, block := mqGrid(p.rows, T, ks), [3]int{mvThreads, 1, 1}
		if norm != 0 {
			err = t.kernel(cat, p.bytes(), fmt.Sprintf("mqn_%s_%d", suf, bucket(T)), grid, block,
				ptr(o), i32(ldo), ptr(q), ptr(m), ptr(ss), ptr(p.w), i32(p.rows), i32(p.cols), i32(T), f32(t.eps), i32(ks))
		} else {
			err = t.kernel(cat, p.bytes(), fmt.Sprintf("mq_%s_%d", suf, bucket(T)), grid, block,
				ptr(o), i32(ldo), ptr(q), ptr(m), ptr(p.w), i32(p.rows), i32(p.cols), i32(T), i32(mode), i32(ks))
		}
		if err != nil {
			return err
		}
		row += p.rows
	}
	return nil
}

// qglu is glu for quantized gate and up (one type): out (T, rows) =
// silu(rmsnorm(x).g^T) * (rmsnorm(x).u^T).
func (t *launcher) qglu(out, x cu.DevicePtr, g, u dweight, T int, norm cu.DevicePtr) error {
	if len(g.parts) > 0 || len(u.parts) > 0 || g.rows != u.rows || g.cols != u.cols {
		return fmt.Errorf("cuda: gate (%d, %d) and up (%d, %d) must be single matrices of one shape", g.rows, g.cols, u.rows, u.cols)
	}
	if norm == 0 {
		return fmt.Errorf("cuda: the quantized GLU needs its RMSNorm weight")
	}
	suf, err := kernelSuffix(g.dt)
	if err != nil {
		return err
	}
	q, m, ss, err := t.quantizeX(x, g, T, norm)
	if err != nil {
		return err
	}
	ks := t.mqSplit(g.rows)
	return t.kernel("gate_up", g.bytes()+u.bytes(), fmt.Sprintf("mqg_%s_%d", suf, bucket(T)),
		mqGrid(g.rows, T, ks), [3]int{mvThreads, 1, 1},
		ptr(out), i32(g.rows), ptr(q), ptr(m), ptr(ss), ptr(g.w), ptr(u.w), i32(g.rows), i32(g.cols), i32(T), f32(t.eps), i32(ks))
}
