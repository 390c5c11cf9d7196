//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// CheckKernels runs each kernel on fresh random inputs with its output
// poisoned (NaN) first and compares with a float64 CPU reference; it prints
// ||out-ref||/||ref|| per case and fails on NaN or a large error.
func CheckKernels(d *Device, w io.Writer) error {
	unbind, err := d.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return err
	}
	defer s.Destroy()
	rng := rand.New(rand.NewPCG(7, uint64(d.SMs)))
	fmt.Fprintf(w, "%-34s %12s %s\n", "kernel check", "rel err", "")
	report := func(name string, got []float32, ref []float64, tol float64) error {
		var num, den float64
		for i := range ref {
			g := float64(got[i])
			if math.IsNaN(g) || math.IsInf(g, 0) {
				return fmt.Errorf("cuda check %s: element %d is %v (unwritten or overflow)", name, i, g)
			}
			num += (g - ref[i]) * (g - ref[i])
			den += ref[i] * ref[i]
		}
		rel := math.Sqrt(num / math.Max(den, 1e-300))
		st := "ok"
		if rel > tol {
			st = "FAIL"
		}
		fmt.Fprintf(w, "%-34s %12.2e %s\n", name, rel, st)
		if rel > tol {
			return fmt.Errorf("cuda check %s: relative error %.2e above %.0e", name, rel, tol)
		}
		return nil
	}
	var allocs []cu.DevicePtr
	defer func() {
		for _, p := range allocs {
			cu.MemFree(p)
		}
	}()
	up := func(b []byte) cu.DevicePtr {
		p, e := cu.MemAlloc(int64(len(b)))
		if e != nil {
			err = e
			return 0
		}
		allocs = append(allocs, p)
		cu.MemcpyHtoD(p, unsafe.Pointer(&b[0]), int64(len(b)))
		return p
	}
	f32b := func(v []float32) []byte {
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return b
	}
	poison := func(n int) cu.DevicePtr {
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], 0x7fc00000)
		}
		return up(b)
	}
	down := func(p cu.DevicePtr, n int) []float32 {
		out := make([]float32, n)
		if e := s.Synchronize(); e != nil {
			err = e
			return out
		}
		cu.MemcpyDtoH(unsafe.Pointer(&out[0]), p, int64(4*n))
		return out
	}
	randn := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}

	// Matrix-vector products: every dtype, token buckets, store/add/GLU.
	for _, dt := range []tensor.DType{tensor.BF16, tensor.F16, tensor.F32, tensor.Q8_0} {
		for _, T := range []int{1, 3, 5, 16} {
			N, K := 72, 1056
			wv := randn(N * K)
			wq, wdeq := quantize(dt, wv, N, K)
			w2v := randn(N * K)
			w2q, w2deq := quantize(dt, w2v, N, K)
			x := randn(T * K)
			base := randn(T * N)
			m := &dmodel{}
			W, e := m.uploadMatrix(&tensor.Tensor{Name: "w", DType: dt, Shape: []int{N, K}, Data: wq})
			if e != nil {
				return e
			}
			W2, e := m.uploadMatrix(&tensor.Tensor{Name: "w2", DType: dt, Shape: []int{N, K}, Data: w2q})
			if e != nil {
				return e
			}
			allocs = append(allocs, m.allocs...)
			xd := up(f32b(x))
			suf, _ := kernelSuffix(dt)
			for mode := 0; mode < 3; mode++ {
				var out cu.DevicePtr
				if mode == 1 {
					out = up(f32b(base))
				} else {
					out = poison(T * N)
				}
				if err != nil {
					return err
				}
				var fn cu.Function
				if mode == 2 {
					fn, e = d.fn(fmt.Sprintf("glu_%s_%d", suf, bucket(T)))
					if e == nil {
						e = launch(fn, [3]int{(N + 3) / 4, 1, 1}, [3]int{128, 1, 1}, 0, s, ptr(out), i32(N), ptr(xd), ptr(W.w), ptr(W.s), ptr(W2.w), ptr(W2.s), i32(N), i32(K), i32(T))
					}
				} else {
					fn, e = d.fn(fmt.Sprintf("mv_%s_%d", suf, bucket(T)))
					if e == nil {
						e = launch(fn, [3]int{(N + 3) / 4, 1, 1}, [3]int{128, 1, 1}, 0, s, ptr(out), i32(N), ptr(xd), ptr(W.w), ptr(W.s), i32(N), i32(K), i32(T), i32(mode))
					}
				}
				if e != nil {
					return e
				}
				got := down(out, T*N)
				if err != nil {
					return err
				}
				ref := make([]float64, T*N)
				for t := 0; t < T; t++ {
					for n := 0; n < N; n++ {
						var a, b float64
						for k := 0; k < K; k++ {
							a += float64(wdeq[n*K+k]) * float64(x[t*K+k])
							b += float64(w2deq[n*K+k]) * float64(x[t*K+k])
						}
						switch mode {
						case 0:
							ref[t*N+n] = a
						case 1:
							ref[t*N+n] = a + float64(base[t*N+n])
						case 2:
							ref[t*N+n] = a / (1 + math.Exp(-a)) * b
						}
					}
				}
				if e := report(fmt.Sprintf("%s T=%d %s", []string{"mv", "mv+add", "glu"}[mode], T, suf), got, ref, 1e-5); e != nil {
					return e
				}
			}
		}
	}

	// Attention (split + combine) with a tree mask over a cache, vs float64.
	for _, tc := range []struct{ hq, hk, hd, base, T, S int }{{8, 4, 64, 300, 5, 7}, {32, 8, 128, 511, 1, 9}, {4, 2, 32, 40, 16, 3}} {
		slots := tc.base + tc.T
		width := tc.hk * tc.hd
		ld := (tc.hq + 2*tc.hk) * tc.hd
		q := randn(tc.T * ld)
		Kc, Vc := randn(slots*width), randn(slots*width)
		st := stepParams{Base: int32(tc.base), T: int32(tc.T)}
		parent := make([]int, tc.T)
		for i := range parent {
			parent[i] = i - 1
			if i > 1 && rng.IntN(2) == 0 {
				parent[i] = rng.IntN(i)
			}
			st.Mask[i] = 1 << i
			if parent[i] >= 0 {
				st.Mask[i] |= st.Mask[parent[i]]
			}
		}
		stb := (*[1 << 10]byte)(unsafe.Pointer(&st))[:stepBytes:stepBytes]
		qd, kd, vd, sd := up(f32b(q)), up(f32b(Kc)), up(f32b(Vc)), up(append([]byte(nil), stb...))
		pm, pl, pacc := poison(tc.T*tc.hq*tc.S), poison(tc.T*tc.hq*tc.S), poison(tc.T*tc.hq*tc.S*tc.hd)
		out := poison(tc.T * tc.hq * tc.hd)
		if err != nil {
			return err
		}
		fs, _ := d.fn("attn_split")
		fc, _ := d.fn("attn_combine")
		scale := float32(1 / math.Sqrt(float64(tc.hd)))
		if e := launch(fs, [3]int{tc.hq, tc.S, 1}, [3]int{128, 1, 1}, 0, s, ptr(pm), ptr(pl), ptr(pacc), ptr(qd), i32(ld), ptr(kd), ptr(vd), ptr(sd), i32(tc.hq), i32(tc.hk), i32(tc.hd), f32(scale)); e != nil {
			return e
		}
		if e := launch(fc, [3]int{tc.hq, tc.T, 1}, [3]int{max(tc.hd, 32), 1, 1}, 0, s, ptr(out), ptr(pm), ptr(pl), ptr(pacc), i32(tc.hq), i32(tc.hd), i32(tc.S)); e != nil {
			return e
		}
		got := down(out, tc.T*tc.hq*tc.hd)
		if err != nil {
			return err
		}
		ref := make([]float64, tc.T*tc.hq*tc.hd)
		for t := 0; t < tc.T; t++ {
			for h := 0; h < tc.hq; h++ {
				kvh := h / (tc.hq / tc.hk)
				var sc []float64
				var idx []int
				for j := 0; j < slots; j++ {
					if j >= tc.base && st.Mask[t]>>(j-tc.base)&1 == 0 {
						continue
					}
					var dot float64
					for e := 0; e < tc.hd; e++ {
						dot += float64(q[t*ld+h*tc.hd+e]) * float64(Kc[j*width+kvh*tc.hd+e])
					}
					sc = append(sc, dot/math.Sqrt(float64(tc.hd)))
					idx = append(idx, j)
				}
				mx := math.Inf(-1)
				for _, v := range sc {
					mx = math.Max(mx, v)
				}
				var sum float64
				for i := range sc {
					sc[i] = math.Exp(sc[i] - mx)
					sum += sc[i]
				}
				for e := 0; e < tc.hd; e++ {
					var a float64
					for i, j := range idx {
						a += sc[i] * float64(Vc[j*width+kvh*tc.hd+e])
					}
					ref[(t*tc.hq+h)*tc.hd+e] = a / sum
				}
			}
		}
		if e := report(fmt.Sprintf("attention hq=%d hd=%d base=%d T=%d tree", tc.hq, tc.hd, tc.base, tc.T), got, ref, 1e-5); e != nil {
			return e
		}
	}

	// RMSNorm and argmax.
	{
		T, dim := 3, 4096
		x, g := randn(T*dim), randn(dim)
		xd, gd, out := up(f32b(x)), up(f32b(g)), poison(T*dim)
		fn, _ := d.fn("rmsnorm")
		if e := launch(fn, [3]int{T, 1, 1}, [3]int{normThreads(dim), 1, 1}, 0, s, ptr(out), ptr(xd), ptr(gd), i32(dim), f32(1e-5), i32(0)); e != nil {
			return e
		}
		got := down(out, T*dim)
		ref := make([]float64, T*dim)
		for t := 0; t < T; t++ {
			var ss float64
			for i := 0; i < dim; i++ {
				ss += float64(x[t*dim+i]) * float64(x[t*dim+i])
			}
			inv := 1 / math.Sqrt(ss/float64(dim)+1e-5)
			for i := 0; i < dim; i++ {
				ref[t*dim+i] = float64(x[t*dim+i]) * inv * float64(g[i])
			}
		}
		if e := report("rmsnorm dim=4096 T=3", got, ref, 1e-6); e != nil {
			return e
		}
		V := 128256
		lg := randn(T * V)
		lg[5*V/7] = 9 // row 0
		ld := up(f32b(lg))
		st := stepParams{}
		stb := (*[1 << 10]byte)(unsafe.Pointer(&st))[:stepBytes:stepBytes]
		sd := up(append([]byte(nil), stb...))
		ids := poison(T)
		fa, _ := d.fn("argmax_rows")
		if e := launch(fa, [3]int{T, 1, 1}, [3]int{1024, 1, 1}, 0, s, ptr(ids), ptr(ld), i32(V), ptr(sd)); e != nil {
			return e
		}
		gotf := down(ids, T)
		for t := 0; t < T; t++ {
			best := 0
			for i := 1; i < V; i++ {
				if lg[t*V+i] > lg[t*V+best] {
					best = i
				}
			}
			g := int(math.Float32bits(gotf[t]))
			if g != best {
				return fmt.Errorf("cuda check argmax row %d: got %d, want %d", t, g, best)
			}
		}
		fmt.Fprintf(w, "%-34s %12s ok\n", "argmax vocab=128256 T=3", "exact")
	}
	return err
}

// quantize stores v (N, K) as dt bytes and returns the dequantized values
// the kernel should see.
func quantize(dt tensor.DType, v []float32, N, K int) ([]byte, []float32) {
	deq := make([]float32, len(v))
	switch dt {
	case tensor.BF16, tensor.F16:
		b := make([]byte, 2*len(v))
		for i, f := range v {
			var h uint16
			if dt == tensor.BF16 {
				h = tensor.F32ToBF16(f)
				deq[i] = tensor.BF16ToF32(h)
			} else {
				h = tensor.F32ToF16(f)
				deq[i] = tensor.F16ToF32(h)
			}
			binary.LittleEndian.PutUint16(b[2*i:], h)
		}
		return b, deq
	case tensor.F32:
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return b, append(deq[:0], v...)
	}
	// Q8_0: blocks of 32: f16 scale amax/127, int8 round(v/scale).
	b := make([]byte, 0, len(v)/32*34)
	for blk := 0; blk < len(v)/32; blk++ {
		xs := v[blk*32 : blk*32+32]
		var amax float32
		for _, f := range xs {
			amax = max(amax, float32(math.Abs(float64(f))))
		}
		sh := tensor.F32ToF16(amax / 127)
		sc := tensor.F16ToF32(sh)
		b = binary.LittleEndian.AppendUint16(b, sh)
		for i, f := range xs {
			q := int8(0)
			if sc > 0 {
				q = int8(max(-127, min(127, math.Round(float64(f/sc)))))
			}
			b = append(b, byte(q))
			deq[blk*32+i] = sc * float32(q)
		}
	}
	return b, deq
}
