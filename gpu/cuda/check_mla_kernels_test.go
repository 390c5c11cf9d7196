//go:build cuda

package cuda

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
)

// mlaKernelCase is one shape of the latent attention kernels' check.
type mlaKernelCase struct {
	name                      string
	qr, r, rope, nope, vd, hl int
	base, T                   int
	tree                      bool // a tree of T nodes (parents below), else a chain
	inter                     bool // interleaved RoPE pairs, else halves
}

// checkMLAKernels runs mla_qnorm, mla_cache and mla_attend (mla.cu) on
// random inputs (a cache of base random slots, T new tokens) into
// NaN-poisoned outputs and checks the normed query latent, the cached
// rows and the heads' outputs against float64 (the same float32 RoPE
// tables), and, for a chain, every row of att against the same token run
// alone as a decode step (T = 1 at base+t) bit for bit.
func checkMLAKernels(d *Device, w io.Writer) (err error) {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	dh := newDevHelper(s)
	defer dh.free()
	fns := map[string]cu.Function{}
	for _, n := range []string{"mla_qnorm", "mla_cache", "mla_attend"} {
		if fns[n], err = d.fn(n); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nlatent attention kernels (qnorm, cache, attend): vs float64 (relative error of each output), chain rows vs decode (bitwise)\n")
	fmt.Fprintf(w, "%-30s %10s %10s %10s %10s\n", "case", "qn rel", "cache rel", "att rel", "T=1 rows")
	rng := rand.New(rand.NewPCG(5, 17))
	for _, c := range []mlaKernelCase{
		{name: "tiny-deepseekv3 dims chain", qr: 48, r: 32, rope: 16, nope: 32, vd: 32, hl: 4, base: 37, T: 8, inter: true},
		{name: "deepseek-v3 dims (8 heads)", qr: 1536, r: 512, rope: 64, nope: 128, vd: 128, hl: 8, base: 300, T: 16, inter: true},
		{name: "tree of 8, halves", qr: 32, r: 64, rope: 32, nope: 16, vd: 48, hl: 2, base: 5, T: 8, tree: true},
		{name: "decode at 0", qr: 16, r: 16, rope: 8, nope: 8, vd: 8, hl: 3, base: 0, T: 1},
	} {
		if err := checkMLACase(c, rng, fns, dh, w); err != nil {
			return fmt.Errorf("mla kernels %s: %w", c.name, err)
		}
	}
	return nil
}

// checkMLACase is one case of checkMLAKernels.
func checkMLACase(c mlaKernelCase, rng *rand.Rand, fns map[string]cu.Function, dh *devHelper, w io.Writer) error {
	qr, r, rope, nope, vd, hl, base, T := c.qr, c.r, c.rope, c.nope, c.vd, c.hl, c.base, c.T
	qk, width, lda := nope+rope, r+rope, qr+r+rope
	slots := base + T + 8
	randv := func(n int, a, mean float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + a*rng.NormFloat64())
		}
		return v
	}
	a := randv(T*lda, 1, 0)
	q := randv(T*hl*qk, 1, 0)
	gq, gkv := randv(qr, 0.1, 1), randv(r, 0.1, 1)
	ukt := randv(hl*r*nope, 1/math.Sqrt(float64(nope)), 0)
	uv := randv(hl*vd*r, 1/math.Sqrt(float64(r)), 0)
	cache := append(randv(base*width, 1, 0), make([]float32, (slots-base)*width)...)
	for i := base * width; i < len(cache); i++ {
		cache[i] = float32(math.NaN()) // slots not written yet
	}
	maxPos := base + T + 64
	cs, sn := cpu.NewRopeTable(rope, maxPos, 10000).Tables(maxPos)
	// The step: a chain (parent t-1, position base+t), or a binary tree
	// (node t's parent (t-1)/2, position base + its depth).
	st := stepParams{Base: int32(base), T: int32(T)}
	parent := make([]int, T)
	for t := range T {
		parent[t] = t - 1
		if c.tree {
			parent[t] = (t - 1) / 2
			if t == 0 {
				parent[t] = -1
			}
		}
		st.Mask[t] = 1 << t
		depth := 0
		if parent[t] >= 0 {
			st.Mask[t] |= st.Mask[parent[t]]
			for p := parent[t]; p >= 0; p = parent[p] {
				depth++
			}
		}
		st.Pos[t] = int32(base + depth)
	}
	half := rope / 2
	scale := (&model.Config{MLA: model.MLA{NopeDim: nope, RopeDim: rope}}).MLAScale()
	inter := 0
	if c.inter {
		inter = 1
	}
	dA, dQ, dGq, dGkv := dh.up(f32bytes(a)), dh.up(f32bytes(q)), dh.up(f32bytes(gq)), dh.up(f32bytes(gkv))
	dUKT, dUV, dCS, dSN := dh.up(f32bytes(ukt)), dh.up(f32bytes(uv)), dh.up(f32bytes(cs)), dh.up(f32bytes(sn))
	dCache := dh.up(f32bytes(cache))
	if dh.err != nil {
		return dh.err
	}
	// run launches the three kernels for step st, outputs poisoned first.
	run := func(st stepParams, nT int, qOff int) (qn, att []float32, err error) {
		dSt := dh.up(unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st)))
		dQn, dAtt := dh.poison(nT*qr), dh.poison(nT*hl*vd)
		if dh.err != nil {
			return nil, nil, dh.err
		}
		aRows := dA + cu.DevicePtr(4*qOff*lda)
		qRows := dQ + cu.DevicePtr(4*qOff*hl*qk)
		if err := firstErr(
			launch(fns["mla_qnorm"], [3]int{nT, 1, 1}, [3]int{256, 1, 1}, 0, dh.s, ptr(dQn), ptr(aRows), i32(lda), i32(qr), ptr(dGq), f32(model.MLANormEps)),
			launch(fns["mla_cache"], [3]int{nT, 1, 1}, [3]int{128, 1, 1}, 0, dh.s, ptr(dCache), ptr(aRows), i32(lda), i32(qr), ptr(dGkv), ptr(dSt),
				ptr(dCS), ptr(dSN), i32(r), i32(rope), f32(model.MLANormEps), i32(inter)),
			launch(fns["mla_attend"], [3]int{hl, nT, 1}, [3]int{mlaThreads, 1, 1}, 0, dh.s, ptr(dAtt), ptr(qRows), ptr(dCache), ptr(dUKT), ptr(dUV), ptr(dSt),
				ptr(dCS), ptr(dSN), i32(hl), i32(nope), i32(rope), i32(r), i32(vd), f32(scale), i32(inter))); err != nil {
			return nil, nil, err
		}
		qn, e1 := dh.down(dQn, nT*qr)
		att, e2 := dh.down(dAtt, nT*hl*vd)
		return qn, att, firstErr(e1, e2)
	}
	qn, att, err := run(st, T, 0)
	if err != nil {
		return err
	}
	gotCache, err := dh.down(dCache, slots*width)
	if err != nil {
		return err
	}
	// float64 reference.
	rms := func(x []float32, g []float32) []float64 {
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(len(x))+model.MLANormEps)
		out := make([]float64, len(x))
		for i := range x {
			out[i] = float64(x[i]) * inv * float64(g[i])
		}
		return out
	}
	rot := func(v []float64, p int) {
		for j := range half {
			ia, ib := j, j+half
			if c.inter {
				ia, ib = 2*j, 2*j+1
			}
			co, si := float64(cs[p*half+j]), float64(sn[p*half+j])
			x0, x1 := v[ia], v[ib]
			v[ia], v[ib] = x0*co-x1*si, x0*si+x1*co
		}
	}
	var relQn, relCache, relAtt relAcc
	ref := make([][]float64, base+T) // the cache rows in float64
	for s := range base {
		ref[s] = make([]float64, width)
		for i := range width {
			ref[s][i] = float64(cache[s*width+i])
		}
	}
	for t := range T {
		row := a[t*lda : (t+1)*lda]
		relQn.add(qn[t*qr:(t+1)*qr], rms(row[:qr], gq))
		kv := append(rms(row[qr:qr+r], gkv), make([]float64, rope)...)
		for i := range rope {
			kv[r+i] = float64(row[qr+r+i])
		}
		rot(kv[r:], int(st.Pos[t]))
		ref[base+t] = kv
		relCache.add(gotCache[(base+t)*width:(base+t+1)*width], kv)
	}
	for t := range T {
		for h := range hl {
			qh := make([]float64, qk)
			for i := range qk {
				qh[i] = float64(q[(t*hl+h)*qk+i])
			}
			rot(qh[nope:], int(st.Pos[t]))
			qc := make([]float64, width)
			for j := range r {
				for i := range nope {
					qc[j] += float64(ukt[(h*r+j)*nope+i]) * qh[i]
				}
			}
			copy(qc[r:], qh[nope:])
			var vis []int
			for s := range base + T {
				if s < base || st.Mask[t]>>(s-base)&1 == 1 {
					vis = append(vis, s)
				}
			}
			sc := make([]float64, len(vis))
			mx := math.Inf(-1)
			for k, s := range vis {
				for i := range width {
					sc[k] += qc[i] * ref[s][i]
				}
				sc[k] *= float64(scale)
				mx = math.Max(mx, sc[k])
			}
			var sum float64
			for k := range sc {
				sc[k] = math.Exp(sc[k] - mx)
				sum += sc[k]
			}
			lat := make([]float64, r)
			for k, s := range vis {
				for j := range r {
					lat[j] += sc[k] / sum * ref[s][j]
				}
			}
			want := make([]float64, vd)
			for j := range vd {
				for i := range r {
					want[j] += float64(uv[(h*vd+j)*r+i]) * lat[i]
				}
			}
			relAtt.add(att[(t*hl+h)*vd:(t*hl+h+1)*vd], want)
		}
	}
	// A chain's rows as decode steps: token t alone at base+t (the cache
	// holds the earlier tokens' rows, as the batch wrote them).
	rows, rowsCol := 0, "-"
	if !c.tree {
		for t := range T {
			one := stepParams{Base: int32(base + t), T: 1}
			one.Pos[0], one.Mask[0] = st.Pos[t], 1
			_, att1, err := run(one, 1, t)
			if err != nil {
				return fmt.Errorf("row %d alone: %w", t, err)
			}
			if bitsEqual(att1, att[t*hl*vd:(t+1)*hl*vd]) {
				rows++
			}
		}
		rowsCol = fmt.Sprintf("%d/%d", rows, T)
	}
	const tol = 1e-4
	bad := relQn.nan || relCache.nan || relAtt.nan || relQn.rel() > tol || relCache.rel() > tol || relAtt.rel() > tol || !c.tree && rows < T
	status := "ok"
	if bad {
		status = "FAIL"
	}
	fmt.Fprintf(w, "%-30s %10.2e %10.2e %10.2e %10s %s\n", c.name, relQn.rel(), relCache.rel(), relAtt.rel(), rowsCol, status)
	if bad {
		return fmt.Errorf("relative errors qn %.2e, cache %.2e, att %.2e (unwritten: %v %v %v), chain rows equal to decode %s",
			relQn.rel(), relCache.rel(), relAtt.rel(), relQn.nan, relCache.nan, relAtt.nan, rowsCol)
	}
	return nil
}

// relAcc accumulates a relative error sqrt(Σ(got-want)² / Σwant²) and
// whether any got is NaN (an output left unwritten).
type relAcc struct {
	num, den float64
	nan      bool
}

func (a *relAcc) add(got []float32, want []float64) {
	for i, g := range got {
		if math.IsNaN(float64(g)) {
			a.nan = true
			continue
		}
		d := float64(g) - want[i]
		a.num += d * d
		a.den += want[i] * want[i]
	}
}

func (a *relAcc) rel() float64 { return math.Sqrt(a.num / math.Max(a.den, 1e-300)) }
