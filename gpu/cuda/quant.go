//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// Products with quantized weights (kernels/quant.cu): the activation x
// (T, cols) is quantized (int8 per element, a float scale per 32 and the
// sum of each 16; with a fused RMSNorm, x*g and the sums of squares of x)
// into the model's scratch, then mq* dots every weight block, as stored,
// with it in integers (dp4a) and combines the groups in float32.
//
// Who quantizes x: where a quantized product's output is the next
// quantized product's input (down -> the next layer's qkv, wo -> gate/up,
// gate/up -> down, the last down -> the output projection), enqueue asks
// the producer to quantize its own output (qfuse: mq_quant_out, the last
// block of each 32 columns), into the scratch buffer it does not read, and
// the consumer takes it (qin) instead of launching qx. Everything else
// (the first layer's qkv, TP's allreduced x, Gemma 3's post-norms) runs
// qx first; wo's x the attention quantizes as it stores it (att_quant).
// All write the same bits (qx32).

// qscratch is a model's activation scratch for its quantized products: two
// buffers of qxBytes(cols) (a product reads one and quantizes its output
// into the other) and the fused quantization's per-32-column counters
// (zeroed; the last block of a group resets its counter).
type qscratch struct {
	buf  [2]cu.DevicePtr
	cnt  cu.DevicePtr
	cols int
}

// qready is an activation a producer quantized: x (T, cols) [times g] in
// the scratch buffer buf.
type qready struct {
	x, g    cu.DevicePtr
	T, cols int
	buf     cu.DevicePtr
}

// qfuseReq asks the next quantized product to quantize its output for a
// consumer whose fused RMSNorm weight is g (0: none).
type qfuseReq struct {
	g cu.DevicePtr
}

// mqSplit is mqSplit for this device, or the K split cuda-check forces.
func (t *launcher) mqSplit(rows int, dt tensor.DType) int {
	if t.mqks != 0 {
		return t.mqks
	}
	return t.tune.MQV.split(mqSplit(rows, t.dev.SMs, dt), dt)
}

// mqGrid is the grid of an mq* product of rows rows in groups of R rows
// split ks ways: blocks of 4/ks row groups.
func mqGrid(rows, R, ks int) [3]int {
	per := R * (mvThreads / 32 / ks)
	return [3]int{(rows + per - 1) / per, 1, 1}
}

// mqKernel is the kernel (prefix mq, mqn or mqg), grid and block of a
// quantized product of dt (rows, cols) at T tokens split ks ways: with the
// MQM knob, Q4_K on the int8 tensor cores (mqm*_q4k_8 or _16 _w<warps>, a
// block of MQM warps per 16 rows, the same arguments, ks unused), else the
// dp4a kernels in blocks of mvThreads: at one token the variant the MQV
// knob sets (its name's suffix, its rows per group), else
// prefix_type_mqBucket(T) at mqRows(T).
func (t *launcher) mqKernel(prefix string, dt tensor.DType, rows, cols, T, ks int) (string, [3]int, [3]int, error) {
	if nt := mqmTile(t.tune.MQM > 0, dt, cols, T, MaxTokens); nt > 0 {
		return fmt.Sprintf("mqm%s_q4k_%d_w%d", prefix[2:], nt, t.tune.MQM), [3]int{(rows + 15) / 16, 1, 1}, [3]int{32 * t.tune.MQM, 1, 1}, nil
	}
	suf, err := kernelSuffix(dt)
	if err != nil {
		return "", [3]int{}, [3]int{}, err
	}
	b := mqBucket(T)
	name, R := fmt.Sprintf("%s_%s_%d", prefix, suf, b), mqRows(T)
	if v, ok := t.tune.MQV.variant(prefix, suf, rows); ok && b == 1 {
		name, R = name+v.suffix, v.rows
	}
	return name, mqGrid(rows, R, ks), [3]int{mvThreads, 1, 1}, nil
}

// qxPtrs are the parts of the activation scratch buffer at xq for rows of
// K values (qx_parts in quant.cu): int8 (MaxTokens, K), float2
// (MaxTokens, K/16), float sums of squares per 32-block (MaxTokens, K/32).
func qxPtrs(xq cu.DevicePtr, K int) (q, m, ss cu.DevicePtr) {
	q = xq
	m = q + cu.DevicePtr(MaxTokens*K)
	ss = m + cu.DevicePtr(MaxTokens*K/16*8)
	return q, m, ss
}

// qxRows is qxPtrs from row t0 on.
func qxRows(xq cu.DevicePtr, K, t0 int) (q, m, ss cu.DevicePtr) {
	q, m, ss = qxPtrs(xq, K)
	return q + cu.DevicePtr(t0*K), m + cu.DevicePtr(t0*K/16*8), ss + cu.DevicePtr(t0*K/32*4)
}

// quantizeX launches qx: x (T, K) [times norm's g] into buffer 0 of w's
// scratch.
func (t *launcher) quantizeX(x cu.DevicePtr, w dweight, T int, norm cu.DevicePtr) (q, m, ss cu.DevicePtr, err error) {
	if w.qs == nil {
		return 0, 0, 0, fmt.Errorf("cuda: %v matrix (%d, %d) has no activation scratch", w.dt, w.rows, w.cols)
	}
	q, m, ss = qxPtrs(w.qs.buf[0], w.cols)
	err = t.kernel("quantx", 0, "qx", [3]int{(w.cols/32 + 7) / 8, T, 1}, [3]int{256, 1, 1},
		ptr(q), ptr(m), ptr(ss), ptr(x), ptr(norm), i32(w.cols))
	return q, m, ss, err
}

// quantIn is the quantized x (T, w.cols) [times norm] for w's product:
// what the previous product left in the scratch (qin) when it is that,
// else qx's. in is the buffer read.
func (t *launcher) quantIn(x cu.DevicePtr, w dweight, T int, norm cu.DevicePtr) (q, m, ss, in cu.DevicePtr, err error) {
	r := t.qin
	t.qin = qready{}
	if r.buf != 0 && r.g == norm && r.cols == w.cols && x >= r.x && (x-r.x)%cu.DevicePtr(4*r.cols) == 0 {
		if t0 := int(x-r.x) / (4 * r.cols); t0+T <= r.T {
			q, m, ss = qxRows(r.buf, r.cols, t0)
			return q, m, ss, r.buf, nil
		}
	}
	q, m, ss, err = t.quantizeX(x, w, T, norm)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	return q, m, ss, w.qs.buf[0], nil
}

// fuseOut takes the pending qfuse request for a product of w writing out
// (T, ldo) while reading scratch buffer in: the buffer, g and counters the
// kernel quantizes its output with (all 0 when it does not), and records
// the result as the next product's qin.
func (t *launcher) fuseOut(w dweight, out cu.DevicePtr, ldo, T int, in cu.DevicePtr) (qo, g, cnt cu.DevicePtr) {
	req := t.qfuse
	t.qfuse = nil
	if req == nil || w.qs == nil || ldo != w.rows || w.rows%32 != 0 || w.rows > w.qs.cols || T > MaxTokens {
		return 0, 0, 0
	}
	qo = w.qs.buf[0]
	if in == qo {
		qo = w.qs.buf[1]
	}
	t.qin = qready{x: out, g: req.g, T: T, cols: w.rows, buf: qo}
	return qo, req.g, w.qs.cnt
}

// qmatvec is matvec for a quantized w: out (T, ldo) [+]= x (T, cols) .
// w^T, x rmsnorm(x, norm) when norm is set; the parts of a mixed stack
// write their columns of out from the one quantized x.
func (t *launcher) qmatvec(cat string, out cu.DevicePtr, ldo int, x cu.DevicePtr, w dweight, T, mode int, norm cu.DevicePtr) error {
	if t.mhOn(w) {
		return t.mhMatvec(cat, out, ldo, x, w, T, mode, norm)
	}
	if t.mqkOn(w) {
		return t.mqkMatvec(cat, out, ldo, x, w, T, mode, norm)
	}
	q, m, ss, in, err := t.quantIn(x, w, T, norm)
	if err != nil {
		return err
	}
	var qo, qg, qcnt cu.DevicePtr
	if len(w.parts) == 0 && norm == 0 {
		qo, qg, qcnt = t.fuseOut(w, out, ldo, T, in)
	}
	t.qfuse = nil
	if len(w.parts) == 2 && norm != 0 {
		a, b := w.parts[0], w.parts[1]
		if name, grid, nba, ksa, ksb := t.mqn2Kernel(a, b, T); name != "" {
			return t.kernel(cat, a.bytes()+b.bytes(), name, grid, [3]int{mvThreads, 1, 1},
				ptr(out), i32(ldo), ptr(q), ptr(m), ptr(ss), ptr(a.w), i32(a.rows), i32(ksa), i32(nba),
				ptr(b.w), i32(b.rows), i32(ksb), i32(a.cols), i32(T), f32(t.eps))
		}
	}
	row := 0
	for _, p := range stackParts(w) {
		o := out + cu.DevicePtr(4*row)
		ks := t.mqSplit(p.rows, p.dt)
		prefix := "mq"
		if norm != 0 {
			prefix = "mqn"
		}
		name, grid, block, err := t.mqKernel(prefix, p.dt, p.rows, p.cols, T, ks)
		if err != nil {
			return err
		}
		name, grid, block = t.mqBlock(name, grid, block, p.rows, ks, T, qo)
		if norm != 0 {
			err = t.kernel(cat, p.bytes(), name, grid, block,
				ptr(o), i32(ldo), ptr(q), ptr(m), ptr(ss), ptr(p.w), i32(p.rows), i32(p.cols), i32(T), f32(t.eps), i32(ks))
		} else {
			err = t.kernel(cat, p.bytes(), name, grid, block,
				ptr(o), i32(ldo), ptr(q), ptr(m), ptr(p.w), i32(p.rows), i32(p.cols), i32(T), i32(mode), i32(ks),
				ptr(qo), ptr(qg), ptr(qcnt))
		}
		if err != nil {
			return err
		}
		row += p.rows
	}
	return nil
}

// mqBlock is the kernel, grid and block of an mq* product (name, grid and
// block from mqKernel) of rows rows split ks ways at T tokens: the wide
// one-token variant (Tuning.MQW) where the product quantizes its output
// (qo set) and one applies, else mqKernel's.
func (t *launcher) mqBlock(name string, grid, block [3]int, rows, ks, T int, qo cu.DevicePtr) (string, [3]int, [3]int) {
	if qo != 0 && bucket(T) == 1 {
		if wn, wg, wt, ok := t.tune.MQW.wide(name, rows, ks); ok {
			return wn, wg, [3]int{wt, 1, 1}
		}
	}
	return name, grid, block
}

// mqn2Kernel is the one launch (kernels/quant_mv.cu mqn2_*) of a norm
// product over a stack of parts a then b at T tokens, its grid and the
// blocks of a, with each part's K split; "" where none is built for the
// pair (Q4_K or Q5_K, then Q6_K: a Q4_K_M or Q5_K_M layer's qkv with a
// Q6_K attn_v), the knob is off, or a part's own launch would run another
// body than the one mqn2_* instantiates for it (a variant the MQV knob
// sets otherwise, the tensor-core kernels): its rows then sum bitwise as
// the two launches' would.
func (t *launcher) mqn2Kernel(a, b dweight, T int) (name string, grid [3]int, nba, ksa, ksb int) {
	if !t.tune.MQN2 || b.dt != tensor.Q6_K || (a.dt != tensor.Q4_K && a.dt != tensor.Q5_K) || a.cols != b.cols {
		return "", grid, 0, 0, 0
	}
	sa, _ := kernelSuffix(a.dt) // Q4_K or Q5_K: always one
	bt, vb := mqBucket(T), ""
	if bt == 1 {
		vb = "r2b" // defaultMQV's q6n2
	}
	ksa, ksb = t.mqSplit(a.rows, a.dt), t.mqSplit(b.rows, b.dt)
	na, ga, _, erra := t.mqKernel("mqn", a.dt, a.rows, a.cols, T, ksa)
	nb, gb, _, errb := t.mqKernel("mqn", b.dt, b.rows, b.cols, T, ksb)
	if erra != nil || errb != nil || na != fmt.Sprintf("mqn_%s_%d", sa, bt) || nb != fmt.Sprintf("mqn_q6k_%d%s", bt, vb) {
		return "", grid, 0, 0, 0
	}
	return fmt.Sprintf("mqn2_%s_q6k_%d", sa, bt), [3]int{ga[0] + gb[0], 1, 1}, ga[0], ksa, ksb
}

// qglu is glu for quantized gate and up (one type): out (T, rows) =
// act(rmsnorm(x).g^T) * (rmsnorm(x).u^T), act SiLU or (t.gelu) GELU-tanh.
func (t *launcher) qglu(out, x cu.DevicePtr, g, u dweight, T int, norm cu.DevicePtr) error {
	if len(g.parts) > 0 || len(u.parts) > 0 || g.rows != u.rows || g.cols != u.cols || g.dt != u.dt {
		return fmt.Errorf("cuda: gate (%v %d, %d) and up (%v %d, %d) must be single matrices of one type and shape", g.dt, g.rows, g.cols, u.dt, u.rows, u.cols)
	}
	if norm == 0 {
		return fmt.Errorf("cuda: the quantized GLU needs its RMSNorm weight")
	}
	act := 0
	if t.gelu {
		act = 1
	}
	if t.mhOn(g) && t.mhOn(u) {
		return t.mhGLU(out, x, g, u, T, norm, act)
	}
	if t.mqkOn(g) && t.mqkOn(u) && g.dt == tensor.Q4_K {
		return t.mqkGLU(out, x, g, u, T, norm, act)
	}
	ks := t.mqSplit(g.rows, g.dt)
	name, grid, block, err := t.mqKernel("mqg", g.dt, g.rows, g.cols, T, ks)
	if err != nil {
		return err
	}
	q, m, ss, in, err := t.quantIn(x, g, T, norm)
	if err != nil {
		return err
	}
	qo, qg, qcnt := t.fuseOut(g, out, g.rows, T, in)
	name, grid, block = t.mqBlock(name, grid, block, g.rows, ks, T, qo)
	return t.kernel("gate_up", g.bytes()+u.bytes(), name, grid, block,
		ptr(out), i32(g.rows), ptr(q), ptr(m), ptr(ss), ptr(g.w), ptr(u.w), i32(g.rows), i32(g.cols), i32(T), f32(t.eps), i32(ks),
		i32(act), ptr(qo), ptr(qg), ptr(qcnt))
}

// attnQuantOut is the scratch buffer the attention quantizes its output
// (T, hq*hd) into for wo (att_quant in attn_common.cu), or 0 where wo is not
// one quantized matrix of those columns read by the dp4a kernels
// (readsQX) or a head is not whole 32-blocks. The qkv product before it is
// done with the scratch by then (the attention waits for it), so buffer 0
// is free.
func (t *launcher) attnQuantOut(wo dweight, hq, hd int) cu.DevicePtr {
	if !t.readsQX(wo) || len(wo.parts) > 0 || wo.qs == nil || hd%32 != 0 || wo.cols != hq*hd || wo.cols > wo.qs.cols {
		return 0
	}
	return wo.qs.buf[0]
}
