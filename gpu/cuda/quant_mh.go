//go:build cuda

package cuda

import "gorgonia.org/cu"

// Quantized products on the fp16 tensor cores (kernels/quant_mh.cu;
// RIGSCOPE_CUDA_MH=8|16, experimental, off by default): mh_x (mh_xn with
// a fused RMSNorm) writes x (T, cols) in fp16, scaled per token by a power
// of two, into the model's activation scratch, then mhq_* (store, add) or
// mhg_* (the GLU) multiply every weight block, as stored, dequantized to
// fp16 in registers, summing in float32. A process runs them at every T
// for every quantized matrix (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0) whose rows
// they take (mhKernel: whole units), so a verify's rows are bitwise the
// decode's; a row of the dp4a kernels would differ. A matrix of partial
// units stays on the dp4a kernels. A product on the fp16 path reads float
// x and neither reads a quantized x nor quantizes its output (qin, qfuse),
// so a dp4a product next to it quantizes its own x (qx), and the producers
// of its x do not quantize for it (readsQX).

// mhxThreads is MHX_THREADS in kernels/quant_mh.cu: mh_x's block, a token's row.
const mhxThreads = 1024

// mhOn says whether w's products (each part of a mixed stack) run on the
// fp16 tensor cores.
func (t *launcher) mhOn(w dweight) bool {
	if t.tune.MH == 0 || w.qs == nil {
		return false
	}
	for _, p := range stackParts(w) {
		if mhKernel("mhq", t.tune.MH, p.dt, p.cols) == "" {
			return false
		}
	}
	return true
}

// readsQX says whether w's product reads x quantized to int8 per 32 (the
// dp4a kernels), so that the product before it may quantize its output for
// it.
func (t *launcher) readsQX(w dweight) bool {
	return quantized(w.dt) && !t.mhOn(w) && !t.mqkOn(w)
}

// stackParts is w's parts, or w alone.
func stackParts(w dweight) []dweight {
	if len(w.parts) == 0 {
		return []dweight{w}
	}
	return w.parts
}

// mhX launches mh_x (with norm: mh_xn, x's RMSNorm times norm) for x (T,
// w.cols) into w's activation scratch: xh (MaxTokens, cols) fp16 then xs
// (MaxTokens) float across both its int8 buffers (2*qxBytes(cols) = 52
// bytes a column, against 32 + 64/cols here), which no dp4a product reads
// while an fp16 one runs (the package comment).
func (t *launcher) mhX(x cu.DevicePtr, w dweight, T int, norm cu.DevicePtr) (xh, xs cu.DevicePtr, err error) {
	xh = w.qs.buf[0]
	xs = xh + cu.DevicePtr(2*MaxTokens*w.cols)
	grid, block := [3]int{T, 1, 1}, [3]int{mhxThreads, 1, 1}
	if norm != 0 {
		err = t.kernel("quantx", 0, "mh_xn", grid, block, ptr(x), ptr(xh), ptr(xs), i32(w.cols), i32(0), ptr(norm), f32(t.eps))
	} else {
		err = t.kernel("quantx", 0, "mh_x", grid, block, ptr(x), ptr(xh), ptr(xs), i32(w.cols), i32(0))
	}
	return xh, xs, err
}

// mhMatvec is qmatvec on the fp16 tensor cores (mhOn(w)): out (T, ldo)
// [+]= x (T, cols) . w^T, x rmsnorm(x, norm) when norm is set; the parts
// of a mixed stack write their columns of out from the one fp16 x.
func (t *launcher) mhMatvec(cat string, out cu.DevicePtr, ldo int, x cu.DevicePtr, w dweight, T, mode int, norm cu.DevicePtr) error {
	t.qfuse, t.qin = nil, qready{}
	xh, xs, err := t.mhX(x, w, T, norm)
	if err != nil {
		return err
	}
	row := 0
	for _, p := range stackParts(w) {
		name := mhKernel("mhq", t.tune.MH, p.dt, p.cols)
		err := mhTile(T, func(t0, n int) error {
			return t.kernel(cat, p.bytes(), name, [3]int{(p.rows + 15) / 16, 1, 1}, [3]int{32 * t.tune.MH, 1, 1},
				ptr(out+cu.DevicePtr(4*(t0*ldo+row))), i32(ldo), ptr(xh+cu.DevicePtr(2*t0*p.cols)), ptr(xs+cu.DevicePtr(4*t0)),
				ptr(p.w), i32(p.rows), i32(p.cols), i32(n), i32(mode))
		})
		if err != nil {
			return err
		}
		row += p.rows
	}
	return nil
}

// mhGLU is qglu on the fp16 tensor cores (mhOn of gate and up, one type):
// out (T, rows) = act(rmsnorm(x).g^T) * (rmsnorm(x).u^T) in one mhg_*
// launch per run of tokens.
func (t *launcher) mhGLU(out, x cu.DevicePtr, g, u dweight, T int, norm cu.DevicePtr, act int) error {
	t.qfuse, t.qin = nil, qready{}
	name := mhKernel("mhg", t.tune.MH, g.dt, g.cols) // mhOn(g): built for g's type and columns
	xh, xs, err := t.mhX(x, g, T, norm)
	if err != nil {
		return err
	}
	return mhTile(T, func(t0, n int) error {
		return t.kernel("gate_up", g.bytes()+u.bytes(), name, [3]int{(g.rows + 15) / 16, 1, 1}, [3]int{32 * t.tune.MH, 1, 1},
			ptr(out+cu.DevicePtr(4*t0*g.rows)), i32(g.rows), ptr(xh+cu.DevicePtr(2*t0*g.cols)), ptr(xs+cu.DevicePtr(4*t0)),
			ptr(g.w), ptr(u.w), i32(g.rows), i32(g.cols), i32(n), i32(act))
	})
}
