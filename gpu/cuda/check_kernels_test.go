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

	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// checkKernels runs each kernel on fresh random inputs with its output
// poisoned (NaN) first and compares with a float64 CPU reference; it prints
// ||out-ref||/||ref|| per case and fails on NaN or a large error.
func checkKernels(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	rng := rand.New(rand.NewPCG(7, uint64(d.SMs)))
	fmt.Fprintf(w, "%-34s %12s %s\n", "kernel check", "rel err", "")
	// bitwise checks that two runs of the same sums agree to the bit.
	bitwise := func(label string, want, got []float32) error {
		same := "ok"
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				same = "FAIL"
			}
		}
		fmt.Fprintf(w, "%-34s %12s %s\n", label, "bitwise", same)
		if same != "ok" {
			return fmt.Errorf("cuda check %s: results differ", label)
		}
		return nil
	}
	modeNames := []string{"mv", "mv+add", "glu+norm", "mv+norm", "geglu+norm"}
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
	// split is x (T, K) on the device split for the tensor cores by xsplit
	// (store_xf), the reference for what attention and the GLU write.
	split := func(x cu.DevicePtr, T, K int) (cu.DevicePtr, error) {
		xf := up(make([]byte, xfBytes(K)))
		fn, e := d.fn("xsplit")
		if e != nil {
			return 0, e
		}
		return xf, launch(fn, [3]int{64, 1, 1}, [3]int{256, 1, 1}, 0, s, ptr(xf), ptr(x), i32(T), i32(K))
	}
	// sameSplit checks that xf holds x (T, K) split as xsplit splits it.
	sameSplit := func(label string, xf cu.DevicePtr, x []float32, T, K int) error {
		want, e := split(up(f32b(x)), T, K)
		if e != nil {
			return e
		}
		n := int(xfBytes(K) / 4) // compared 4 bytes at a time, bit for bit
		if e := bitwise(label, down(want, n), down(xf, n)); e != nil {
			return e
		}
		return err
	}
	randn := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}

	// Matrix products through the Target's dispatch: every dtype on the
	// CUDA cores (72 rows), bf16 tiled on the tensor cores (80 rows), token
	// buckets, store/add/GLU+norm/norm/GELU-tanh GLU+norm (Gemma 3).
	tgt := &Target{launcher: launcher{dev: d, stream: s, eps: 1e-5}, cfg: model.Config{NormEps: 1e-5}}
	for _, mc := range []struct {
		dt    tensor.DType
		N     int
		tiled bool
	}{{tensor.BF16, 72, false}, {tensor.F16, 72, false}, {tensor.F32, 72, false}, {tensor.BF16, 80, true}} { // quantized types: checkQuant
		dt, N := mc.dt, mc.N
		for _, T := range []int{1, 3, 5, 8, 9, 16} {
			K := 1056
			wv := randn(N * K)
			wq, wdeq := quantize(dt, wv, N, K)
			w2v := randn(N * K)
			w2q, w2deq := quantize(dt, w2v, N, K)
			x := randn(T * K)
			base := randn(T * N)
			m := &dmodel{}
			upload := m.uploadMatrix
			if mc.tiled {
				upload = func(ts ...*tensor.Tensor) (dweight, error) { return m.uploadLayerMatrix("", ts...) }
			}
			W, e := upload(&tensor.Tensor{Name: "w", DType: dt, Shape: []int{N, K}, Data: wq})
			if e != nil {
				return e
			}
			W2, e := upload(&tensor.Tensor{Name: "w2", DType: dt, Shape: []int{N, K}, Data: w2q})
			if e != nil {
				return e
			}
			allocs = append(allocs, m.allocs...)
			if W.tiled != mc.tiled {
				return fmt.Errorf("cuda check: %v (%d, %d) tiled = %v, want %v (RIGSCOPE_CUDA_TC=0 set?)", dt, N, K, W.tiled, mc.tiled)
			}
			xd := up(f32b(x))
			suf, _ := kernelSuffix(dt)
			if mc.tiled {
				suf = "bf16 tensor cores"
			}
			g := randn(K)
			gd := up(f32b(g))
			for mode := 0; mode < 5; mode++ {
				var xfIn, xfOut cu.DevicePtr // x split for tcf; the GLU's output split
				run := func() ([]float32, error) {
					var out cu.DevicePtr
					if mode == 1 {
						out = up(f32b(base))
					} else {
						out = poison(T * N)
					}
					if err != nil {
						return nil, err
					}
					var e error
					switch mode {
					case 0, 1:
						e = tgt.matvec("check", out, N, xd, xfIn, W, T, mode, 0)
					case 2:
						e = tgt.glu(out, xfOut, xd, W, W2, T, gd)
					case 3:
						e = tgt.matvec("check", out, N, xd, 0, W, T, 0, gd)
					case 4:
						tgt.gelu = true
						e = tgt.glu(out, xfOut, xd, W, W2, T, gd)
						tgt.gelu = false
					}
					if e != nil {
						return nil, e
					}
					got := down(out, T*N)
					return got, err
				}
				tgt.tune.RowTiles = map[string]rowTileRule{}
				got, e := run()
				if e != nil {
					return e
				}
				// x split ahead (tcf) multiplies the same bf16 hi and lo: bitwise
				// equal; the GLU's split output equals xsplit's of its output.
				if mc.tiled && mode < 2 {
					if xfIn, e = split(xd, T, K); e != nil {
						return e
					}
					again, e := run()
					xfIn = 0
					if e != nil {
						return e
					}
					if e := bitwise(fmt.Sprintf("%s T=%d x split ahead = tc", modeNames[mode], T), got, again); e != nil {
						return e
					}
				}
				if mc.tiled && mode == 2 {
					xfOut = up(make([]byte, xfBytes(N)))
					again, e := run()
					if e != nil {
						return e
					}
					if e := sameSplit(fmt.Sprintf("glu T=%d output split", T), xfOut, again, T, N); e != nil {
						return e
					}
					xfOut = 0
				}
				// More row tiles per block sum the same products in the same
				// order: bitwise equal to one tile, at each block size.
				for _, warps := range []int{0, 16} {
					tgt.warps, tgt.tune.RowTiles = warps, map[string]rowTileRule{}
					var one []float32
					if warps == 0 {
						one = got
					}
					for _, tiles := range []int{2, 4} {
						name := fmt.Sprintf("%s%d_%dr%d", []string{"tc", "tc", "tcglu", "tcn", "tcglu"}[mode], tgt.tcWarps("check", N, mode == 2 || mode == 4), tcTiles(T), tiles)
						if !mc.tiled || !d.has(name) {
							continue
						}
						if one == nil {
							if one, e = run(); e != nil {
								return e
							}
						}
						rt := rowTileRule{tiles: tiles}
						tgt.tune.RowTiles = map[string]rowTileRule{"check": rt, "gate_up": rt}
						more, e := run()
						tgt.tune.RowTiles = map[string]rowTileRule{}
						if e != nil {
							return e
						}
						if e := bitwise(fmt.Sprintf("%s T=%d %s = 1 tile", modeNames[mode], T, name), one, more); e != nil {
							return e
						}
					}
				}
				tgt.warps = 0
				ref := make([]float64, T*N)
				for t := 0; t < T; t++ {
					xr := make([]float64, K) // x, or rmsnorm(x, g) for glu and mvn
					var ss float64
					for k := range xr {
						xr[k] = float64(x[t*K+k])
						ss += xr[k] * xr[k]
					}
					if mode >= 2 {
						inv := 1 / math.Sqrt(ss/float64(K)+1e-5)
						for k := range xr {
							xr[k] *= inv * float64(g[k])
						}
					}
					for n := 0; n < N; n++ {
						var a, b float64
						for k := 0; k < K; k++ {
							a += float64(wdeq[n*K+k]) * xr[k]
							b += float64(w2deq[n*K+k]) * xr[k]
						}
						switch mode {
						case 0, 3:
							ref[t*N+n] = a
						case 1:
							ref[t*N+n] = a + float64(base[t*N+n])
						case 2:
							ref[t*N+n] = a / (1 + math.Exp(-a)) * b
						case 4:
							ref[t*N+n] = 0.5 * a * (1 + math.Tanh(0.7978845608028654*(a+0.044715*a*a*a))) * b
						}
					}
				}
				if e := report(fmt.Sprintf("%s T=%d %s", modeNames[mode], T, suf), got, ref, 1e-5); e != nil {
					return e
				}
			}
		}
	}

	// Attention (RoPE, cache store, split softmax, merge) with a tree mask
	// over a random cache, vs float64 (attnReference); the new slots of the
	// cache too; the extensions through the attnx_ kernels. With a bf16
	// cache (the _kb kernels) the cached slots are bf16 values, the new
	// slots must be the exact ones rounded (within 2^-8 relative: nearest
	// of float32 arithmetic's result), and the output the float64
	// attention over the values the kernel stored.
	for _, kvf := range kvFormats {
		for _, tc := range attnCases {
			// every block shape (rows per block) and split size the enqueue knobs
			// pick: the split by length (chunk 0) and fixed chunks (attn_fixed.cu)
			for _, v := range []struct{ rows, minper, chunk, group int }{{8, 64, 0, 1}, {8, 32, 0, 1}, {4, 128, 0, 1}, {8, 32, 32, 1}, {4, 32, 32, 4}, {8, 32, 64, 4}, {8, 32, 128, 1}} {
				slots := tc.base + tc.T
				width := tc.hk * tc.hd
				ld := (tc.hq + 2*tc.hk) * tc.hd
				qkv := randn(tc.T * ld)
				Kc, Vc := randn(slots*width), randn(slots*width)
				for i := tc.base * width; i < slots*width; i++ {
					Kc[i], Vc[i] = float32(math.NaN()), float32(math.NaN()) // the kernel stores these
				}
				if kvf == kvBF16 {
					for i := range tc.base * width {
						Kc[i], Vc[i] = tensor.BF16ToF32(tensor.F32ToBF16(Kc[i])), tensor.BF16ToF32(tensor.F32ToBF16(Vc[i]))
					}
				}
				cs, sn := cpu.NewRopeTable(tc.hd, slots+8, 10000).Tables(slots + 8)
				st := stepParams{Base: int32(tc.base), T: int32(tc.T)}
				parent := make([]int, tc.T)
				for i := range parent {
					parent[i] = i - 1
					if i > 1 && rng.IntN(2) == 0 {
						parent[i] = rng.IntN(i)
					}
					st.Mask[i] = 1 << i
					st.Pos[i] = int32(tc.base + i)
					if parent[i] >= 0 {
						st.Mask[i] |= st.Mask[parent[i]]
						st.Pos[i] = st.Pos[parent[i]] + 1
					}
				}
				var bias, qkn []float32
				var biasd, qknd cu.DevicePtr
				if tc.bias {
					bias = randn(ld)
					biasd = up(f32b(bias))
				}
				if tc.qkNorm {
					qkn = randn(2 * tc.hd)
					qknd = up(f32b(qkn))
				}
				const eps = 1e-6
				stb := (*[1 << 10]byte)(unsafe.Pointer(&st))[:stepBytes:stepBytes]
				qd, kd, vd, sd := up(f32b(qkv)), up(kvCacheBytesOf(Kc, kvf)), up(kvCacheBytesOf(Vc, kvf)), up(append([]byte(nil), stb...))
				csd, snd := up(f32b(cs)), up(f32b(sn))
				cfg := model.Config{Heads: tc.hq, KVHeads: tc.hk, HeadDim: tc.hd}
				ap := kvRowPlan{v.chunk, v.group, true}.plan(cfg, slots, tc.S)
				rowsAll := tc.hq * MaxTokens * ap.cols()
				pm, pl, pacc := poison(rowsAll), poison(rowsAll), poison(rowsAll*tc.hd)
				cnt := up(make([]byte, 4*tc.hk*attnRowGroups(cfg)))
				out := poison(tc.T * tc.hq * tc.hd)
				xf := up(make([]byte, xfBytes(tc.hq*tc.hd)))
				var qo cu.DevicePtr // the output quantized for a quantized wo (att_quant), where heads are whole 32-blocks
				if tc.hd%32 == 0 {
					qo = up(make([]byte, qxBytes(tc.hq*tc.hd)))
				}
				if err != nil {
					return err
				}
				name, grid := attnLaunch(cfg, tc.S, tc.T, v.rows)
				if tc.ext() {
					name = attnKernel(name, &dlayer{bias: biasd, qkNorm: qknd}, &dattn{window: tc.window})
				}
				name = ap.kernel(kvf.kernel(name), tc.T, false)
				fn, e := d.fn(name)
				if e != nil {
					return e
				}
				inter := 0
				if tc.inter {
					inter = 1
				}
				scale := float32(1 / math.Sqrt(float64(tc.hd)))
				for rep := 0; rep < 2; rep++ { // twice: the split counters must be back at zero
					if e := launch(fn, grid, [3]int{128, 1, 1}, 0, s, ptr(out), ptr(pm), ptr(pl), ptr(pacc), ptr(cnt), ptr(qd), i32(ld), ptr(kd), ptr(vd),
						ptr(sd), ptr(csd), ptr(snd), i32(tc.hq), i32(tc.hk), f32(scale), i32(inter), i32(v.minper), ptr(xf),
						ptr(biasd), ptr(qknd), f32(eps), i32(tc.window), ptr(qo), i32(ap.chunk), i32(ap.np), i32(ap.group)); e != nil {
						return e
					}
				}
				got := down(out, tc.T*tc.hq*tc.hd)
				if tc.hq*tc.hd%16 == 0 {
					label := fmt.Sprintf("attention hd=%d T=%d S=%d split", tc.hd, tc.T, tc.S)
					if e := sameSplit(label, xf, got, tc.T, tc.hq*tc.hd); e != nil {
						return e
					}
				}
				if qo != 0 {
					want, have, e := attnQX(s, qo, got, tc.T, tc.hq*tc.hd)
					if e != nil {
						return e
					}
					if e := bitwise(fmt.Sprintf("attention hd=%d T=%d S=%d int8 out = qx", tc.hd, tc.T, tc.S), want, have); e != nil {
						return e
					}
				}
				gotK, gotV := kvCacheValues(down(kd, slots*width*kvf.elemBytes()/4), kvf), kvCacheValues(down(vd, slots*width*kvf.elemBytes()/4), kvf)
				if err != nil {
					return err
				}
				var stored [2][]float32
				if kvf == kvBF16 {
					stored = [2][]float32{gotK, gotV}
				}
				ref, refK, refV := attnReference(tc, qkv, Kc, Vc, cs, sn, &st, bias, qkn, eps, float64(scale), stored)
				desc := fmt.Sprintf("%v rows<=%d per>=%d", tc, v.rows, v.minper)
				if v.chunk > 0 {
					desc = fmt.Sprintf("%v rows<=%d chunk %d group %d", tc, v.rows, v.chunk, v.group)
				}
				if kvf == kvBF16 {
					desc = "kv bf16 " + desc
				}
				if e := report("attention "+desc, got, ref, 1e-5); e != nil {
					return e
				}
				ktol, vtol := 1e-6, 0.0
				if tc.bias {
					vtol = 1e-7 // v + bias rounds once in float32
				}
				if kvf == kvBF16 { // rounded: within 2^-8 of each value (bf16NearErr), RMS about 2^-9/sqrt(3)
					ktol, vtol = 2e-3, 2e-3
					if (slots-tc.base)*width < 1024 { // too few rounded values for the RMS to settle (hd 16, one token: 32): the bound of each
						ktol, vtol = 1.0/256, 1.0/256
					}
					for i := tc.base * width; i < slots*width; i++ {
						if e := bf16NearErr(gotK[i], refK[i]); e != nil {
							return fmt.Errorf("cuda check k cache %s: element %d: %w", desc, i, e)
						}
						if e := bf16NearErr(gotV[i], refV[i]); e != nil {
							return fmt.Errorf("cuda check v cache %s: element %d: %w", desc, i, e)
						}
					}
				}
				if e := report("k cache "+desc, gotK, refK, ktol); e != nil {
					return e
				}
				if e := report("v cache "+desc, gotV, refV, vtol); e != nil {
					return e
				}
			}
		}
	}

	// Argmax.
	// RMSNorm and argmax.
	{
		T := 3
		V := 128256
		lg := randn(T * V)
		lg[5*V/7] = 9 // row 0
		ld := up(f32b(lg))
		st := stepParams{}
		stb := (*[1 << 10]byte)(unsafe.Pointer(&st))[:stepBytes:stepBytes]
		sd := up(append([]byte(nil), stb...))
		ids := poison(T)
		fa, _ := d.fn("argmax_rows")
		part, cnt := poison(2*T*argmaxBlocks), up(make([]byte, 4*T))
		for rep := 0; rep < 2; rep++ { // twice: the row counters must be back at zero
			if e := launch(fa, [3]int{argmaxBlocks, T, 1}, [3]int{256, 1, 1}, 0, s, ptr(ids), ptr(ld), i32(V), ptr(sd), ptr(part), ptr(cnt)); e != nil {
				return e
			}
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

// checkStream makes d's context current on this thread and a stream for a
// kernel check; done destroys the stream and unbinds.
func (d *Device) checkStream() (s cu.Stream, done func(), err error) {
	unbind, err := d.Bind()
	if err != nil {
		return s, func() {}, err
	}
	if s, err = cu.MakeStream(cu.NonBlocking); err != nil {
		unbind()
		return s, func() {}, err
	}
	return s, func() { s.Destroy(); unbind() }, nil
}
