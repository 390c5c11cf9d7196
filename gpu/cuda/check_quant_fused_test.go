//go:build cuda

package cuda

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"unsafe"

	"gorgonia.org/cu"
)

// checkQuantFused: the products that quantize their own output for the
// next product (mq_quant_out: wo, gate/up, down in a step) write the same
// bytes as a qx launch on that output would (int8, scales, sums of
// squares), and the same output as without it, for every type, K split,
// mode (store, add, GLU) and T = 1..16; the int8 and scales also equal
// qx's float32 emulation. N = 160: five 32-column groups, 2 to 8 blocks
// each.
func checkQuantFused(tgt *Target, h *devHelper, rng *rand.Rand, w io.Writer) error {
	const N, K, TT = 160, 1024, MaxTokens
	x, g, gn, base := randn32(rng, TT*K, 0, 1), randn32(rng, K, 1, 0.2), randn32(rng, N, 1, 0.2), randn32(rng, TT*N, 0, 1)
	xd, gd, gnd := h.up(f32bytes(x)), h.up(f32bytes(g)), h.up(f32bytes(gn))
	if h.err != nil {
		return h.err
	}
	fmt.Fprintf(w, "\nfused output quantization (N=%d K=%d, T=1..16, every K split; wide one-token variants RIGSCOPE_CUDA_MQW %s): the scratch the product wrote = qx of its output, bitwise; output = unfused\n", N, K, tgt.tune.MQW)
	fmt.Fprintf(w, "%-6s %-9s %s\n", "type", "mode", "result")
	var fails []string
	for _, dt := range quantTypes {
		wq, w2q := randBlocks(rng, dt, N, K), randBlocks(rng, dt, N, K)
		Wd, e1 := h.upQuant("w", dt, N, K, wq)
		W2d, e2 := h.upQuant("w2", dt, N, K, w2q)
		if e1 != nil || e2 != nil {
			return fmt.Errorf("cuda check: upload: %v %v", e1, e2)
		}
		for mode, name := range []string{"mv", "mv+add", "glu+norm"} {
			var qg cu.DevicePtr = gnd // the next product's norm (none after the GLU: down has none)
			var gh []float32 = gn
			if mode == 2 {
				qg, gh = 0, nil
			}
			res := "ok"
			run := func(T int, fuse bool) ([]float32, error) {
				var out cu.DevicePtr
				if mode == 1 {
					out = h.up(f32bytes(base[:T*N]))
				} else {
					out = h.poison(T * N)
				}
				if h.err != nil {
					return nil, h.err
				}
				if fuse {
					tgt.qfuse = &qfuseReq{g: qg}
				}
				var e error
				if mode == 2 {
					e = tgt.glu(out, 0, xd, Wd, W2d, T, gd)
				} else {
					e = tgt.matvec("check", out, N, xd, 0, Wd, T, mode, 0)
				}
				tgt.qfuse = nil
				if e != nil {
					return nil, e
				}
				if fuse && (tgt.qin.buf == 0 || tgt.qin.x != out || tgt.qin.cols != N || tgt.qin.T != T) {
					return nil, fmt.Errorf("the product did not quantize its output (qin %+v)", tgt.qin)
				}
				return h.down(out, T*N)
			}
		sweep:
			for _, ks := range []int{4, 2, 1} {
				tgt.mqks = ks
				for T := 1; T <= TT; T++ {
					plain, err := run(T, false)
					if err != nil {
						return err
					}
					got, err := run(T, true)
					if err != nil {
						return fmt.Errorf("%v %s ks=%d T=%d: %w", dt, name, ks, T, err)
					}
					fused := tgt.qin
					tgt.qin = qready{}
					if !bytes.Equal(f32bytes(got), f32bytes(plain)) {
						res = fmt.Sprintf("FAIL ks=%d T=%d: output differs from the unfused product", ks, T)
						break sweep
					}
					// qx on the same output into buffer 0, then both buffers' bytes.
					od := h.up(f32bytes(got))
					if h.err != nil {
						return h.err
					}
					if _, _, _, err := tgt.quantizeX(od, dweight{dt: dt, rows: N, cols: N, qs: Wd.qs}, T, qg); err != nil {
						return err
					}
					a, err := h.downQXAll(fused.buf, T, N)
					if err != nil {
						return err
					}
					b, err := h.downQXAll(Wd.qs.buf[0], T, N)
					if err != nil {
						return err
					}
					if !bytes.Equal(a, b) {
						res = fmt.Sprintf("FAIL ks=%d T=%d: fused quantization differs from qx's", ks, T)
						break sweep
					}
					wantQ, wantM := qxEmulate(got, gh, T, N)
					q, mm, err := h.downQX(fused.buf, T, N)
					if err != nil {
						return err
					}
					for i := range wantQ {
						if q[i] != wantQ[i] {
							res = fmt.Sprintf("FAIL ks=%d T=%d: int8 %d off its emulation", ks, T, i)
							break sweep
						}
					}
					for i := range wantM {
						if math.Float32bits(mm[i]) != math.Float32bits(wantM[i]) {
							res = fmt.Sprintf("FAIL ks=%d T=%d: scale %d off its emulation", ks, T, i)
							break sweep
						}
					}
				}
			}
			tgt.mqks = 0
			fmt.Fprintf(w, "%-6v %-9s %s\n", dt, name, res)
			if res != "ok" {
				fails = append(fails, fmt.Sprintf("%v %s: %s", dt, name, res))
			}
		}
	}
	if len(fails) > 0 {
		return fmt.Errorf("cuda check: fused quantization: %v", fails)
	}
	return nil
}

// downQXAll copies back the bytes of the first T rows of every part of a
// scratch buffer (rows of K): int8, float2, sums of squares.
func (h *devHelper) downQXAll(xq cu.DevicePtr, T, K int) ([]byte, error) {
	q, m, ss := qxPtrs(xq, K)
	if err := h.s.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuda check: %w", err)
	}
	var out []byte
	for _, p := range []struct {
		at cu.DevicePtr
		n  int
	}{{q, T * K}, {m, T * K / 16 * 8}, {ss, T * K / 32 * 4}} {
		b := make([]byte, p.n)
		if err := cu.MemcpyDtoH(unsafe.Pointer(&b[0]), p.at, int64(p.n)); err != nil {
			return nil, fmt.Errorf("cuda check: download: %w", err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// attnQX: the attention's quantized output in qo (att_quant: int8 and the
// (dx, dx*sum) pairs, rows of K) and what qx makes of its float output got
// (T, K) by qxEmulate, each as float32 values (the int8 exactly) for a
// bitwise comparison.
func attnQX(s cu.Stream, qo cu.DevicePtr, got []float32, T, K int) (want, have []float32, err error) {
	if err := s.Synchronize(); err != nil {
		return nil, nil, fmt.Errorf("cuda check: %w", err)
	}
	qp, mp, _ := qxPtrs(qo, K)
	q := make([]int8, T*K)
	m := make([]float32, T*K/16*2)
	if err := cu.MemcpyDtoH(unsafe.Pointer(&q[0]), qp, int64(T*K)); err != nil {
		return nil, nil, fmt.Errorf("cuda check: download: %w", err)
	}
	if err := cu.MemcpyDtoH(unsafe.Pointer(&m[0]), mp, int64(4*len(m))); err != nil {
		return nil, nil, fmt.Errorf("cuda check: download: %w", err)
	}
	wq, wm := qxEmulate(got, nil, T, K)
	for i := range q {
		want, have = append(want, float32(wq[i])), append(have, float32(q[i]))
	}
	return append(want, wm...), append(have, m...), nil
}
