//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// mqmMaxT is the most tokens mqm_q4k (kernels/quant_mma.cu) takes: one
// 8-column tile of the tensor-core product.
const mqmMaxT = 8

// launchMQM launches the experimental tensor-core Q4_K product: out (T,
// ldo) [+]= x . w^T with x as qx quantized it (q, m).
func launchMQM(d *Device, s cu.Stream, pdl bool, out cu.DevicePtr, ldo int, q, m cu.DevicePtr, w dweight, T, mode int) error {
	if w.dt != tensor.Q4_K || len(w.parts) > 0 || T < 1 || T > mqmMaxT || w.cols%256 != 0 {
		return fmt.Errorf("cuda check: mqm_q4k takes one Q4_K matrix of whole super-blocks and 1..%d tokens, not %v (%d, %d) at T=%d", mqmMaxT, w.dt, w.rows, w.cols, T)
	}
	fn, err := d.fn("mqm_q4k")
	if err != nil {
		return err
	}
	lf := launch
	if pdl {
		lf = launchPDL
	}
	return lf(fn, [3]int{(w.rows + 15) / 16, 1, 1}, [3]int{128, 1, 1}, 0, s,
		ptr(out), i32(ldo), ptr(q), ptr(m), ptr(w.w), i32(w.rows), i32(w.cols), i32(T), i32(mode))
}

// checkQuantMMA checks mqm_q4k against float64 (x as qx quantized it, as
// the dp4a products' exact check) with T=k rows bitwise the T=1 rows, then
// times it beside mq_q4k (the dp4a product, plain, no fused output
// quantization) on llama-8b's shapes at 1, 2, 5 and 8 tokens.
func checkQuantMMA(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	h := newDevHelper(s)
	defer h.free()
	rng := rand.New(rand.NewPCG(23, 9))
	tgt := &Target{launcher: launcher{dev: d, stream: s, ls: s, eps: 1e-5}, cfg: model.Config{NormEps: 1e-5}}
	const N, K = 70, 4352 // a partial last tile; 17 super-blocks over 4 warps
	x, base := randn32(rng, mqmMaxT*K, 0, 1), randn32(rng, mqmMaxT*N, 0, 1)
	xd := h.up(f32bytes(x))
	wq := randBlocks(rng, tensor.Q4_K, N, K)
	m := &dmodel{}
	defer m.free()
	Wd, err := m.uploadMatrix(&tensor.Tensor{Name: "w", DType: tensor.Q4_K, Shape: []int{N, K}, Data: wq})
	if err != nil {
		return err
	}
	if h.err != nil {
		return h.err
	}
	if _, _, _, err := tgt.quantizeX(xd, Wd, mqmMaxT, 0); err != nil {
		return err
	}
	qh, mh, err := h.downQX(Wd.qs.buf[0], mqmMaxT, K)
	if err != nil {
		return err
	}
	W := dequant(tensor.Q4_K, wq, N, K)
	var errs []error
	fmt.Fprintf(w, "\nQ4_K on int8 tensor cores (mqm_q4k, experimental) vs float64 (N=%d K=%d, x as qx quantized it, tol %.0e)\n%-8s %2s %12s %10s\n", N, K, tolQuantExact, "mode", "T", "exact rel", "T=k = T=1")
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
			qt, mt, _ := qxRows(Wd.qs.buf[0], K, t0)
			if err := launchMQM(d, s, false, out, N, qt, mt, Wd, T, mode); err != nil {
				return nil, err
			}
			return h.down(out, T*N)
		}
		ref := quantRef(mode, W, nil, x, qxValues(qh, mh, mqmMaxT, K), nil, base, mqmMaxT, N, K)
		one := make([][]float32, mqmMaxT)
		for t := range one {
			if one[t], err = run(t, 1); err != nil {
				return err
			}
		}
		for T := 1; T <= mqmMaxT; T++ {
			got, err := run(0, T)
			if err != nil {
				return err
			}
			bitwise := rowsBitwise(got, one, T, N)
			rel, _, e := errStats(got, ref[:T*N])
			st := "ok"
			if e != nil || !(rel <= tolQuantExact) || bitwise != "ok" {
				st = "FAIL"
				errs = append(errs, fmt.Errorf("mqm_q4k mode %d T=%d: exact rel %.2e (tol %.0e), bitwise %s, %v", mode, T, rel, tolQuantExact, bitwise, e))
			}
			fmt.Fprintf(w, "%-8s %2d %12.2e %10s %s\n", []string{"mv", "mv+add"}[mode], T, rel, bitwise, st)
		}
	}
	errs = append(errs, timeQuantMMA(d, s, tgt, w))
	return errors.Join(errs...)
}

// timeQuantMMA times mqm_q4k and mq_q4k (plain, mode store, mqSplit's K
// split) on llama-8b's shapes, weights rotated over copies >= 256 MB.
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
	Ts := []int{1, 2, 5, 8}
	fmt.Fprintf(w, "\nQ4_K plain products, dp4a (mq_q4k) vs int8 tensor cores (mqm_q4k), us (read bandwidth %.0f GB/s; pdl: launched with programmatic dependent launch)\n%-18s %7s", readGBps, "matrix", "MB")
	for _, T := range Ts {
		fmt.Fprintf(w, " %8s %8s", fmt.Sprintf("dp4a T=%d", T), "mma")
	}
	fmt.Fprintf(w, " %9s %9s\n", "mma pdl 1", "mma pdl 5")
	shapes := []struct {
		name string
		N, K int
	}{{"qkv 6144x4096", 6144, 4096}, {"wo 4096x4096", 4096, 4096}, {"gate 14336x4096", 14336, 4096}, {"down 4096x14336", 4096, 14336}}
	for _, sh := range shapes {
		h := newDevHelper(s)
		m := &dmodel{}
		err := func() error {
			data := randBlocks(rng, tensor.Q4_K, sh.N, sh.K)
			one, err := m.uploadLayerMatrix(&tensor.Tensor{Name: sh.name, DType: tensor.Q4_K, Shape: []int{sh.N, sh.K}, Data: data})
			if err != nil {
				return err
			}
			mats := []dweight{one}
			for int64(len(mats))*one.bytes() < 256<<20 {
				c, err := m.uploadLayerMatrix(&tensor.Tensor{Name: sh.name, DType: tensor.Q4_K, Shape: []int{sh.N, sh.K}, Data: data})
				if err != nil {
					return err
				}
				mats = append(mats, c)
			}
			xd := h.up(f32bytes(randn32(rng, MaxTokens*sh.K, 0, 1)))
			out := h.alloc(int64(4 * MaxTokens * sh.N))
			if h.err != nil {
				return h.err
			}
			q, mq, _, err := tgt.quantizeX(xd, one, MaxTokens, 0)
			if err != nil {
				return err
			}
			ks := tgt.mqSplit(sh.N, tensor.Q4_K)
			line := fmt.Sprintf("%-18s %7.1f", sh.name, float64(one.bytes())/1e6)
			for _, T := range Ts {
				fn, err := d.fn(fmt.Sprintf("mq_q4k_%d", bucket(T)))
				if err != nil {
					return err
				}
				dp, err := timed(2*len(mats), func(i int) error {
					wi := mats[i%len(mats)]
					return launch(fn, mqGrid(sh.N, T, ks), [3]int{mvThreads, 1, 1}, 0, s, ptr(out), i32(sh.N), ptr(q), ptr(mq), ptr(wi.w),
						i32(sh.N), i32(sh.K), i32(T), i32(0), i32(ks), ptr(0), ptr(0), ptr(0))
				})
				if err != nil {
					return err
				}
				mt, err := timed(2*len(mats), func(i int) error {
					return launchMQM(d, s, false, out, sh.N, q, mq, mats[i%len(mats)], T, 0)
				})
				if err != nil {
					return err
				}
				line += fmt.Sprintf(" %8.1f %8.1f", dp, mt)
			}
			if d.Major >= 9 {
				for _, T := range []int{1, 5} {
					mt, err := timed(2*len(mats), func(i int) error {
						return launchMQM(d, s, true, out, sh.N, q, mq, mats[i%len(mats)], T, 0)
					})
					if err != nil {
						return err
					}
					line += fmt.Sprintf(" %9.1f", mt)
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
