//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
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

// qxPerm is the order qx stores a type's activation groups in (PERM in
// quant.cu): 0 plain (Q8_0, Q4_0), 1 (Q4_K, Q5_K), 2 (Q6_K).
func qxPerm(dt tensor.DType) int {
	switch dt {
	case tensor.Q4_K, tensor.Q5_K:
		return 1
	case tensor.Q6_K:
		return 2
	}
	return 0
}

// qxSlot is qx_slot in quant.cu: the slot of 16-element group g of a row
// in activation order perm.
func qxSlot(perm, g int) int {
	base, l := g&^15, g&15
	switch perm {
	case 1:
		return base + l&12 + 2*(l&1) + (l>>1)&1
	case 2:
		n, k, h := l>>3, (l>>1)&3, l&1
		return base + 8*n + 4*(k&1) + 2*h + k>>1
	}
	return g
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
		grid, block := [3]int{(p.rows + mqRows(T) - 1) / mqRows(T), 1, 1}, [3]int{mvThreads, 1, 1}
		if norm != 0 {
			err = t.kernel(cat, p.bytes(), fmt.Sprintf("mqn_%s_%d", suf, bucket(T)), grid, block,
				ptr(o), i32(ldo), ptr(q), ptr(m), ptr(ss), ptr(p.w), i32(p.rows), i32(p.cols), i32(T), f32(t.eps))
		} else {
			err = t.kernel(cat, p.bytes(), fmt.Sprintf("mq_%s_%d", suf, bucket(T)), grid, block,
				ptr(o), i32(ldo), ptr(q), ptr(m), ptr(p.w), i32(p.rows), i32(p.cols), i32(T), i32(mode))
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
	return t.kernel("gate_up", g.bytes()+u.bytes(), fmt.Sprintf("mqg_%s_%d", suf, bucket(T)),
		[3]int{(g.rows + mqRows(T) - 1) / mqRows(T), 1, 1}, [3]int{mvThreads, 1, 1},
		ptr(out), i32(g.rows), ptr(q), ptr(m), ptr(ss), ptr(g.w), ptr(u.w), i32(g.rows), i32(g.cols), i32(T), f32(t.eps))
}
