//go:build cuda

package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// checkPrefillKernels runs the prefill kernels (gemm.cu) alone on random
// inputs with poisoned outputs against float64 (tolerance: split 3e-5,
// about x's 16 bits; bf16 1e-2, x rounded to bf16): the products in both
// modes, tile widths and warp counts (N, T not multiples of the block's
// 128), then
// pf_kv and pf_attn at two head shapes after cached slots. It prints
// ||out-ref||/||ref|| per case, so that a failing model check can be
// traced to a kernel.
func checkPrefillKernels(d *Device, w io.Writer, fa bool) (err error) {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	rng := rand.New(rand.NewPCG(19, 512))
	var allocs []cu.DevicePtr
	defer func() {
		for _, p := range allocs {
			cu.MemFree(p)
		}
	}()
	var errs []error
	up := func(b []byte) cu.DevicePtr {
		p, e := cu.MemAlloc(int64(len(b)))
		if e != nil {
			errs = append(errs, e)
			return 0
		}
		allocs = append(allocs, p)
		if e := cu.MemcpyHtoD(p, unsafe.Pointer(&b[0]), int64(len(b))); e != nil {
			errs = append(errs, e)
		}
		return p
	}
	f32b := func(v []float32) []byte {
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return b
	}
	i32b := func(v []int32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		}
		return b
	}
	poison := func(nbytes int) cu.DevicePtr {
		b := make([]byte, nbytes)
		for i := range b {
			b[i] = 0xff // NaN as f32 and as bf16
		}
		return up(b)
	}
	down := func(p cu.DevicePtr, nbytes int) []byte {
		b := make([]byte, nbytes)
		if e := s.Synchronize(); e != nil {
			errs = append(errs, e)
			return b
		}
		if e := cu.MemcpyDtoH(unsafe.Pointer(&b[0]), p, int64(nbytes)); e != nil {
			errs = append(errs, e)
		}
		return b
	}
	downF := func(p cu.DevicePtr, n int) []float32 {
		b, v := down(p, 4*n), make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v
	}
	downSplit := func(hi, lo cu.DevicePtr, n int) []float32 { // hi + lo (lo 0: hi only)
		bh, v := down(hi, 2*n), make([]float32, n)
		var bl []byte
		if lo != 0 {
			bl = down(lo, 2*n)
		}
		for i := range v {
			v[i] = tensor.BF16ToF32(binary.LittleEndian.Uint16(bh[2*i:]))
			if bl != nil {
				v[i] += tensor.BF16ToF32(binary.LittleEndian.Uint16(bl[2*i:]))
			}
		}
		return v
	}
	randn := func(n int, a float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(a * rng.NormFloat64())
		}
		return v
	}
	run := func(name string, grid, block [3]int, smem int, args ...arg) {
		fn, e := d.fn(name)
		if e == nil && smem > 48<<10 {
			e = setMaxDynamicSmem(fn, smem)
		}
		if e == nil {
			e = launch(fn, grid, block, smem, s, args...)
		}
		if e != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, e))
		}
	}
	report := func(name string, got []float32, ref []float64, tol float64) {
		var num, den float64
		for i := range ref {
			g := float64(got[i])
			if math.IsNaN(g) || math.IsInf(g, 0) {
				fmt.Fprintf(w, "%-34s %12s FAIL (element %d is %v: unwritten or overflow)\n", name, "-", i, g)
				errs = append(errs, fmt.Errorf("cuda check %s: element %d is %v", name, i, g))
				return
			}
			num += (g - ref[i]) * (g - ref[i])
			den += ref[i] * ref[i]
		}
		rel, st := math.Sqrt(num/math.Max(den, 1e-300)), "ok"
		if rel > tol {
			st = "FAIL"
			errs = append(errs, fmt.Errorf("cuda check %s: relative error %.2e above %.0e", name, rel, tol))
		}
		fmt.Fprintf(w, "%-34s %12.2e %s\n", name, rel, st)
	}
	fmt.Fprintf(w, "\n%-34s %12s\n", "prefill kernel check", "rel err")

	// products checks the product kernels in both modes.
	products := func() {
		// Products: W, W2 (N, K) bf16, x (T, K), g (K).
		const N, K, T, eps = 320, 224, 200, 1e-5
		wf, w2f := randn(N*K, 0.05), randn(N*K, 0.05)
		wb, w2b := make([]byte, 2*N*K), make([]byte, 2*N*K)
		for i := range wf {
			h, h2 := tensor.F32ToBF16(wf[i]), tensor.F32ToBF16(w2f[i])
			wf[i], w2f[i] = tensor.BF16ToF32(h), tensor.BF16ToF32(h2)
			binary.LittleEndian.PutUint16(wb[2*i:], h)
			binary.LittleEndian.PutUint16(w2b[2*i:], h2)
		}
		wt, w2t := up(tileBF16(wb, N, K)), up(tileBF16(w2b, N, K))
		x, g := randn(T*K, 1), randn(K, 0.1)
		for i := range g {
			g[i]++
		}
		rs := make([]float64, T)     // 1/rms per token
		prod := make([]float64, T*N) // (x*g).W^T
		prod2 := make([]float64, T*N)
		for t := range T {
			var ss float64
			for k := range K {
				ss += float64(x[t*K+k]) * float64(x[t*K+k])
			}
			rs[t] = 1 / math.Sqrt(ss/K+eps)
			for n := range N {
				var a, b float64
				for k := range K {
					xg := float64(x[t*K+k]) * float64(g[k])
					a += xg * float64(wf[n*K+k])
					b += xg * float64(w2f[n*K+k])
				}
				prod[t*N+n], prod2[t*N+n] = a, b
			}
		}
		xd, gd := up(f32b(x)), up(f32b(g))
		xh, xl, rsd := poison(2*T*K), poison(2*T*K), poison(4*T)
		resid := randn(T*N, 1)
		for _, split := range []bool{true, false} {
			pre, lo, tol := "pfs", xl, 3e-5
			if !split {
				pre, lo, tol = "pf", 0, 1e-2
			}
			run("pf_prep", [3]int{T, 1, 1}, [3]int{256, 1, 1}, 0, ptr(xh), ptr(lo), ptr(rsd), ptr(xd), ptr(gd), i32(K), f32(eps))
			for _, v := range []struct {
				suf    string
				bn, nw int
			}{{"", 128, 8}, {"64", 64, 4}, {"w4", 128, 4}} {
				suf, bn, blk := v.suf, v.bn, [3]int{32 * v.nw, 1, 1}
				smem := pfGemmSmem(bn, split)
				out := poison(4 * T * N)
				run(pre+"_gemm"+suf, [3]int{(T + bn - 1) / bn, (N + 127) / 128, 1}, blk, smem,
					ptr(out), i32(N), ptr(xh), ptr(lo), ptr(rsd), ptr(wt), i32(N), i32(K), i32(T), i32(0))
				ref := make([]float64, T*N)
				for i := range ref {
					ref[i] = rs[i/N] * prod[i]
				}
				report(fmt.Sprintf("%s_gemm%s norm", pre, suf), downF(out, T*N), ref, tol)
				out = up(f32b(resid))
				run(pre+"_gemm"+suf, [3]int{(T + bn - 1) / bn, (N + 127) / 128, 1}, blk, smem,
					ptr(out), i32(N), ptr(xh), ptr(lo), ptr(0), ptr(wt), i32(N), i32(K), i32(T), i32(1))
				for i := range ref {
					ref[i] = float64(resid[i]) + prod[i]
				}
				report(fmt.Sprintf("%s_gemm%s add", pre, suf), downF(out, T*N), ref, tol)
				oh, ol := poison(2*T*N), cu.DevicePtr(0)
				if split {
					ol = poison(2 * T * N)
				}
				run(pre+"_glu"+suf, [3]int{(T + bn - 1) / bn, (N + 63) / 64, 1}, blk, smem,
					ptr(oh), ptr(ol), ptr(xh), ptr(lo), ptr(rsd), ptr(wt), ptr(w2t), i32(N), i32(K), i32(T))
				for i := range ref {
					a, b := rs[i/N]*prod[i], rs[i/N]*prod2[i]
					ref[i] = a / (1 + math.Exp(-a)) * b
				}
				gtol := tol
				if !split {
					gtol = 2e-2 // and the output rounded to bf16
				}
				report(fmt.Sprintf("%s_glu%s", pre, suf), downSplit(oh, ol, T*N), ref, gtol)
			}
		}
	}
	if !fa {
		products()
	}
	// Attention: hq query heads over hk KV heads of hd, base cached slots
	// (random K and V) and T2 new tokens at positions base+t.
	for _, sh := range []struct{ hd, hq, hk, base, T int }{{128, 8, 2, 70, 50}, {64, 8, 4, 33, 97}, {128, 4, 4, 0, 40}} {
		hd, hq, hk, base, T2 := sh.hd, sh.hq, sh.hk, sh.base, sh.T
		G, width, nqkv, slots, half := hq/hk, hk*hd, (hq+2*hk)*hd, base+T2+8, hd/2
		maxPos := slots + 64
		cs, sn := cpu.NewRopeTable(hd, maxPos, 10000).Tables(maxPos)
		csd, snd := up(f32b(cs)), up(f32b(sn))
		qkv := randn(T2*nqkv, 1)
		kc, vc := randn(slots*width, 1), randn(slots*width, 1)
		kc0, vc0 := slices.Clone(kc), slices.Clone(vc) // as uploaded, for the bf16 cache below
		pos := make([]int32, T2)
		for t := range pos {
			pos[t] = int32(base + t)
		}
		qkvd, kcd, vcd, posd := up(f32b(qkv)), up(f32b(kc)), up(f32b(vc)), up(i32b(pos))
		rot := func(x []float32, p int) []float64 { // RoPE of one head (non-interleaved), as pf_kv
			o := make([]float64, hd)
			for j := range half {
				c, sv := cs[p*half+j], sn[p*half+j]
				a, b := x[j], x[j+half]
				o[j], o[j+half] = float64(a*c-b*sv), float64(a*sv+b*c)
			}
			return o
		}
		for t := range T2 { // the cache the prefill must leave: rotated k, v
			for h := range hk {
				k := qkv[t*nqkv+hq*hd+h*hd : t*nqkv+hq*hd+(h+1)*hd]
				r := rot(k, base+t)
				for e := range hd {
					kc[(base+t)*width+h*hd+e] = float32(r[e])
					vc[(base+t)*width+h*hd+e] = qkv[t*nqkv+hq*hd+width+h*hd+e]
				}
			}
		}
		name := fmt.Sprintf("hd %d, %dq/%dkv, %d after %d", hd, hq, hk, T2, base)
		run("pf_kv", [3]int{T2, 1, 1}, [3]int{128, 1, 1}, 0,
			ptr(kcd), ptr(vcd), ptr(qkvd), i32(nqkv), ptr(posd), i32(base), ptr(csd), ptr(snd), i32(hq), i32(hk), i32(hd), i32(0))
		gotK := downF(kcd, slots*width)
		refK := make([]float64, (base+T2)*width)
		for i := range refK {
			refK[i] = float64(kc[i])
		}
		report("pf_kv "+name, gotK[:(base+T2)*width], refK, 1e-6)
		attnRef := func(kc, vc []float32) []float64 { // causal attention in float64 over the cache kc, vc
			ref := make([]float64, T2*hq*hd)
			for t := range T2 {
				for qh := range hq {
					q := rot(qkv[t*nqkv+qh*hd:t*nqkv+(qh+1)*hd], base+t)
					h := qh / G
					n := base + t + 1
					sc := make([]float64, n)
					mx := math.Inf(-1)
					for j := range n {
						var dot float64
						for e := range hd {
							dot += q[e] * float64(kc[j*width+h*hd+e])
						}
						sc[j] = dot / math.Sqrt(float64(hd))
						mx = math.Max(mx, sc[j])
					}
					var den float64
					for j := range n {
						sc[j] = math.Exp(sc[j] - mx)
						den += sc[j]
					}
					for e := range hd {
						var v float64
						for j := range n {
							v += sc[j] * float64(vc[j*width+h*hd+e])
						}
						ref[t*hq*hd+qh*hd+e] = v / den
					}
				}
			}
			return ref
		}
		ref := attnRef(kc, vc)
		// The bf16 cache (pf_kv_kb, pf_attn_HD_kb, pf_fa_HD_kb): pf_kv_kb's
		// slots within 2^-8 of the exact ones (bf16NearErr), attention as
		// below against float64 over the values it stored.
		kbd, vbd := up(kvCacheBytesOf(kc0, kvBF16)), up(kvCacheBytesOf(vc0, kvBF16))
		run("pf_kv_kb", [3]int{T2, 1, 1}, [3]int{128, 1, 1}, 0,
			ptr(kbd), ptr(vbd), ptr(qkvd), i32(nqkv), ptr(posd), i32(base), ptr(csd), ptr(snd), i32(hq), i32(hk), i32(hd), i32(0))
		gotKB, gotVB := kvCacheValues(downF(kbd, slots*width/2), kvBF16), kvCacheValues(downF(vbd, slots*width/2), kvBF16)
		kbOK := "ok"
		for i := base * width; i < (base+T2)*width; i++ {
			e := bf16NearErr(gotKB[i], float64(kc[i]))
			if e == nil {
				e = bf16NearErr(gotVB[i], float64(vc[i]))
			}
			if e != nil {
				kbOK = "FAIL"
				errs = append(errs, fmt.Errorf("cuda check pf_kv_kb %s: element %d: %w", name, i, e))
				break
			}
		}
		fmt.Fprintf(w, "%-34s %12s %s\n", "pf_kv_kb "+name, "2^-8 each", kbOK)
		refB := attnRef(gotKB, gotVB)
		// attend runs the prefill attention kernels over the cache kc, vc
		// (sfx "": float32; "_kb": bf16, labelled kv) against ref.
		attend := func(sfx, kv string, kc, vc cu.DevicePtr, ref []float64) {
			if fa {
				label := "pf_fa bf16 " + name
				if kv != "" {
					label = "pf_fa " + kv + name
				}
				oh := poison(2 * T2 * hq * hd)
				run(fmt.Sprintf("pf_fa_%d%s", hd, sfx), [3]int{(G*T2 + 63) / 64, hk, 1}, [3]int{128, 1, 1}, 3*64*hd*2,
					ptr(oh), ptr(qkvd), i32(nqkv), ptr(kc), ptr(vc), ptr(posd), i32(base), i32(T2), ptr(csd), ptr(snd),
					i32(hq), i32(hk), f32(float32(1/math.Sqrt(float64(hd)))), i32(0))
				report(label, downSplit(oh, 0, T2*hq*hd), ref, 2e-2)
				return
			}
			for _, split := range []bool{true, false} {
				oh, ol, tol, mode := poison(2*T2*hq*hd), poison(2*T2*hq*hd), 3e-5, "split"
				if !split {
					ol, tol, mode = 0, 1e-2, "bf16"
				}
				run(fmt.Sprintf("pf_attn_%d%s", hd, sfx), [3]int{(G*T2 + 31) / 32, hk, 1}, [3]int{128, 1, 1}, pfAttnSmem(hd),
					ptr(oh), ptr(ol), ptr(qkvd), i32(nqkv), ptr(kc), ptr(vc), ptr(posd), i32(base), i32(T2), ptr(csd), ptr(snd),
					i32(hq), i32(hk), f32(float32(1/math.Sqrt(float64(hd)))), i32(0))
				report("pf_attn "+kv+mode+" "+name, downSplit(oh, ol, T2*hq*hd), ref, tol)
			}
		}
		attend("_kb", "kv bf16 ", kbd, vbd, refB)
		attend("", "", kcd, vcd, ref)
	}
	return errors.Join(errs...)
}
