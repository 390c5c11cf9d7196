//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gorgonia.org/cu"

	"rigscope/engine/tensor"
)

// moeKernelCase is one shape of the MoE kernels' check.
type moeKernelCase struct {
	name      string
	dim, E, k int
	fl        int // expert FFN columns (not a multiple of 8: the kernels' one-element loads)
	norm, add bool
	T         int
	// DeepSeek-V3's router: sigmoid scores, a correction bias for
	// choosing, groups (topk of groups), the routed scale; shared: moe_down
	// starts each sum from a shared expert's output (init).
	sigmoid, bias, shared bool
	groups, topkGroups    int
	scale                 float32
}

// checkMoEKernels runs moe_logits, moe_route, moe_glu_bf16 and moe_down_bf16 (moe.cu)
// on random inputs for T tokens and checks: the chosen experts against a
// float64 top-k of float64 router logits (softmax, or DeepSeek-V3's
// sigmoid with the bias and groups: moeRef64), the output against a float64
// reference of the same experts (bf16 weights as stored), and every row
// against the same row run alone (T = 1) bit for bit, experts and
// weights included: a verify step sums each token's experts as decode does.
func checkMoEKernels(d *Device, w io.Writer) (err error) {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	dh := newDevHelper(s)
	defer dh.free()
	fns := map[string]cu.Function{}
	for _, n := range []string{"moe_logits", "moe_route", "moe_glu_bf16", "moe_down_bf16"} {
		if fns[n], err = d.fn(n); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nmoe kernels (route, glu, down; bf16 experts): vs float64, each row of T vs the row alone (bitwise)\n")
	fmt.Fprintf(w, "%-28s %10s %10s %10s\n", "case", "experts=", "rel err", "T=1 rows")
	rng := rand.New(rand.NewPCG(3, 9))
	for _, c := range []moeKernelCase{
		{name: "mixtral-like E8 k2 norm", dim: 256, E: 8, k: 2, fl: 128, norm: true, T: 8},
		{name: "qwen3-like E64 k8 norm add", dim: 128, E: 64, k: 8, fl: 52, norm: true, add: true, T: 16},
		{name: "E16 k4 no norm", dim: 192, E: 16, k: 4, fl: 40, T: 5},
		{name: "deepseek-like E64 g8/4 k6", dim: 256, E: 64, k: 6, fl: 48, norm: true, T: 16,
			sigmoid: true, bias: true, shared: true, groups: 8, topkGroups: 3, scale: 2.5},
		{name: "sigmoid E16 k4 bias add", dim: 128, E: 16, k: 4, fl: 40, add: true, T: 7, sigmoid: true, bias: true, shared: true},
		{name: "sigmoid E32 g4/1 k3 no bias", dim: 64, E: 32, k: 3, fl: 24, norm: true, T: 3, sigmoid: true, groups: 4, topkGroups: 1, scale: 1.5},
	} {
		dim, E, k, fl, T := c.dim, c.E, c.k, c.fl, c.T
		randv := func(n int, a float64) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(a * rng.NormFloat64())
			}
			return v
		}
		bf := func(v []float32) ([]byte, []float64) { // bf16 bytes and the values they hold
			b := make([]byte, 2*len(v))
			tensor.Encode(b, tensor.BF16, v)
			f := make([]float64, len(v))
			for i := range f {
				f[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
			}
			return b, f
		}
		x := randv(T*dim, 1)
		g := randv(dim, 0.1)
		for i := range g {
			g[i] += 1
		}
		router := randv(E*dim, 1/math.Sqrt(float64(dim)))
		gateB, gate := bf(randv(E*fl*dim, 1/math.Sqrt(float64(dim))))
		upB, upw := bf(randv(E*fl*dim, 1/math.Sqrt(float64(dim))))
		downB, downw := bf(randv(E*dim*fl, 1/math.Sqrt(float64(fl))))
		dRouter, dG, dGate, dUp, dDown := dh.up(f32bytes(router)), dh.up(f32bytes(g)), dh.up(gateB), dh.up(upB), dh.up(downB)
		if dh.err != nil {
			return dh.err
		}
		var bias, init []float32
		var dBias cu.DevicePtr
		if c.bias {
			bias = randv(E, 0.3)
			if dBias = dh.up(f32bytes(bias)); dh.err != nil {
				return dh.err
			}
		}
		if c.shared {
			init = randv(T*dim, 0.5)
		}
		sig := 0
		if c.sigmoid {
			sig = 1
		}
		norm, add := 0, 0
		if c.norm {
			norm = 1
		}
		if c.add {
			add = 1
		}
		// run is the three kernels on rows xs (n, dim): out (n, dim), ids, wts.
		run := func(xs, in []float32, n int) ([]float32, []int32, []float32, error) {
			var dInit cu.DevicePtr
			if in != nil {
				dInit = dh.up(f32bytes(in))
			}
			dx := dh.up(f32bytes(xs))
			xn, ids, wts, h, lg := dh.poison(n*dim), dh.poison(n*k), dh.poison(n*k), dh.poison(n*k*fl), dh.poison(n*E)
			out := dh.poison(n * dim)
			if c.add {
				out = dh.up(f32bytes(xs))
			}
			if dh.err != nil {
				return nil, nil, nil, dh.err
			}
			if err := firstErr(
				launch(fns["moe_logits"], [3]int{(E + 7) / 8, n, 1}, [3]int{256, 1, 1}, 0, s, ptr(lg), ptr(dx), ptr(dG), ptr(dRouter), i32(dim), i32(E), f32(1e-5)),
				launch(fns["moe_route"], [3]int{n, 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(xn), ptr(ids), ptr(wts), ptr(dx), ptr(dG), ptr(dRouter),
					i32(dim), i32(E), i32(k), i32(norm), f32(c.scale), f32(1e-5), i32(sig), ptr(dBias), i32(c.groups), i32(c.topkGroups), ptr(lg)),
				launch(fns["moe_glu_bf16"], [3]int{(fl + 7) / 8, n * k, 1}, [3]int{256, 1, 1}, 0, s, ptr(h), ptr(ids), ptr(xn), ptr(dGate), ptr(dUp),
					i32(dim), i32(fl), i32(k)),
				launch(fns["moe_down_bf16"], [3]int{(dim + 7) / 8, n, 1}, [3]int{256, 1, 1}, 0, s, ptr(out), ptr(ids), ptr(wts), ptr(h), ptr(dDown),
					i32(dim), i32(fl), i32(k), i32(add), ptr(dInit))); err != nil {
				return nil, nil, nil, err
			}
			o, e1 := dh.down(out, n*dim)
			id, e2 := download[int32](dh, ids, n*k)
			wt, e3 := dh.down(wts, n*k)
			return o, id, wt, firstErr(e1, e2, e3)
		}
		out, ids, wts, err := run(x, init, T)
		if err != nil {
			return fmt.Errorf("moe kernels %s: %w", c.name, err)
		}
		// float64 reference, each token.
		sameExperts, rows := 0, 0
		var num, den float64
		for t := range T {
			xr := x[t*dim : (t+1)*dim]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(dim)+1e-5)
			xn := make([]float64, dim)
			for i := range xn {
				xn[i] = float64(xr[i]) * inv * float64(g[i])
			}
			sc := make([]float64, E)
			for e := range E {
				for i := range dim {
					sc[e] += float64(router[e*dim+i]) * xn[i]
				}
			}
			want, wantW := moeRef64(c, sc, bias)
			got := make([]int, k)
			for j := range k {
				got[j] = int(ids[t*k+j])
			}
			if slices.Equal(got, want) {
				sameExperts++
			}
			// The output from the experts the GPU chose (a near-tie the
			// float64 top-k breaks the other way is counted above), with
			// the float64 weights of those experts.
			for _, e := range got {
				if e < 0 || e >= E {
					return fmt.Errorf("moe kernels %s: token %d routed to expert %d of %d", c.name, t, e, E)
				}
			}
			if !slices.Equal(got, want) {
				_, wantW = moeWeights64(c, sc, got)
			}
			ref := make([]float64, dim)
			for j, e := range got {
				wt := wantW[j]
				hh := make([]float64, fl)
				for f := range fl {
					var a, b float64
					row := (e*fl + f) * dim
					for i := range dim {
						a += gate[row+i] * xn[i]
						b += upw[row+i] * xn[i]
					}
					hh[f] = a / (1 + math.Exp(-a)) * b
				}
				for dd := range dim {
					var y float64
					row := (e*dim + dd) * fl
					for f := range fl {
						y += downw[row+f] * hh[f]
					}
					ref[dd] += wt * y
				}
				if dw := math.Abs(float64(wts[t*k+j]) - wt); dw > 1e-5 {
					return fmt.Errorf("moe kernels %s: token %d slot %d weight %g, want %g", c.name, t, j, wts[t*k+j], wt)
				}
			}
			for dd := range dim {
				want := ref[dd]
				if c.add {
					want += float64(xr[dd])
				}
				if init != nil {
					want += float64(init[t*dim+dd])
				}
				gv := float64(out[t*dim+dd])
				if math.IsNaN(gv) {
					return fmt.Errorf("moe kernels %s: token %d element %d unwritten (NaN)", c.name, t, dd)
				}
				num += (gv - want) * (gv - want)
				den += want * want
			}
			// The row alone.
			var in1 []float32
			if init != nil {
				in1 = init[t*dim : (t+1)*dim]
			}
			o1, id1, wt1, err := run(xr, in1, 1)
			if err != nil {
				return fmt.Errorf("moe kernels %s: row %d alone: %w", c.name, t, err)
			}
			if bitsEqual(o1, out[t*dim:(t+1)*dim]) && slices.Equal(id1, ids[t*k:(t+1)*k]) && bitsEqual(wt1, wts[t*k:(t+1)*k]) {
				rows++
			}
		}
		rel := math.Sqrt(num / math.Max(den, 1e-300))
		st := "ok"
		if rel > 1e-4 || sameExperts < T || rows < T {
			st = "FAIL"
		}
		fmt.Fprintf(w, "%-28s %7d/%-2d %10.2e %7d/%-2d %s\n", c.name, sameExperts, T, rel, rows, T, st)
		if st != "ok" {
			return fmt.Errorf("moe kernels %s: experts %d/%d as float64 chooses, relative error %.2e, rows equal alone %d/%d", c.name, sameExperts, T, rel, rows, T)
		}
	}
	return nil
}

// moeRef64 is moe.go's route in float64 for one token's router logits:
// the k experts (ascending) and their weights.
func moeRef64(c moeKernelCase, logits []float64, bias []float32) ([]int, []float64) {
	E := len(logits)
	sc := scores64(c, logits)
	choice := slices.Clone(sc)
	for e := range bias {
		choice[e] += float64(bias[e])
	}
	if c.groups > 1 {
		per := E / c.groups
		gs := make([]float64, c.groups)
		for g := range gs {
			v := slices.Clone(choice[g*per : (g+1)*per])
			sort.Sort(sort.Reverse(sort.Float64Slice(v)))
			gs[g] = v[0] + v[1]
		}
		order := make([]int, c.groups)
		for g := range order {
			order[g] = g
		}
		sort.SliceStable(order, func(a, b int) bool { return gs[order[a]] > gs[order[b]] })
		for _, g := range order[c.topkGroups:] {
			clear(choice[g*per : (g+1)*per])
		}
	}
	order := make([]int, E)
	for e := range order {
		order[e] = e
	}
	sort.SliceStable(order, func(a, b int) bool { return choice[order[a]] > choice[order[b]] })
	ids := slices.Clone(order[:c.k])
	sort.Ints(ids)
	_, w := moeWeights64(c, logits, ids)
	return ids, w
}

// scores64 is the router's scores of logits: softmax or sigmoid.
func scores64(c moeKernelCase, logits []float64) []float64 {
	sc := make([]float64, len(logits))
	if c.sigmoid {
		for e, v := range logits {
			sc[e] = 1 / (1 + math.Exp(-v))
		}
		return sc
	}
	mx, sum := math.Inf(-1), 0.0
	for _, v := range logits {
		mx = math.Max(mx, v)
	}
	for e, v := range logits {
		sc[e] = math.Exp(v - mx)
		sum += sc[e]
	}
	for e := range sc {
		sc[e] /= sum
	}
	return sc
}

// moeWeights64 is the weights of experts ids: their scores, divided by
// their sum with norm, times the routed scale.
func moeWeights64(c moeKernelCase, logits []float64, ids []int) ([]int, []float64) {
	sc := scores64(c, logits)
	w := make([]float64, len(ids))
	var sum float64
	for j, e := range ids {
		w[j] = sc[e]
		sum += w[j]
	}
	for j := range w {
		if c.norm {
			w[j] /= sum
		}
		if c.scale != 0 {
			w[j] *= float64(c.scale)
		}
	}
	return ids, w
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
