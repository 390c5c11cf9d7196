//go:build cuda

package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// quantTypes are the weight types the quantized kernels read.
var quantTypes = []tensor.DType{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0}

// checkQuant is -checks quant: every quantized kernel against float64 on
// random blocks (checkQuantKernels), their bandwidth on llama-8b's shapes
// (checkQuantBandwidth) and greedy decoding of the quantized gocoder files
// (checkQuantModels). It runs every part and reports every failure.
func checkQuant(ctx context.Context, d *Device, models string, w io.Writer) error {
	var errs []error
	if checkPart("kernels") {
		if err := checkQuantKernels(d, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: quant kernels: %w", err))
		}
	}
	if checkPart("bandwidth") {
		if err := checkQuantBandwidth(d, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: quant bandwidth: %w", err))
		}
	}
	if checkPart("mma") {
		if err := checkQuantMMA(d, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: quant mma: %w", err))
		}
	}
	if checkPart("mqk") {
		if err := checkQuantMQK(d, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: quant mqk: %w", err))
		}
	}
	if checkPart("mh") {
		if err := checkQuantMH(d, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: quant mh: %w", err))
		}
	}
	if checkPart("models") {
		if err := checkQuantModels(ctx, d, models, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: quant models: %w", err))
		}
	}
	if checkPart("peer") {
		if *checkPeerDir == "" {
			errs = append(errs, fmt.Errorf("cuda-check: quant peer: set -peer to bench/peer-kquants.sh's output folder"))
		} else if err := checkQuantPeer(ctx, d, *checkPeerDir, models, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: quant peer: %w", err))
		}
	}
	return errors.Join(errs...)
}

// randBlocks is rows of cols values of dt as random ggml blocks: random
// quant, scale and min bytes; the f16 block scales random in a range that
// keeps the weights near 1/sqrt(4096) in size (so GLU's silu sees O(1)).
func randBlocks(rng *rand.Rand, dt tensor.DType, rows, cols int) []byte {
	rb, _ := dt.Bytes(cols)
	b := make([]byte, rows*rb+8)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	b = b[:rows*rb]
	f16 := func(off int, v float64) { binary.LittleEndian.PutUint16(b[off:], tensor.F32ToF16(float32(v))) }
	sign := func() float64 { return float64(1 - 2*rng.IntN(2)) }
	bb := dt.BlockBytes()
	for o := 0; o < len(b); o += bb {
		u := 0.5 + rng.Float64()
		switch dt {
		case tensor.Q4_K, tensor.Q5_K:
			f16(o, u*4e-5)
			f16(o+2, (0.5+rng.Float64())*2e-4)
		case tensor.Q6_K:
			f16(o+208, sign()*u*1e-5)
		case tensor.Q4_0:
			f16(o, sign()*u*3e-3)
		case tensor.Q8_0:
			f16(o, sign()*u*2e-4)
		}
	}
	return b
}

// dequant is the (rows, cols) matrix data of dt as float64, by the CPU's
// DequantRow (bit-exact ggml).
func dequant(dt tensor.DType, data []byte, rows, cols int) []float64 {
	t := &tensor.Tensor{Name: "ref", DType: dt, Shape: []int{rows, cols}, Data: data}
	out := make([]float64, rows*cols)
	row := make([]float32, cols)
	for r := 0; r < rows; r++ {
		cpu.DequantRow(row, t, r)
		for k, v := range row {
			out[r*cols+k] = float64(v)
		}
	}
	return out
}

// qxEmulate is what qx must write for x (T, K) [times g] (plain order):
// int8 q and the float2 per 16 (d, d*sum), as float32 arithmetic gives
// them.
func qxEmulate(x, g []float32, T, K int) ([]int8, []float32) {
	q := make([]int8, T*K)
	m := make([]float32, T*K/16*2)
	for t := 0; t < T; t++ {
		for b := 0; b < K/32; b++ {
			var v [32]float32
			var amax float32
			for i := range v {
				v[i] = x[t*K+32*b+i]
				if g != nil {
					v[i] *= g[32*b+i]
				}
				amax = max(amax, float32(math.Abs(float64(v[i]))))
			}
			d := amax / 127
			var sum [2]int
			for i := range v {
				qi := 0
				if d != 0 {
					qi = int(math.Round(float64(v[i] / d)))
				}
				q[t*K+32*b+i] = int8(qi)
				sum[i/16] += qi
			}
			for h := 0; h < 2; h++ {
				gi := t*K/16 + 2*b + h
				m[2*gi], m[2*gi+1] = d, d*float32(sum[h])
			}
		}
	}
	return q, m
}

// quantRef is the float64 product out (T, N) of the dequantized W (N, K)
// [and W2: GLU] with x (T, K) for the modes of checkKernels (0 store, 1
// add base, 2 GLU of rmsnorm(x, g), 3 rmsnorm(x, g), 4 GLU with
// GELU-tanh); xq, when set, is x
// as qx quantized it (x*g for modes 2, 3), which then replaces x (x still
// gives the norm's sums of squares).
func quantRef(mode int, W, W2 []float64, x []float32, xq []float64, g, base []float32, T, N, K int) []float64 {
	ref := make([]float64, T*N)
	xr := make([]float64, K)
	for t := 0; t < T; t++ {
		var ss float64
		for k := range xr {
			v := float64(x[t*K+k])
			ss += v * v
			xr[k] = v
			if mode >= 2 {
				xr[k] *= float64(g[k])
			}
			if xq != nil {
				xr[k] = xq[t*K+k]
			}
		}
		inv := 1.0
		if mode >= 2 {
			inv = 1 / math.Sqrt(ss/float64(K)+1e-5)
		}
		for n := 0; n < N; n++ {
			var a, b float64
			for k := 0; k < K; k++ {
				a += W[n*K+k] * xr[k]
			}
			a *= inv
			switch mode {
			case 0, 3:
				ref[t*N+n] = a
			case 1:
				ref[t*N+n] = a + float64(base[t*N+n])
			case 2, 4:
				for k := 0; k < K; k++ {
					b += W2[n*K+k] * xr[k]
				}
				act := a / (1 + math.Exp(-a))
				if mode == 4 {
					act = 0.5 * a * (1 + math.Tanh(0.7978845608028654*(a+0.044715*a*a*a)))
				}
				ref[t*N+n] = act * b * inv
			}
		}
	}
	return ref
}

// Tolerances. Against x as qx quantized it (refQ), the kernel differs from
// float64 only by float32 rounding (exact integer dots, then about 2K/16
// float32 fmas per output): 1e-5 relative, as the float kernels (whose
// own figure is ~1e-7; the quantized ones run ~1e-6). Against the raw x
// (ref64), the int8 activation dominates: each element is off by at most
// dx/2 = amax/254 of its 32-block, about 0.6% rms relative for Gaussian x
// (amax ~ 2.5 sigma: 2.5/254/sqrt(3)), and the output error is that
// relative size in a random sum: expected ~0.6%, refused above 2%. With
// the check's seeds a perfect kernel (x quantized as qx does, float64
// after) is off the raw reference by 3.1e-3 to 1.34e-2 (worst: Q6_K's GLU
// at T=1, 70 outputs), computed on the CPU; the inputs are the same on the
// device, so the margin is not luck of the draw.
const (
	tolQuantExact = 1e-5
	tolQuantRaw   = 2e-2
)

// checkQuantKernels runs each type's products through the Target's
// dispatch (matvec, glu: qx then mq/mqn/mqg) on random blocks, output
// poisoned with NaN before every launch, for T = 1..16 and the four modes,
// and compares with float64; every row of a T-token run must be bitwise
// the T=1 run of that row. Also: qx's quantization against its float32
// emulation (exact), a mixed Q4_K/Q6_K stack (parts), and embedding rows
// against the CPU's DequantRow (bitwise).
func checkQuantKernels(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	h := newDevHelper(s)
	defer h.free()
	rng := rand.New(rand.NewPCG(23, 7))
	tgt := checkTarget(d, s)
	if tune, err := CurrentTuning(); err == nil { // the one-token variants it checks (RIGSCOPE_CUDA_MQV, RIGSCOPE_CUDA_MQW)
		tgt.tune.MQV, tgt.tune.MQW = tune.MQV, tune.MQW
	}
	const N, K, TT = 70, 4352, MaxTokens // 70 rows: a partial last block; K = 17 super-blocks, 136 units: a partial second pass
	x, g, base := randn32(rng, TT*K, 0, 1), randn32(rng, K, 1, 0.2), randn32(rng, TT*N, 0, 1)
	xd, gd := h.up(f32bytes(x)), h.up(f32bytes(g))
	modeNames := []string{"mv", "mv+add", "glu+norm", "mv+norm", "geglu+norm"}
	fmt.Fprintf(w, "\nquantized products vs float64 (N=%d K=%d, T=1..16, outputs NaN-poisoned; exact: x as qx quantized it, tol %.0e; raw: float x, tol %.0e; RIGSCOPE_CUDA_MQV %s)\n", N, K, tolQuantExact, tolQuantRaw, tgt.tune.MQV)
	fmt.Fprintf(w, "%-6s %-9s %2s %12s %12s %12s %12s %s\n", "type", "mode", "ks", "exact rel", "raw rel", "raw max abs", "T=k = T=1", "")
	var errs []error
	for _, dt := range quantTypes {
		wq, w2q := randBlocks(rng, dt, N, K), randBlocks(rng, dt, N, K)
		W, W2 := dequant(dt, wq, N, K), dequant(dt, w2q, N, K)
		Wd, e1 := h.upQuant("w", dt, N, K, wq)
		W2d, e2 := h.upQuant("w2", dt, N, K, w2q)
		if err := errors.Join(e1, e2); err != nil {
			return err
		}
		for mode := 0; mode < 5; mode++ {
			var norm cu.DevicePtr
			if mode >= 2 {
				norm = gd
			}
			run := checkProduct(h, tgt, mode, base, xd, Wd, W2d, norm, N, K)
			fail := func(ks int, e error) { errs = append(errs, fmt.Errorf("%v %s ks=%d: %w", dt, modeNames[mode], ks, e)) }
			ref := quantRef(mode, W, W2, x, nil, g, base, TT, N, K) // rows are independent: T's reference is its prefix
			var refQ []float64                                      // with x as qx quantized it (the same for every run)
			var qxBad int
			for _, ks := range []int{4, 2, 1} { // every K split mqSplit may pick
				tgt.mqks = ks
				sw, bad, err := sweepT(run, ref, TT, N)
				if err != nil {
					return err
				}
				for _, e := range bad {
					fail(ks, e)
				}
				bitwise, worstRaw, worstAbs, got16 := sw.bitwise, sw.worst, sw.worstAbs, sw.last
				if refQ == nil { // the scratch holds x (all 16 rows) as the T=16 run's qx wrote it
					q, mm, e := h.downQX(Wd.qs.buf[0], TT, K)
					if e != nil {
						return e
					}
					var gq []float32
					if mode >= 2 {
						gq = g
					}
					wantQ, wantM := qxEmulate(x, gq, TT, K)
					for i := range wantQ {
						if q[i] != wantQ[i] {
							qxBad++
						}
					}
					for i := range wantM {
						if math.Float32bits(mm[i]) != math.Float32bits(wantM[i]) {
							qxBad++
						}
					}
					refQ = quantRef(mode, W, W2, x, qxValues(q, mm, TT, K), g, base, TT, N, K)
				}
				exact := math.NaN()
				if got16 != nil {
					var e error
					if exact, _, e = errStats(got16, refQ); e != nil {
						fail(ks, e)
					}
				}
				st := "ok"
				if !(exact <= tolQuantExact) || !(worstRaw <= tolQuantRaw) || bitwise != "ok" || qxBad > 0 {
					st = "FAIL"
					fail(ks, fmt.Errorf("exact rel %.2e (tol %.0e), raw rel %.2e (tol %.0e), bitwise %s, qx values off its emulation: %d",
						exact, tolQuantExact, worstRaw, tolQuantRaw, bitwise, qxBad))
				}
				short := bitwise
				if len(short) > 12 {
					short = "FAIL"
				}
				fmt.Fprintf(w, "%-6v %-9s %2d %12.2e %12.2e %12.2e %12s %s (qx exact: %d off)\n", dt, modeNames[mode], ks, exact, worstRaw, worstAbs, short, st, qxBad)
			}
			tgt.mqks = 0
		}
		if err := checkEmbedQuant(d, h, dt, wq, N, K, w); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkQuantParts(tgt, h, rng, w); err != nil {
		errs = append(errs, err)
	}
	if err := checkQuantFused(tgt, h, rng, w); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkEmbedQuant: embed_<type> rows equal the CPU's DequantRow bitwise.
func checkEmbedQuant(d *Device, h *devHelper, dt tensor.DType, data []byte, N, K int, w io.Writer) error {
	suf, _ := kernelSuffix(dt)
	fn, err := d.fn("embed_" + suf)
	if err != nil {
		return err
	}
	toks := []int32{3, 0, int32(N - 1), 41}
	tb := make([]byte, 4*len(toks))
	for i, t := range toks {
		binary.LittleEndian.PutUint32(tb[4*i:], uint32(t))
	}
	wd, td, out := h.up(data), h.up(tb), h.poison(len(toks)*K)
	if h.err != nil {
		return h.err
	}
	if err := launch(fn, [3]int{len(toks), 1, 1}, [3]int{128, 1, 1}, 0, h.s, ptr(out), ptr(wd), ptr(0), ptr(td), i32(K)); err != nil {
		return err
	}
	got, err := h.down(out, len(toks)*K)
	if err != nil {
		return err
	}
	ref := dequant(dt, data, N, K)
	bad := 0
	for i, t := range toks {
		for k := 0; k < K; k++ {
			if math.Float32bits(got[i*K+k]) != math.Float32bits(float32(ref[int(t)*K+k])) {
				bad++
			}
		}
	}
	st := "ok"
	if bad > 0 {
		st = "FAIL"
	}
	fmt.Fprintf(w, "%-6v %-9s %2s %12s %12s %12s %12s %s (%d of %d values differ)\n", dt, "embed", "", "", "", "", "= cpu", st, bad, len(toks)*K)
	if bad > 0 {
		return fmt.Errorf("embed_%s: %d values differ from the CPU's dequantization", suf, bad)
	}
	return nil
}

// checkQuantParts: qkv stacks of mixed types (Q4_K, Q4_K, Q6_K, as a
// Q4_K_M file's layers with a Q6_K attn_v, and Q5_K, Q5_K, Q6_K) with the
// fused norm, at T = 1 and 5, against float64 of x as quantized and of
// the raw x; the one launch (mqn2_*) bitwise against a launch per part
// (RIGSCOPE_CUDA_MQN2=0).
func checkQuantParts(tgt *Target, h *devHelper, rng *rand.Rand, w io.Writer) error {
	const K = 1024
	rows := []int{40, 24, 24}
	for _, a := range []tensor.DType{tensor.Q4_K, tensor.Q5_K} {
		dts := []tensor.DType{a, a, tensor.Q6_K}
		var ts []*tensor.Tensor
		var W []float64
		N := 0
		for i, r := range rows {
			data := randBlocks(rng, dts[i], r, K)
			ts = append(ts, &tensor.Tensor{Name: fmt.Sprintf("part%d", i), DType: dts[i], Shape: []int{r, K}, Data: data})
			W = append(W, dequant(dts[i], data, r, K)...)
			N += r
		}
		m := &dmodel{}
		wd, err := m.uploadLayerMatrix("", ts...)
		h.allocs = append(h.allocs, m.allocs...)
		if err != nil {
			return err
		}
		if len(wd.parts) != 2 {
			return fmt.Errorf("cuda check: mixed stack uploaded as %d parts, want 2", len(wd.parts))
		}
		for _, T := range []int{1, 5} {
			if err := checkQuantStack(tgt, h, rng, w, wd, W, dts, T, N, K); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkQuantStack is checkQuantParts for one stack wd (W dequantized) at T.
func checkQuantStack(tgt *Target, h *devHelper, rng *rand.Rand, w io.Writer, wd dweight, W []float64, dts []tensor.DType, T, N, K int) error {
	label := fmt.Sprintf("%v+%v+%v", dts[0], dts[1], dts[2])
	x, g := randn32(rng, T*K, 0, 1), randn32(rng, K, 1, 0.2)
	xd, gd := h.up(f32bytes(x)), h.up(f32bytes(g))
	one, two := h.poison(T*N), h.poison(T*N)
	if h.err != nil {
		return h.err
	}
	on := tgt.tune.MQN2
	defer func() { tgt.tune.MQN2 = on }()
	tgt.tune.MQN2 = true
	name, _, _, _, _ := tgt.mqn2Kernel(wd.parts[0], wd.parts[1], T)
	if name == "" {
		return fmt.Errorf("cuda check: %s stack at T=%d: no one-launch kernel (RIGSCOPE_CUDA_MQV %s)", label, T, tgt.tune.MQV)
	}
	if err := tgt.matvec("check", one, N, xd, 0, wd, T, 0, gd); err != nil {
		return err
	}
	tgt.tune.MQN2 = false
	if err := tgt.matvec("check", two, N, xd, 0, wd, T, 0, gd); err != nil {
		return err
	}
	got, err := h.down(one, T*N)
	if err != nil {
		return err
	}
	sep, err := h.down(two, T*N)
	if err != nil {
		return err
	}
	q, mm, err := h.downQX(wd.qs.buf[0], T, K)
	if err != nil {
		return err
	}
	xq := qxValues(q, mm, T, K) // one qx serves both parts
	exact, _, e1 := errStats(got, quantRef(3, W, nil, x, xq, g, nil, T, N, K))
	raw, abs, e2 := errStats(got, quantRef(3, W, nil, x, nil, g, nil, T, N, K))
	if err := errors.Join(e1, e2); err != nil {
		return fmt.Errorf("cuda check: %s stack: %w", label, err)
	}
	differ := 0
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(sep[i]) {
			differ++
		}
	}
	st := "ok"
	if !(exact <= tolQuantExact) || !(raw <= tolQuantRaw) || differ > 0 {
		st = "FAIL"
	}
	fmt.Fprintf(w, "%-19s %12.2e %12.2e %12.2e %12s %s (%s; against a launch a part: %d of %d differ)\n", label, exact, raw, abs, fmt.Sprintf("(T=%d)", T), st, name, differ, len(got))
	if st != "ok" {
		return fmt.Errorf("cuda check: %s stack at T=%d: exact rel %.2e, raw rel %.2e, %d outputs differ from a launch a part", label, T, exact, raw, differ)
	}
	return nil
}

// qxValues is the activation (T, K) qx stored as q and (d, d*sum):
// element k of row t is d*q.
func qxValues(q []int8, m []float32, T, K int) []float64 {
	out := make([]float64, T*K)
	for t := 0; t < T; t++ {
		for k := 0; k < K; k++ {
			out[t*K+k] = float64(m[2*(t*K/16+k/16)]) * float64(q[t*K+k])
		}
	}
	return out
}

func randn32(rng *rand.Rand, n int, mean, sd float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(mean + sd*rng.NormFloat64())
	}
	return v
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// checkProduct is one product of x rows [t0, t0+T) (base rows the same)
// through tgt's dispatch, its output poisoned first, as the weight-type
// checks run it: mode 0 stores, 1 adds to base, 2 is the GLU (SiLU) with
// norm, 3 a product with norm, 4 the GLU with GELU-tanh.
func checkProduct(h *devHelper, tgt *Target, mode int, base []float32, xd cu.DevicePtr, Wd, W2d dweight, norm cu.DevicePtr, N, K int) func(t0, T int) ([]float32, error) {
	mvMode := 0 // store; mode 1 adds to base
	if mode == 1 {
		mvMode = 1
	}
	return func(t0, T int) ([]float32, error) {
		var out cu.DevicePtr
		if mode == 1 {
			out = h.up(f32bytes(base[t0*N : (t0+T)*N]))
		} else {
			out = h.poison(T * N)
		}
		if h.err != nil {
			return nil, h.err
		}
		xin := xd + cu.DevicePtr(4*t0*K)
		var e error
		if mode == 2 || mode == 4 {
			tgt.gelu = mode == 4
			e = tgt.glu(out, 0, xin, Wd, W2d, T, norm)
			tgt.gelu = false
		} else {
			e = tgt.matvec("check", out, N, xin, 0, Wd, T, mvMode, norm)
		}
		if e != nil {
			return nil, e
		}
		return h.down(out, T*N)
	}
}
