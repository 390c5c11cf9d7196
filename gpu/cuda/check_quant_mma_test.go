//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// checkQuantMMA checks the Q4_K products on the int8 tensor cores
// (kernels/quant_mma.cu, the MQM knob) as checkQuantKernels does the dp4a
// ones: every mode against float64 with x as qx quantized it (tol
// tolQuantExact) and with float x (tolQuantRaw), T=1..16, every T=k row
// bitwise its T=1 run, in blocks of every warp count (mqmWarps); then
// times them beside the dp4a kernels.
func checkQuantMMA(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	h := newDevHelper(s)
	defer h.free()
	rng := rand.New(rand.NewPCG(23, 9))
	tgt := checkTarget(d, s)
	const N, K, TT = 70, 4352, MaxTokens // a partial last tile of 16 rows; 17 super-blocks over 4, 8 or 16 warps
	x, g, base := randn32(rng, TT*K, 0, 1), randn32(rng, K, 1, 0.2), randn32(rng, TT*N, 0, 1)
	xd, gd := h.up(f32bytes(x)), h.up(f32bytes(g))
	wq, w2q := randBlocks(rng, tensor.Q4_K, N, K), randBlocks(rng, tensor.Q4_K, N, K)
	W, W2 := dequant(tensor.Q4_K, wq, N, K), dequant(tensor.Q4_K, w2q, N, K)
	Wd, e1 := h.upQuant("w", tensor.Q4_K, N, K, wq)
	W2d, e2 := h.upQuant("w2", tensor.Q4_K, N, K, w2q)
	if err := errors.Join(e1, e2, h.err); err != nil {
		return err
	}
	modeNames := []string{"mv", "mv+add", "glu+norm", "mv+norm", "geglu+norm"}
	fmt.Fprintf(w, "\nQ4_K on int8 tensor cores (mqm*_q4k, RIGSCOPE_CUDA_MQM) vs float64 (N=%d K=%d, T=1..16, outputs NaN-poisoned; exact tol %.0e, raw tol %.0e)\n%-6s %-10s %12s %12s %10s\n",
		N, K, tolQuantExact, tolQuantRaw, "warps", "mode", "exact rel", "raw rel", "T=k = T=1")
	var errs []error
	for _, warps := range mqmWarps {
		tgt.tune.MQM = warps
		for mode := 0; mode < 5; mode++ {
			var norm cu.DevicePtr
			if mode >= 2 {
				norm = gd
			}
			run := checkProduct(h, tgt, mode, base, xd, Wd, W2d, norm, N, K)
			ref := quantRef(mode, W, W2, x, nil, g, base, TT, N, K)
			sw, bad, err := sweepT(run, ref, TT, N)
			if err != nil {
				return err
			}
			for _, e := range bad {
				errs = append(errs, fmt.Errorf("mqm %s: %w", modeNames[mode], e))
			}
			bitwise, worstRaw, got16 := sw.bitwise, sw.worst, sw.last
			q, mm, err := h.downQX(Wd.qs.buf[0], TT, K) // as the T=16 run's qx wrote it
			if err != nil {
				return err
			}
			exact := math.NaN()
			if got16 != nil {
				if exact, _, err = errStats(got16, quantRef(mode, W, W2, x, qxValues(q, mm, TT, K), g, base, TT, N, K)); err != nil {
					errs = append(errs, fmt.Errorf("mqm %s: %w", modeNames[mode], err))
				}
			}
			st := "ok"
			if !(exact <= tolQuantExact) || !(worstRaw <= tolQuantRaw) || bitwise != "ok" {
				st = "FAIL"
				errs = append(errs, fmt.Errorf("mqm %s: exact rel %.2e (tol %.0e), raw rel %.2e (tol %.0e), bitwise %s", modeNames[mode], exact, tolQuantExact, worstRaw, tolQuantRaw, bitwise))
			}
			fmt.Fprintf(w, "%-6d %-10s %12.2e %12.2e %10s %s\n", warps, modeNames[mode], exact, worstRaw, bitwise, st)
		}
	}
	errs = append(errs, timeQuantMMA(d, s, tgt, w))
	return errors.Join(errs...)
}

// llama8bShapes are the llama-8b layer matrices the product timings use.
var llama8bShapes = []struct {
	name string
	N, K int
}{{"qkv 6144x4096", 6144, 4096}, {"wo 4096x4096", 4096, 4096}, {"gate 14336x4096", 14336, 4096}, {"down 4096x14336", 4096, 14336}}

// rotatedCopies uploads data, an (N, K) dt layer matrix, as many times as
// make 256 MB or more, so that launches rotated over the copies time
// reads from memory, not from L2.
func rotatedCopies(m *dmodel, name string, dt tensor.DType, N, K int, data []byte) ([]dweight, error) {
	var mats []dweight
	for len(mats) == 0 || int64(len(mats))*mats[0].bytes() < 256<<20 {
		c, err := m.uploadLayerMatrix("", &tensor.Tensor{Name: name, DType: dt, Shape: []int{N, K}, Data: data})
		if err != nil {
			return nil, err
		}
		mats = append(mats, c)
	}
	return mats, nil
}

// timeMQ times the product kernel tgt.mqKernel picks for mats' type and
// shape at T tokens split ks ways (plain: mode store, no fused output
// quantization), launched plainly or with PDL, rotated over mats: x as
// quantized in q, mq; out (T, rows).
func timeMQ(d *Device, s cu.Stream, tgt *Target, timed func(int, func(int) error) (float64, error), mats []dweight,
	q, mq, out cu.DevicePtr, T, ks int, pdl bool) (float64, error) {
	N, K := mats[0].rows, mats[0].cols
	name, grid, block, err := tgt.mqKernel("mq", mats[0].dt, N, K, T, ks)
	if err != nil {
		return 0, err
	}
	fn, err := d.fn(name)
	if err != nil {
		return 0, err
	}
	lf := launch
	if pdl {
		lf = launchPDL
	}
	return timed(2*len(mats), func(i int) error {
		return lf(fn, grid, block, 0, s, ptr(out), i32(N), ptr(q), ptr(mq), ptr(mats[i%len(mats)].w),
			i32(N), i32(K), i32(T), i32(0), i32(ks), ptr(0), ptr(0), ptr(0))
	})
}

// mqmWarps are the block sizes the tensor-core Q4_K products are built in
// (RIGSCOPE_CUDA_MQM: 1 means 4).
var mqmWarps = []int{4, 8, 16}

// timeQuantMMA times the Q4_K products plain (mode store, no fused output
// quantization), dp4a (mq_q4k_*) and on the tensor cores (mqm_q4k_*) in
// blocks of each of mqmWarps, on llama-8b's shapes; weights rotated over
// copies >= 256 MB.
func timeQuantMMA(d *Device, s cu.Stream, tgt *Target, w io.Writer) error {
	_, readGBps, err := Bandwidth(d, 1<<30)
	if err != nil {
		return err
	}
	timed, closeTimer, err := streamTimer(s)
	if err != nil {
		return err
	}
	defer closeTimer()
	rng := rand.New(rand.NewPCG(9, 23))
	Ts := []int{1, 2, 5, 8, 16}
	fmt.Fprintf(w, "\nQ4_K plain products, us: dp4a (mq_q4k) and int8 tensor cores (mqm_q4k) in blocks of w warps; read bandwidth %.0f GB/s; pdl: launched with programmatic dependent launch\n%-18s %7s", readGBps, "matrix", "MB")
	for _, pdl := range []string{"", "pdl"} {
		for _, T := range Ts {
			fmt.Fprintf(w, " %10s", fmt.Sprintf("dp4a %s%d", pdl, T))
			for _, wp := range mqmWarps {
				fmt.Fprintf(w, " %6s", fmt.Sprintf("w%d", wp))
			}
		}
		if d.Major < 9 {
			break
		}
	}
	fmt.Fprintln(w)
	for _, sh := range llama8bShapes {
		h := newDevHelper(s)
		m := &dmodel{}
		err := func() error {
			mats, err := rotatedCopies(m, sh.name, tensor.Q4_K, sh.N, sh.K, randBlocks(rng, tensor.Q4_K, sh.N, sh.K))
			if err != nil {
				return err
			}
			xd := h.up(f32bytes(randn32(rng, MaxTokens*sh.K, 0, 1)))
			out := h.alloc(int64(4 * MaxTokens * sh.N))
			if h.err != nil {
				return h.err
			}
			q, mq, _, err := tgt.quantizeX(xd, mats[0], MaxTokens, 0)
			if err != nil {
				return err
			}
			ks := tgt.mqSplit(sh.N, tensor.Q4_K)
			at := func(T, warps int, pdl bool) (float64, error) {
				tgt.tune.MQM = warps
				defer func() { tgt.tune.MQM = 0 }()
				return timeMQ(d, s, tgt, timed, mats, q, mq, out, T, ks, pdl)
			}
			line := fmt.Sprintf("%-18s %7.1f", sh.name, float64(mats[0].bytes())/1e6)
			for _, pdl := range []bool{false, true} {
				if pdl && d.Major < 9 {
					break
				}
				for _, T := range Ts {
					for i, wp := range append([]int{0}, mqmWarps...) {
						t, err := at(T, wp, pdl)
						if err != nil {
							return err
						}
						line += fmt.Sprintf(" %*.1f", []int{10, 6}[min(i, 1)], t)
					}
				}
			}
			fmt.Fprintln(w, line)
			return nil
		}()
		m.free()
		h.free()
		if err != nil {
			return fmt.Errorf("cuda check: mqm %s: %w", sh.name, err)
		}
	}
	return nil
}
