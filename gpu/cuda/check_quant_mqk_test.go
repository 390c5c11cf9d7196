//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// Q4_K and Q6_K products with x in Q8_K on the int8 tensor cores
// (kernels/quant_mqk.cu, quant_mqk.go; RIGSCOPE_CUDA_MQK, experimental):
// -checks quant -parts mqk.

// mqkVariants are the block shapes the kernels are built in: W warps, U
// super-blocks a warp loads at a time; U 0 is the kernel at U 1 with its
// T=1 rows from its dp4a twin (mqk1_q4k_wW, mqkg1_q4k_wW, mqk1_q6k_wW).
var mqkVariants = []struct{ W, U int }{{4, 1}, {4, 2}, {8, 1}, {8, 2}, {16, 1}, {16, 2}, {4, 0}, {8, 0}, {16, 0}}

// mqkAlloc is a device buffer for an activation of up to MaxTokens rows
// of K quantized to Q8_K, laid out as the product path lays it
// (quant_mqk.go mqkXPtrs): q (T, K) int8 in the lanes' order (kernels
// qk_at), d (T, K/256) float32, s32 and s16 (T, K/32 and K/16) int16.
func (h *devHelper) mqkAlloc(K int) mqkX { return mqkXPtrs(h.alloc(qxBytes(K)), K) }

// at is the activation from token t0 on.
func (x mqkX) at(t0, K int) mqkX {
	return mqkX{x.q + cu.DevicePtr(t0*K), x.d + cu.DevicePtr(4*t0*K/256), x.s32 + cu.DevicePtr(2*t0*K/32), x.s16 + cu.DevicePtr(2*t0*K/16)}
}

// mqkQuantize launches qk_x: x (T, K) float32 into qx (no norm).
func mqkQuantize(d *Device, s cu.Stream, pdl bool, x cu.DevicePtr, qx mqkX, T, K int) error {
	fn, err := d.fn("qk_x")
	if err != nil {
		return err
	}
	return launchWith(pdl, fn, [3]int{K / 256, T, 1}, [3]int{256, 1, 1}, 0, s, ptr(x), i32(K), ptr(qx.q), ptr(qx.d), ptr(qx.s32), ptr(qx.s16), ptr(0), f32(0))
}

// mqkLaunch launches the W-warp, U-deep product of w (N, K) of dt (Q4_K
// or Q6_K) with qx's T tokens into out (T, N): mode 0 stores, 1 adds; with
// w2 (Q4_K) the GLU act(w . x) * (w2 . x) (U 1, mode the act).
func mqkLaunch(d *Device, s cu.Stream, pdl bool, dt tensor.DType, W, U int, out cu.DevicePtr, qx mqkX, w, w2 cu.DevicePtr, N, K, T, mode int) error {
	prefix := "mqk"
	if w2 != 0 {
		prefix = "mqkg"
	}
	name := mqkName(prefix, dt, T, W, max(U, 1))
	if U == 0 && T == 1 {
		name = mqk1Name(prefix, dt, W)
	}
	fn, err := d.fn(name)
	if err != nil {
		return err
	}
	xs := qx.s32
	if dt == tensor.Q6_K {
		xs = qx.s16
	}
	grid, block := [3]int{(N + 15) / 16, 1, 1}, [3]int{32 * W, 1, 1}
	if w2 != 0 {
		return launchWith(pdl, fn, grid, block, 0, s, ptr(out), i32(N), ptr(qx.q), ptr(qx.d), ptr(xs), ptr(w), ptr(w2), i32(N), i32(K), i32(T), i32(mode))
	}
	return launchWith(pdl, fn, grid, block, 0, s, ptr(out), i32(N), ptr(qx.q), ptr(qx.d), ptr(xs), ptr(w), i32(N), i32(K), i32(T), i32(mode))
}

// q8KEmulate is Q8_K of x (T, K) as the CPU's quantizeRowQ8KGo computes
// it (plain element order): q, and d per 256.
func q8KEmulate(x []float32, T, K int) ([]int8, []float32) {
	q, d := make([]int8, T*K), make([]float32, T*K/256)
	for b := range d {
		xs := x[256*b : 256*b+256]
		var amax float32
		for _, v := range xs {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		s := amax / 127
		var id float32
		if s != 0 {
			id = 1 / s
		}
		d[b] = s
		for i, v := range xs {
			q[256*b+i] = int8(math.RoundToEven(float64(v * id)))
		}
	}
	return q, d
}

// mqkPerfect is quantRef's product for mode with x as the product path
// quantizes it for mqk: rmsnorm(x) * g first (modes 2-4, in float64 then
// float32), then Q8_K (q8KEmulate), float64 after.
func mqkPerfect(mode int, W, W2 []float64, x, g, base []float32, T, N, K int) []float64 {
	y := x
	if mode >= 2 {
		y = make([]float32, T*K)
		for t := 0; t < T; t++ {
			var ss float64
			for _, v := range x[t*K : t*K+K] {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(K)+1e-5)
			for k := 0; k < K; k++ {
				y[t*K+k] = float32(float64(x[t*K+k]) * inv * float64(g[k]))
			}
		}
	}
	q, d := q8KEmulate(y, T, K)
	yq := make([]float64, T*K)
	for i := range yq {
		yq[i] = float64(d[i/256]) * float64(q[i])
	}
	switch mode {
	case 2, 4:
		a, b := quantRef(0, W, nil, y, yq, nil, base, T, N, K), quantRef(0, W2, nil, y, yq, nil, base, T, N, K)
		for i := range a {
			if mode == 4 {
				a[i] = 0.5 * a[i] * (1 + math.Tanh(0.7978845608028654*(a[i]+0.044715*a[i]*a[i]*a[i]))) * b[i]
			} else {
				a[i] = a[i] / (1 + math.Exp(-a[i])) * b[i]
			}
		}
		return a
	case 3:
		return quantRef(0, W, nil, y, yq, nil, base, T, N, K)
	}
	return quantRef(mode, W, nil, y, yq, nil, base, T, N, K)
}

// checkQX compares qx as qk_x wrote it for x (T, K) with q8KEmulate: q
// (through qk_at's order), d and the sums, bit for bit.
func (h *devHelper) checkQX(qx mqkX, x []float32, T, K int) error {
	if err := h.s.Synchronize(); err != nil {
		return fmt.Errorf("cuda check: %w", err)
	}
	nb := K / 256
	gq, gs, gs16 := make([]int8, T*K), make([]int16, T*K/32), make([]int16, T*K/16)
	if err := errors.Join(cu.MemcpyDtoH(unsafe.Pointer(&gq[0]), qx.q, int64(T*K)),
		cu.MemcpyDtoH(unsafe.Pointer(&gs[0]), qx.s32, int64(2*T*K/32)),
		cu.MemcpyDtoH(unsafe.Pointer(&gs16[0]), qx.s16, int64(2*T*K/16))); err != nil {
		return fmt.Errorf("cuda check: download: %w", err)
	}
	gd, err := h.down(qx.d, T*nb)
	if err != nil {
		return err
	}
	q, dd := q8KEmulate(x, T, K)
	for b := 0; b < T*nb; b++ {
		if math.Float32bits(gd[b]) != math.Float32bits(dd[b]) {
			return fmt.Errorf("qk_x: block %d scale %g, want %g", b, gd[b], dd[b])
		}
		for e := 0; e < 256; e++ {
			if got, want := gq[256*b+(e>>3&3)*64+(e>>5)*8+e&7], q[256*b+e]; got != want {
				return fmt.Errorf("qk_x: block %d element %d is %d, want %d", b, e, got, want)
			}
		}
		for sb := 0; sb < 16; sb++ {
			var sum int16
			for _, v := range q[256*b+16*sb : 256*b+16*sb+16] {
				sum += int16(v)
			}
			if gs16[16*b+sb] != sum {
				return fmt.Errorf("qk_x: block %d group %d sum %d, want %d", b, sb, gs16[16*b+sb], sum)
			}
			if sb%2 == 1 && gs[8*b+sb/2] != gs16[16*b+sb-1]+sum {
				return fmt.Errorf("qk_x: block %d sub-block %d sum %d, want %d", b, sb/2, gs[8*b+sb/2], gs16[16*b+sb-1]+sum)
			}
		}
	}
	return nil
}

// checkQuantMQK checks qk_x bit for bit against the CPU's Q8_K; every mqk
// kernel (Q4_K and Q6_K in both modes and each block shape, the Q4_K GLU)
// for T = 1..16 against float64 with x as quantized (tol tolQuantExact)
// and with float x (tolQuantRaw); the product path with the MQK knob
// (qk_x's fused RMSNorm, stacks, the GLU) in every mode against float x;
// every T=k row bitwise its T=1 run. Then it times them.
func checkQuantMQK(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	h := newDevHelper(s)
	defer h.free()
	rng := rand.New(rand.NewPCG(29, 3))
	const N, K, TT = 70, 4352, MaxTokens // a partial last tile of 16 rows; 17 super-blocks
	x, base, gn := randn32(rng, TT*K, 0, 1), randn32(rng, TT*N, 0, 1), randn32(rng, K, 1, 0.2)
	for t := 0; t < TT; t++ { // an outlier a token: some blocks' scale is far from the rest
		x[t*K+rng.IntN(K)] *= 40
	}
	xd, gd, qx := h.up(f32bytes(x)), h.up(f32bytes(gn)), h.mqkAlloc(K)
	if h.err != nil {
		return h.err
	}
	if err := mqkQuantize(d, s, false, xd, qx, TT, K); err != nil {
		return err
	}
	if err := h.checkQX(qx, x, TT, K); err != nil {
		return err
	}
	q, dq := q8KEmulate(x, TT, K)
	xq := make([]float64, TT*K) // x as quantized
	for i := range xq {
		xq[i] = float64(dq[i/256]) * float64(q[i])
	}
	fmt.Fprintf(w, "\nqk_x: Q8_K bitwise the CPU's (T=%d, K=%d)\nmqk kernels vs float64 (N=%d K=%d, T=1..16, outputs NaN-poisoned; exact tol %.0e; raw tol: a perfect kernel's error against float x, +5%% +1e-3)\n%-5s %-6s %-6s %12s %12s %9s %10s\n",
		TT, K, N, K, tolQuantExact, "type", "W,U", "mode", "exact rel", "raw rel", "raw tol", "T=k = T=1")
	var errs []error
	// rows runs a launch for T = 1..16 and each row alone, against the
	// exact reference (x as quantized, when known) and the raw one (float
	// x), the latter within what a perfect kernel (perfect: x as the
	// emulation quantizes it, float64 after) is off it by: with one scale
	// per 256 and an outlier a token that is up to 3% (qx's per-32 scales
	// stay under tolQuantRaw).
	rows := func(label string, run func(t0, T int) ([]float32, error), exactRef, perfect, rawRef []float64) error {
		rawTol := 0.0
		for T := 1; T <= TT; T++ {
			p32 := make([]float32, T*N)
			for i := range p32 {
				p32[i] = float32(perfect[i])
			}
			r, _, _ := errStats(p32, rawRef[:T*N])
			rawTol = max(rawTol, 1.05*r+1e-3)
		}
		sw, bad, err := sweepT(run, rawRef, TT, N)
		if err != nil {
			return err
		}
		for _, e := range bad {
			errs = append(errs, fmt.Errorf("%s: %w", label, e))
		}
		bitwise, raw, exact := sw.bitwise, sw.worst, 0.0
		if exactRef != nil { // every T=k row is bitwise its T=1 run, so T=16's rows stand for all
			exact = math.NaN()
			if sw.last != nil {
				exact, _, _ = errStats(sw.last, exactRef[:TT*N])
			}
		}
		st := "ok"
		if !(exact <= tolQuantExact) || !(raw <= rawTol) || bitwise != "ok" {
			st = "FAIL"
			errs = append(errs, fmt.Errorf("%s: exact rel %.2e (tol %.0e), raw rel %.2e (tol %.2e), bitwise %s", label, exact, tolQuantExact, raw, rawTol, bitwise))
		}
		exactS := "-"
		if exactRef != nil {
			exactS = fmt.Sprintf("%.2e", exact)
		}
		fmt.Fprintf(w, "%s %12s %12.2e %9.2e %10s %s\n", label, exactS, raw, rawTol, bitwise, st)
		return nil
	}
	out := func(mode, t0, T int) cu.DevicePtr {
		if mode == 1 {
			return h.up(f32bytes(base[t0*N : (t0+T)*N]))
		}
		return h.poison(T * N)
	}
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		wq, w2q := randBlocks(rng, dt, N, K), randBlocks(rng, dt, N, K)
		W, W2 := dequant(dt, wq, N, K), dequant(dt, w2q, N, K)
		// Uploaded as the product path uploads them (followed by quantPad
		// zero bytes, which the kernels may read): the kernel rows launch
		// on Wd.w and W2d.w, the product-path rows below on Wd and W2d.
		Wd, e1 := h.upQuant("w", dt, N, K, wq)
		W2d, e2 := h.upQuant("w2", dt, N, K, w2q)
		if err := errors.Join(e1, e2); err != nil {
			return err
		}
		wd, w2d := Wd.w, W2d.w
		for mode := 0; mode < 2; mode++ {
			exact := quantRef(mode, W, nil, x, xq, nil, base, TT, N, K)
			raw := quantRef(mode, W, nil, x, nil, nil, base, TT, N, K)
			for _, v := range mqkVariants {
				run := func(t0, T int) ([]float32, error) {
					o := out(mode, t0, T)
					if h.err != nil {
						return nil, h.err
					}
					if err := mqkLaunch(d, s, false, dt, v.W, v.U, o, qx.at(t0, K), wd, 0, N, K, T, mode); err != nil {
						return nil, err
					}
					return h.down(o, T*N)
				}
				if err := rows(fmt.Sprintf("%-5v %-6s %-6d", dt, fmt.Sprintf("%d,%d", v.W, v.U), mode), run, exact, exact, raw); err != nil {
					return err
				}
			}
		}
		if dt == tensor.Q4_K { // the GLU kernel, SiLU, x as given
			exact, raw := make([]float64, TT*N), make([]float64, TT*N)
			for i, xs := range [][]float64{xq, nil} {
				ref := []([]float64){exact, raw}[i]
				a := quantRef(0, W, nil, x, xs, nil, base, TT, N, K)
				b := quantRef(0, W2, nil, x, xs, nil, base, TT, N, K)
				for k := range ref {
					ref[k] = a[k] / (1 + math.Exp(-a[k])) * b[k]
				}
			}
			for _, v := range mqkVariants {
				if v.U == 2 {
					continue
				}
				run := func(t0, T int) ([]float32, error) {
					o := out(0, t0, T)
					if h.err != nil {
						return nil, h.err
					}
					if err := mqkLaunch(d, s, false, dt, v.W, v.U, o, qx.at(t0, K), wd, w2d, N, K, T, 0); err != nil {
						return nil, err
					}
					return h.down(o, T*N)
				}
				if err := rows(fmt.Sprintf("%-5v %-6s %-6s", dt, fmt.Sprintf("%d,%d", v.W, v.U), "glu"), run, exact, exact, raw); err != nil {
					return err
				}
			}
		}
		// The product path with the knob: qk_x (with the norm), then the
		// kernels, for every mode (a Q6_K GLU takes the dp4a kernels).
		tgt := checkTarget(d, s)
		for _, c := range []struct { // path1: a product's T=1 rows from its dp4a twin (mqk1_*), the rest on the tensor cores; auto: a shape per matrix (mqkShape)
			mqk   int
			one   bool
			label string
		}{{8, false, "path"}, {8, true, "path1"}, {mqkAuto, true, "auto"}} {
			tgt.tune.MQK, tgt.tune.MQK1 = c.mqk, c.one
			label := c.label
			for mode := 0; mode < 5; mode++ {
				var norm cu.DevicePtr
				if mode >= 2 {
					norm = gd
				}
				run := checkProduct(h, tgt, mode, base, xd, Wd, W2d, norm, N, K)
				raw := quantRef(mode, W, W2, x, nil, gn, base, TT, N, K)
				perfect := mqkPerfect(mode, W, W2, x, gn, base, TT, N, K)
				if err := rows(fmt.Sprintf("%-5v %-6s %-6s", dt, label, []string{"mv", "add", "glu+n", "mv+n", "geglu"}[mode]), run, nil, perfect, raw); err != nil {
					return err
				}
			}
		}
	}
	errs = append(errs, timeQuantMQK(d, s, w))
	return errors.Join(errs...)
}

// timeQuantMQK times, with PDL on sm_90, on llama-8b's shapes, weights
// rotated over copies >= 256 MB: the Q4_K and Q6_K products plain (mode
// store), the dp4a kernel the step dispatches (x in qx, no fused output
// quantization) beside each mqk variant (x in Q8_K); the Q4_K GLU on
// gate's shape (mqkg, gate and up); and qk_x itself.
func timeQuantMQK(d *Device, s cu.Stream, w io.Writer) error {
	_, readGBps, err := Bandwidth(d, 1<<30)
	if err != nil {
		return err
	}
	timed, closeTimer, err := streamTimer(s)
	if err != nil {
		return err
	}
	defer closeTimer()
	pdl := d.Major >= 9
	tgt := checkTarget(d, s)
	rng := rand.New(rand.NewPCG(9, 29))
	Ts := []int{1, 2, 5, 8, 16}
	fmt.Fprintf(w, "\nplain products, us (pdl %v): dp4a (mq_*, x in qx) and mqk wW,uU (x in Q8_K); GLU: mqkg (gate and up) at w4,u1 w8,u1 w16,u1 w4,u0 w8,u0 w16,u0 (u0: mqk1_*/mqkg1_* at T=1); read bandwidth %.0f GB/s\n%-5s %-18s %7s %2s %8s", pdl, readGBps, "type", "matrix", "MB", "T", "dp4a")
	for _, v := range mqkVariants {
		fmt.Fprintf(w, " %8s", fmt.Sprintf("w%d,u%d", v.W, v.U))
	}
	fmt.Fprintf(w, " %9s %9s\n", "best GB/s", "qk_x us")
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		for _, sh := range llama8bShapes {
			h := newDevHelper(s)
			m := &dmodel{}
			err := func() error {
				mats, err := rotatedCopies(m, sh.name, dt, sh.N, sh.K, randBlocks(rng, dt, sh.N, sh.K))
				if err != nil {
					return err
				}
				glu := dt == tensor.Q4_K && sh.N > sh.K
				var ups []dweight
				if glu {
					if ups, err = rotatedCopies(m, sh.name, dt, sh.N, sh.K, randBlocks(rng, dt, sh.N, sh.K)); err != nil {
						return err
					}
				}
				xd := h.up(f32bytes(randn32(rng, MaxTokens*sh.K, 0, 1)))
				out, qx := h.alloc(int64(4*MaxTokens*sh.N)), h.mqkAlloc(sh.K)
				if h.err != nil {
					return h.err
				}
				q, mq, _, err := tgt.quantizeX(xd, mats[0], MaxTokens, 0)
				if err != nil {
					return err
				}
				if err := mqkQuantize(d, s, false, xd, qx, MaxTokens, sh.K); err != nil {
					return err
				}
				ks := tgt.mqSplit(sh.N, dt)
				MB := float64(mats[0].bytes()) / 1e6
				for _, T := range Ts {
					dp, err := timeMQ(d, s, tgt, timed, mats, q, mq, out, T, ks, pdl)
					if err != nil {
						return err
					}
					line, best := fmt.Sprintf("%-5v %-18s %7.1f %2d %8.1f", dt, sh.name, MB, T, dp), math.Inf(1)
					for _, v := range mqkVariants {
						t, err := timed(2*len(mats), func(i int) error {
							return mqkLaunch(d, s, pdl, dt, v.W, v.U, out, qx, mats[i%len(mats)].w, 0, sh.N, sh.K, T, 0)
						})
						if err != nil {
							return err
						}
						best = min(best, t)
						line += fmt.Sprintf(" %8.1f", t)
					}
					tq, err := timed(20, func(int) error { return mqkQuantize(d, s, pdl, xd, qx, T, sh.K) })
					if err != nil {
						return err
					}
					fmt.Fprintf(w, "%s %9.0f %9.1f\n", line, MB/best*1e3, tq)
					if !glu {
						continue
					}
					line, best = fmt.Sprintf("%-5v %-18s %7.1f %2d %8s", dt, "gate+up GLU", 2*MB, T, "-"), math.Inf(1)
					for _, v := range mqkVariants {
						if v.U == 2 {
							continue
						}
						t, err := timed(2*len(mats), func(i int) error {
							return mqkLaunch(d, s, pdl, dt, v.W, v.U, out, qx, mats[i%len(mats)].w, ups[i%len(ups)].w, sh.N, sh.K, T, 0)
						})
						if err != nil {
							return err
						}
						best = min(best, t)
						line += fmt.Sprintf(" %8.1f", t)
					}
					fmt.Fprintf(w, "%s %9.0f\n", line, 2*MB/best*1e3)
				}
				return nil
			}()
			m.free()
			h.free()
			if err != nil {
				return fmt.Errorf("cuda check: mqk %v %s: %w", dt, sh.name, err)
			}
		}
	}
	return nil
}
