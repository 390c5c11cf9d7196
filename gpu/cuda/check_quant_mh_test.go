//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// mhVariants are the fp16 tensor-core products (kernels/quant_mh.cu
// mhq_*) of each type: blocks of 4, 8, 16 warps, and for Q4_K with the
// high nibbles taken as 16q (e: x from mh_x with odd16).
var mhVariants = map[tensor.DType][]string{
	tensor.Q4_K: {"q4k_w4", "q4k_w8", "q4k_w16", "q4k_w8e", "q4k_w16e"},
	tensor.Q5_K: {"q5k_w8", "q5k_w16"},
	tensor.Q6_K: {"q6k_w8", "q6k_w16"},
	tensor.Q8_0: {"q80_w8", "q80_w16"},
	tensor.Q4_0: {"q40_w8", "q40_w16"},
}

// mhTypes are the types with fp16 tensor-core products, in check order.
var mhTypes = []tensor.DType{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q8_0, tensor.Q4_0}

// mhWarps is the block size of mhq_<v>.
func mhWarps(v string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(v[strings.Index(v, "_w")+2:], "e"))
	return n
}

// checkQuantMH checks the products on the fp16 tensor cores (mh_x, then
// mhq_*; the product path with RIGSCOPE_CUDA_MH, experimental) of every
// type they take: the dispatch (checkMHPath); each variant's store and add
// against float64 of the exact weights and x at T=1..8 (tol tolMH: x and
// the dequantized weights are rounded to fp16), every T=k row bitwise its
// T=1 run; then times them beside the dp4a kernels on llama-8b's shapes.
func checkQuantMH(d *Device, w io.Writer) error {
	errs := []error{checkMHPath(d, w)}
	for _, dt := range mhTypes {
		errs = append(errs, checkMHType(d, dt, w))
	}
	for _, dt := range mhTypes {
		errs = append(errs, timeQuantMH(d, dt, w))
	}
	return errors.Join(errs...)
}

func checkMHType(d *Device, dt tensor.DType, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	h := newDevHelper(s)
	defer h.free()
	rng := rand.New(rand.NewPCG(5, 77))
	const N, K, TT, tolMH = 70, 4352, 8, 4e-3
	x, base := randn32(rng, TT*K, 0, 1), randn32(rng, TT*N, 0, 1)
	wq := randBlocks(rng, dt, N, K)
	W := dequant(dt, wq, N, K)
	Wd, err := h.upQuant("w", dt, N, K, wq)
	if err != nil {
		return err
	}
	xd, xh, xs, xhe, xse := h.up(f32bytes(x)), h.alloc(2*TT*K), h.alloc(4*TT), h.alloc(2*TT*K), h.alloc(4*TT)
	if h.err != nil {
		return h.err
	}
	if err := errors.Join(mhX(d, s, xd, xh, xs, TT, K, false), mhX(d, s, xd, xhe, xse, TT, K, true)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%v on fp16 tensor cores (mh_x, mhq_*; experimental) vs float64 of the exact weights and x (N=%d K=%d, T=1..8, outputs NaN-poisoned; tol %.0e)\n%-9s %-8s %12s %10s\n",
		dt, N, K, tolMH, "kernel", "mode", "rel", "T=k = T=1")
	var errs []error
	for _, v := range mhVariants[dt] {
		xh, xs := xh, xs
		if strings.HasSuffix(v, "e") {
			xh, xs = xhe, xse
		}
		for mode := 0; mode < 2; mode++ {
			run := func(t0, T int) ([]float32, error) {
				var out cu.DevicePtr
				if mode == 1 {
					out = h.up(f32bytes(base[t0*N : (t0+T)*N]))
				} else {
					out = h.poison(T * N)
				}
				if h.err != nil {
					return nil, h.err
				}
				if err := mhLaunch(d, s, false, v, out, N, xh+cu.DevicePtr(2*t0*K), xs+cu.DevicePtr(4*t0), Wd.w, N, K, T, mode); err != nil {
					return nil, err
				}
				return h.down(out, T*N)
			}
			sw, bad, err := sweepT(run, quantRef(mode, W, nil, x, nil, nil, base, TT, N, K), TT, N)
			if err != nil {
				return err
			}
			for _, e := range bad {
				errs = append(errs, fmt.Errorf("mh %s mode %d %w", v, mode, e))
			}
			worst, bitwise := sw.worst, sw.bitwise
			st := "ok"
			if !(worst <= tolMH) || bitwise != "ok" || len(bad) > 0 {
				st = "FAIL"
				errs = append(errs, fmt.Errorf("mh %s mode %d: rel %.2e (tol %.0e), bitwise %s", v, mode, worst, tolMH, bitwise))
			}
			fmt.Fprintf(w, "%-9s %-8s %12.2e %10s %s\n", v, []string{"mv", "mv+add"}[mode], worst, bitwise, st)
		}
	}
	return errors.Join(errs...)
}

// checkMHPath checks the product path on the fp16 tensor cores
// (RIGSCOPE_CUDA_MH=8|16, quant_mh.go: mh_x or mh_xn, then mhq_* or mhg_*)
// through tgt's dispatch, as checkQuantKernels checks the dp4a path:
// store, add, the GLU (SiLU, GELU-tanh) and a product with RMSNorm,
// against float64 of the exact weights and float x at T=1..16 (past 8 in
// launches of 8; tol 4e-3: x and the weights rounded to fp16), every T=k
// row bitwise its T=1 run.
func checkMHPath(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	h := newDevHelper(s)
	defer h.free()
	rng := rand.New(rand.NewPCG(31, 3))
	tgt := checkTarget(d, s)
	const N, K, TT, tolMH = 70, 4352, MaxTokens, 4e-3
	x, g, base := randn32(rng, TT*K, 0, 1), randn32(rng, K, 1, 0.2), randn32(rng, TT*N, 0, 1)
	xd, gd := h.up(f32bytes(x)), h.up(f32bytes(g))
	modeNames := []string{"mv", "mv+add", "glu+norm", "mv+norm", "geglu+norm"}
	fmt.Fprintf(w, "\nthe product path on fp16 tensor cores (RIGSCOPE_CUDA_MH) vs float64 (N=%d K=%d, T=1..%d, outputs NaN-poisoned; tol %.0e)\n%-6s %-6s %-11s %12s %12s %12s\n",
		N, K, TT, tolMH, "type", "warps", "mode", "rel", "max abs", "T=k = T=1")
	var errs []error
	for _, dt := range mhTypes {
		wq, w2q := randBlocks(rng, dt, N, K), randBlocks(rng, dt, N, K)
		W, W2 := dequant(dt, wq, N, K), dequant(dt, w2q, N, K)
		Wd, e1 := h.upQuant("w", dt, N, K, wq)
		W2d, e2 := h.upQuant("w2", dt, N, K, w2q)
		if err := errors.Join(e1, e2, h.err); err != nil {
			return err
		}
		for _, warps := range []int{8, 16} {
			tgt.tune.MH = warps
			if !tgt.mhOn(Wd) {
				errs = append(errs, fmt.Errorf("mh path %v w%d: the dispatch does not take (%d, %d)", dt, warps, N, K))
				continue
			}
			for mode := range modeNames {
				var norm cu.DevicePtr
				if mode >= 2 {
					norm = gd
				}
				run := checkProduct(h, tgt, mode, base, xd, Wd, W2d, norm, N, K)
				sw, bad, err := sweepT(run, quantRef(mode, W, W2, x, nil, g, base, TT, N, K), TT, N)
				if err != nil {
					return err
				}
				for _, e := range bad {
					errs = append(errs, fmt.Errorf("mh path %v w%d %s %w", dt, warps, modeNames[mode], e))
				}
				st := "ok"
				if !(sw.worst <= tolMH) || sw.bitwise != "ok" || len(bad) > 0 {
					st = "FAIL"
					errs = append(errs, fmt.Errorf("mh path %v w%d %s: rel %.2e (tol %.0e), bitwise %s", dt, warps, modeNames[mode], sw.worst, tolMH, sw.bitwise))
				}
				short := sw.bitwise
				if len(short) > 12 {
					short = "FAIL"
				}
				fmt.Fprintf(w, "%-6v %-6d %-11s %12.2e %12.2e %12s %s\n", dt, warps, modeNames[mode], sw.worst, sw.worstAbs, short, st)
			}
		}
	}
	tgt.tune.MH = 0
	return errors.Join(errs...)
}

// mhX launches mh_x: xh (T, K) fp16 and xs (T) of x (T, K) (odd16: for
// the e kernels).
func mhX(d *Device, s cu.Stream, x, xh, xs cu.DevicePtr, T, K int, odd16 bool) error {
	fn, err := d.fn("mh_x")
	if err != nil {
		return err
	}
	o := 0
	if odd16 {
		o = 1
	}
	return launch(fn, [3]int{T, 1, 1}, [3]int{mhxThreads, 1, 1}, 0, s, ptr(x), ptr(xh), ptr(xs), i32(K), i32(o))
}

// mhLaunch launches mhq_<v>: out (T, ldo) [+]= xh . w^T.
func mhLaunch(d *Device, s cu.Stream, pdl bool, v string, out cu.DevicePtr, ldo int, xh, xs, w cu.DevicePtr, N, K, T, mode int) error {
	warps := mhWarps(v)
	fn, err := d.fn("mhq_" + v)
	if err != nil {
		return err
	}
	lf := launch
	if pdl {
		lf = launchPDL
	}
	return lf(fn, [3]int{(N + 15) / 16, 1, 1}, [3]int{32 * warps, 1, 1}, 0, s, ptr(out), i32(ldo), ptr(xh), ptr(xs), ptr(w),
		i32(N), i32(K), i32(T), i32(mode))
}

// timeQuantMH times dt's mhq_* (plain, store) beside the dp4a mq_* on
// llama-8b's shapes, weights rotated over copies >= 256 MB, and mh_x.
func timeQuantMH(d *Device, dt tensor.DType, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	timed, closeTimer, err := streamTimer(s)
	if err != nil {
		return err
	}
	defer closeTimer()
	tgt := checkTarget(d, s)
	rng := rand.New(rand.NewPCG(9, 23))
	Ts := []int{1, 2, 5, 8}
	fmt.Fprintf(w, "\n%v plain products, us: dp4a (mq_*) and fp16 tensor cores (mhq_*); pdl: launched with programmatic dependent launch\n%-18s %7s", dt, "matrix", "MB")
	for _, pdl := range []string{"", "pdl"} {
		for _, T := range Ts {
			fmt.Fprintf(w, " %10s", fmt.Sprintf("dp4a %s%d", pdl, T))
			for _, v := range mhVariants[dt] {
				fmt.Fprintf(w, " %8s", v)
			}
		}
	}
	fmt.Fprintln(w)
	for _, sh := range llama8bShapes {
		h := newDevHelper(s)
		m := &dmodel{}
		err := func() error {
			mats, err := rotatedCopies(m, sh.name, dt, sh.N, sh.K, randBlocks(rng, dt, sh.N, sh.K))
			if err != nil {
				return err
			}
			xd := h.up(f32bytes(randn32(rng, MaxTokens*sh.K, 0, 1)))
			out := h.alloc(int64(4 * MaxTokens * sh.N))
			xh, xs, xhe, xse := h.alloc(int64(2*8*sh.K)), h.alloc(4*8), h.alloc(int64(2*8*sh.K)), h.alloc(4*8)
			if h.err != nil {
				return h.err
			}
			if err := errors.Join(mhX(d, s, xd, xh, xs, 8, sh.K, false), mhX(d, s, xd, xhe, xse, 8, sh.K, true)); err != nil {
				return err
			}
			q, mq, _, err := tgt.quantizeX(xd, mats[0], MaxTokens, 0)
			if err != nil {
				return err
			}
			ks := tgt.mqSplit(sh.N, dt)
			at := func(T int, v string, pdl bool) (float64, error) {
				if v != "" {
					xh, xs := xh, xs
					if strings.HasSuffix(v, "e") {
						xh, xs = xhe, xse
					}
					return timed(2*len(mats), func(i int) error {
						return mhLaunch(d, s, pdl, v, out, sh.N, xh, xs, mats[i%len(mats)].w, sh.N, sh.K, T, 0)
					})
				}
				return timeMQ(d, s, tgt, timed, mats, q, mq, out, T, ks, pdl)
			}
			line := fmt.Sprintf("%-18s %7.1f", sh.name, float64(mats[0].bytes())/1e6)
			for _, pdl := range []bool{false, true} {
				for _, T := range Ts {
					for i, v := range append([]string{""}, mhVariants[dt]...) {
						t, err := at(T, v, pdl)
						if err != nil {
							return err
						}
						line += fmt.Sprintf(" %*.1f", []int{10, 8}[min(i, 1)], t)
					}
				}
			}
			xt, err := timed(50, func(int) error { return mhX(d, s, xd, xh, xs, 5, sh.K, false) })
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s   (mh_x of 5 tokens: %.1f us)\n", line, xt)
			return nil
		}()
		m.free()
		h.free()
		if err != nil {
			return fmt.Errorf("cuda check: mh %s: %w", sh.name, err)
		}
	}
	return nil
}
