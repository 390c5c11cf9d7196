//go:build cuda

package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gorgonia.org/cu"

	"rigscope/engine/quant"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// checkFP8 is -checks fp8: the F8_E4M3 products (fp8.cu) against float64
// on random e4m3 bytes in each scale layout, the embedding against the
// CPU, their bandwidth on llama-8b's shapes, and gocoder-14m-hf quantized
// to FP8 in each scheme (quant.WriteFP8) decoded on the GPU against the
// CPU engine (checkFP8Models).
func checkFP8(ctx context.Context, d *Device, models string, w io.Writer) error {
	var errs []error
	if checkPart("models") {
		if err := checkFP8Models(ctx, d, models, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: fp8 models: %w", err))
		}
	}
	if checkPart("kernels") {
		if err := checkFP8Kernels(d, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: fp8 kernels: %w", err))
		}
	}
	if checkPart("bandwidth") {
		if err := checkFP8Bandwidth(d, w); err != nil {
			errs = append(errs, fmt.Errorf("cuda-check: fp8 bandwidth: %w", err))
		}
	}
	return errors.Join(errs...)
}

// randFP8 is a rows x cols F8_E4M3 tensor of random bytes (every finite
// e4m3 value; the NaN codes 0x7f, 0xff replaced by ±448) with random
// positive scales in blocks br x bc of size about 1/(64 sqrt(cols)), so
// outputs are O(1).
func randFP8(rng *rand.Rand, name string, rows, cols, br, bc int) (*tensor.Tensor, error) {
	data := make([]byte, rows*cols)
	for i := range data {
		b := byte(rng.Uint32())
		if b&0x7f == 0x7f {
			b--
		}
		data[i] = b
	}
	gr, gc := (rows+br-1)/br, (cols+bc-1)/bc
	vals := make([]float32, gr*gc)
	for i := range vals {
		vals[i] = float32((0.5 + rng.Float64()) / 64 / math.Sqrt(float64(cols)))
	}
	s, err := tensor.NewScales(rows, cols, br, bc, vals)
	if err != nil {
		return nil, err
	}
	return &tensor.Tensor{Name: name, DType: tensor.F8_E4M3, Shape: []int{rows, cols}, Data: data, Scales: s}, nil
}

// fp8Ref64 is the matrix of stacked FP8 tensors in float64, by the
// format's definition: the e4m3 value (the table is checked against its
// float64 formula in engine/tensor) times the element's scale, unrounded.
func fp8Ref64(ts ...*tensor.Tensor) []float64 {
	var out []float64
	for _, t := range ts {
		for r := range t.Rows() {
			row := t.Row(r)
			for c := range t.Cols() {
				out = append(out, float64(tensor.E4M3ToF32(row[c]))*float64(t.Scales.At(r, c)))
			}
		}
	}
	return out
}

// tolFP8 bounds ||got-ref||/||ref||: the CUDA-core kernels sum each
// 16-element chunk's exact e4m3 values times x with float32 fmas, scale the
// chunk's sum once and add it with one more fma (fp8.cu, Scaled), float32
// rounding as the bf16 kernels' (~1e-7); the tensor-core ones (f8tc*)
// multiply the exact values by x split into bf16 hi + lo (about 2^-17 of x
// lost, ~2e-6 relative) and add each tile's product times its scale with one
// fma, as the bf16 tensor-core kernels (checked at 1e-5 too).
const tolFP8 = 1e-5

// checkFP8Kernels runs the products through the Target's dispatch (matvec,
// glu) for T = 1..16 and every mode, outputs NaN-poisoned, against
// float64, on each path (fp8Paths: mv_f8 row-major, and the tiled
// tensor-core kernels f8tc* at their block size and forced ones); every
// row of a T-token run must be bitwise the T=1 run of that row, more row
// tiles bitwise one tile, and x split ahead (tcf) bitwise x split by the
// product (checkFP8Split). Layouts: per-tensor, per-channel, 128x128
// blocks with a partial last block each way, a qkv stack of three
// per-tensor scales; and embed_f8 rows against the CPU's DequantRow.
func checkFP8Kernels(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	h := newDevHelper(s)
	defer h.free()
	rng := rand.New(rand.NewPCG(8, 3))
	tgt := checkTarget(d, s)
	// mv: 200 rows (a partial row block and a partial last mv block); tc: 208
	// (13 row tiles: a partial 128-row block, partial blocks of 2 and 4
	// tiles). K = 34.4 blocks of 128 (275 k tiles: a partial last run).
	const K, TT = 4400, MaxTokens
	x, g, base := randn32(rng, TT*K, 0, 1), randn32(rng, K, 1, 0.2), randn32(rng, TT*208, 0, 1)
	xd, gd := h.up(f32bytes(x)), h.up(f32bytes(g))
	modeNames := []string{"mv", "mv+add", "glu+norm", "mv+norm", "geglu+norm"}
	fmt.Fprintf(w, "\nFP8 (e4m3) products vs float64 (K=%d, T=1..16, outputs NaN-poisoned, tol %.0e; mv: mv_f8, mf: mf8* (RIGSCOPE_CUDA_F8MV), 200 rows; tc: f8tc*, 208 rows, wN rR: N warps, R row tiles)\n", K, tolFP8)
	fmt.Fprintf(w, "%-12s %-10s %-11s %12s %12s %10s %10s %s\n", "scales", "path", "mode", "rel", "max abs", "T=k = T=1", "r1|split", "")
	type layout struct {
		name   string
		br, bc int // 0: the whole dimension
		parts  []int
	}
	var errs []error
	for _, l := range []layout{{"per-tensor", 0, 0, nil}, {"per-channel", 1, 0, nil}, {"block-128", 128, 128, nil}, {"qkv stack", 0, 0, []int{120, 40, 40}}} {
		for _, tc := range []bool{false, true} {
			N, parts := 200, l.parts
			if tc {
				N = 208
				if parts != nil {
					parts = []int{128, 40, 40}
				}
			}
			if parts == nil {
				parts = []int{N}
			}
			mk := func(name string) ([]*tensor.Tensor, error) {
				var ts []*tensor.Tensor
				for i, rows := range parts {
					br, bc := l.br, l.bc
					if br == 0 {
						br = rows
					}
					if bc == 0 {
						bc = K
					}
					t, err := randFP8(rng, fmt.Sprintf("%s%d", name, i), rows, K, br, bc)
					if err != nil {
						return nil, err
					}
					ts = append(ts, t)
				}
				return ts, nil
			}
			ws, e1 := mk("w")
			w2s, e2 := mk("u")
			if err := errors.Join(e1, e2); err != nil {
				return err
			}
			W, W2 := fp8Ref64(ws...), fp8Ref64(w2s...)
			m := &dmodel{fp8TC: map[bool]string{true: "all"}[tc]}
			Wd, e1 := m.uploadStacked(tc, "", ws...)
			W2d, e2 := m.uploadStacked(tc, "", w2s...)
			h.allocs = append(h.allocs, m.allocs...)
			if err := errors.Join(e1, e2); err != nil {
				return err
			}
			if Wd.tiled != tc || W2d.tiled != tc {
				return fmt.Errorf("%s (%d, %d): tiled %v, want %v", l.name, N, K, Wd.tiled, tc)
			}
			for mode := 0; mode < 5; mode++ {
				if len(parts) > 1 && (mode == 2 || mode == 4) {
					continue // a stack is qkv: no GLU
				}
				var norm cu.DevicePtr
				if mode >= 2 {
					norm = gd
				}
				ref := quantRef(mode, W, W2, x, nil, g, base[:TT*N], TT, N, K)
				var r1, mf1 map[int][]float32 // the last one-row-tile path's outputs by T, mf's
				for _, p := range fp8Paths {
					if p.tc != tc {
						continue
					}
					tgt.warps, tgt.tune.RowTiles = p.warps, nil
					if tgt.tune.F8MV, err = parseF8MV(p.mf); err != nil {
						return err
					}
					tgt.mf8g = 0
					if i := strings.LastIndex(p.name, " g"); i >= 0 {
						tgt.mf8g, _ = strconv.Atoi(p.name[i+2:])
					}
					if p.tiles > 1 {
						rt := rowTileRule{tiles: p.tiles}
						tgt.tune.RowTiles = map[string]rowTileRule{"check": rt, "gate_up": rt}
					}
					run := checkProduct(h, tgt, mode, base, xd, Wd, W2d, norm, N, K)
					one := make([][]float32, TT)
					for t := range one {
						if one[t], err = run(t, 1); err != nil {
							return err
						}
					}
					bitwise, same, worst, worstAbs := "ok", "-", 0.0, 0.0
					outs := map[int][]float32{}
					for T := 1; T <= TT; T++ {
						got, err := run(0, T)
						if err != nil {
							return err
						}
						outs[T] = got
						if bitwise == "ok" {
							bitwise = rowsBitwise(got, one, T, N)
						}
						if p.tiles > 1 && r1 != nil && same != "FAIL" {
							same = "ok"
							if b := rowsBitwise(got, [][]float32{r1[T]}, 1, T*N); b != "ok" {
								same = "FAIL"
								errs = append(errs, fmt.Errorf("%s %s %s T=%d: %d row tiles differ from one: %s", l.name, p.name, modeNames[mode], T, p.tiles, b))
							}
						}
						if p.mf != "" && p.mf != "1" && !strings.Contains(p.mf, "ks") && mf1 != nil && same != "FAIL" { // the same split (by shape) as mf: bitwise its rows
							same = "ok"
							if b := rowsBitwise(got, [][]float32{mf1[T]}, 1, T*N); b != "ok" {
								same = "FAIL"
								errs = append(errs, fmt.Errorf("%s %s %s T=%d: differs from mf: %s", l.name, p.name, modeNames[mode], T, b))
							}
						}
						rel, abs, e := errStats(got, ref[:T*N])
						if e != nil {
							errs = append(errs, fmt.Errorf("%s %s %s T=%d: %w", l.name, p.name, modeNames[mode], T, e))
							rel = math.Inf(1)
						}
						worst, worstAbs = math.Max(worst, rel), math.Max(worstAbs, abs)
					}
					if p.tiles <= 1 {
						r1 = outs
					}
					if p.mf == "1" {
						mf1 = outs
					}
					if p.tc && p.warps == 0 && p.tiles == 0 { // the dispatch's own kernels: x split ahead, the GLU's split output
						if same, err = checkFP8Split(d, h, tgt, mode, base, xd, Wd, W2d, norm, N, K, outs); err != nil {
							return err
						}
						if same != "ok" && same != "-" {
							errs = append(errs, fmt.Errorf("%s %s %s: %s", l.name, p.name, modeNames[mode], same))
							same = "FAIL"
						}
					}
					st := "ok"
					if !(worst <= tolFP8) || bitwise != "ok" || same == "FAIL" {
						st = "FAIL"
						errs = append(errs, fmt.Errorf("%s %s %s: rel %.2e (tol %.0e), bitwise %s", l.name, p.name, modeNames[mode], worst, tolFP8, bitwise))
					}
					short := bitwise
					if len(short) > 10 {
						short = "FAIL"
					}
					fmt.Fprintf(w, "%-12s %-10s %-11s %12.2e %12.2e %10s %10s %s\n", l.name, p.name, modeNames[mode], worst, worstAbs, short, same, st)
				}
				tgt.warps, tgt.tune.RowTiles, tgt.tune.F8MV, tgt.mf8g = 0, nil, f8mvKnob{}, 0
			}
			if !tc {
				if err := checkEmbedFP8(d, h, ws[0], Wd, w, l.name); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkEmbedFP8: embed_f8 rows of wt (uploaded as wd) equal the CPU's
// DequantRow bitwise.
func checkEmbedFP8(d *Device, h *devHelper, wt *tensor.Tensor, wd dweight, w io.Writer, name string) error {
	fn, err := d.fn("embed_f8")
	if err != nil {
		return err
	}
	N, K := wt.Rows(), wt.Cols()
	toks := []int32{3, 0, int32(N - 1), 41}
	tb := make([]byte, 4*len(toks))
	for i, t := range toks {
		binary.LittleEndian.PutUint32(tb[4*i:], uint32(t))
	}
	td, out := h.up(tb), h.poison(len(toks)*K)
	if h.err != nil {
		return h.err
	}
	if err := launch(fn, [3]int{len(toks), 1, 1}, [3]int{128, 1, 1}, 0, h.s, ptr(out), ptr(wd.w), ptr(wd.s), ptr(td), i32(K)); err != nil {
		return err
	}
	got, err := h.down(out, len(toks)*K)
	if err != nil {
		return err
	}
	row := make([]float32, K)
	bad := 0
	for i, t := range toks {
		cpu.DequantRow(row, wt, int(t))
		for k := range row {
			if math.Float32bits(got[i*K+k]) != math.Float32bits(row[k]) {
				bad++
			}
		}
	}
	st := "ok"
	if bad > 0 {
		st = "FAIL"
	}
	fmt.Fprintf(w, "%-12s %-10s %-11s %12s %12s %10s %10s %s (%d of %d values differ)\n", name, "mv", "embed", "", "", "= cpu", "", st, bad, len(toks)*K)
	if bad > 0 {
		return fmt.Errorf("embed_f8 (%s): %d values differ from the CPU's dequantization", name, bad)
	}
	return nil
}

// checkFP8Bandwidth times the FP8 products (128x128 block scales, as
// DeepSeek-V3 and Qwen3 FP8) on llama-8b's shapes for 1, 5 and 16 tokens,
// weights rotated over copies of at least 256 MB (not from L2), as weight
// bytes per second against the device's read bandwidth, and sums 32
// layers into the products' part of an 8B FP8 decode step (the output
// projection bf16, as FP8 releases keep lm_head: not in the sum); each
// shape on both paths, mv_f8 (row-major) then the tensor cores (f8tc*,
// tiled: Tuning.F8TC), in the same process.
func checkFP8Bandwidth(d *Device, w io.Writer) error {
	_, readGBps, err := Bandwidth(d, 1<<30)
	if err != nil {
		return err
	}
	s, timed, done, err := d.timedStream()
	if err != nil {
		return err
	}
	defer done()
	fill, err := d.fn("fill_f8")
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(8, 24))
	tgt := checkTarget(d, s)
	Ts := []int{1, 2, 5, 8, 16}
	fmt.Fprintf(w, "\nFP8 products on llama-8b shapes, 128x128 block scales (device read bandwidth %.0f GB/s; weights rotated over copies >= 256 MB)\n", readGBps)
	fmt.Fprintf(w, "%-25s %8s %9s %7s %6s %9s %6s %9s %6s %9s %6s %9s %6s\n", "matrix", "MB", "T=1 us", "GB/s", "%read", "T=2 us", "/T=1", "T=5 us", "/T=1", "T=8 us", "/T=1", "T=16 us", "/T=1")
	step := map[string]map[int]float64{}
	pdlStep := map[string]map[int]float64{} // the same sums of the pdl timings
	for _, p := range fp8BWPaths() {
		step[p], pdlStep[p] = map[int]float64{}, map[int]float64{}
	}
	pdlShape := map[string]map[string]map[int]float64{} // path, shape, T: the pdl timing
	var pdlRows []string                                // T=1 and 5 launched plainly (the table) and with programmatic dependent launch (sm_90)
	for _, sh := range q8bShapes[:4] {
		for _, path := range fp8BWPaths() {
			tc := path == "tc"
			if tgt.tune.F8MV, err = fp8BWKnob(path); err != nil {
				return err
			}
			pname := sh.name + " " + path
			m := &dmodel{fp8TC: map[bool]string{true: "all"}[tc]}
			seed := uint32(7)
			one, err := m.syntheticFP8(fill, s, d.SMs, "", sh.N, sh.K, &seed)
			if err != nil {
				m.free()
				return err
			}
			per := one.bytes()
			if sh.kind == 2 {
				per *= 2
			}
			mats := []dweight{one}
			for int64(len(mats))*one.bytes() < 256<<20 || (sh.kind == 2 && len(mats)%2 == 1) {
				c, err := m.syntheticFP8(fill, s, d.SMs, "", sh.N, sh.K, &seed)
				if err != nil {
					m.free()
					return err
				}
				mats = append(mats, c)
			}
			h := newDevHelper(s)
			xd := h.up(f32bytes(randn32(rng, MaxTokens*sh.K, 0, 1)))
			gd := h.up(f32bytes(randn32(rng, sh.K, 1, 0.2)))
			out := h.alloc(int64(4 * MaxTokens * sh.N))
			if h.err != nil {
				h.free()
				m.free()
				return h.err
			}
			if one.tiled != tc {
				h.free()
				m.free()
				return fmt.Errorf("%s: tiled %v, want %v", pname, one.tiled, tc)
			}
			line := fmt.Sprintf("%-25s %8.1f", pname, float64(per)/1e6)
			var t1 float64
			for _, T := range Ts {
				op := func(i int) error {
					switch sh.kind {
					case 0:
						return tgt.matvec("bw", out, sh.N, xd, 0, mats[i%len(mats)], T, 1, 0)
					case 1:
						return tgt.matvec("bw", out, sh.N, xd, 0, mats[i%len(mats)], T, 0, gd)
					}
					j := 2 * (i % (len(mats) / 2))
					return tgt.glu(out, 0, xd, mats[j], mats[j+1], T, gd)
				}
				us, err := timed(50, op)
				if err == nil && T <= 8 && d.Major >= 9 { // as a step's graph launches it (programmatic dependent launch)
					tgt.pdl = true
					var tp float64
					tp, err = timed(50, op)
					tgt.pdl = false
					pdlStep[path][T] += 32 * tp
					if pdlShape[path] == nil {
						pdlShape[path] = map[string]map[int]float64{}
					}
					if pdlShape[path][sh.name] == nil {
						pdlShape[path][sh.name] = map[int]float64{}
					}
					pdlShape[path][sh.name][T] = tp
					pdlRows = append(pdlRows, fmt.Sprintf("%-25s T=%-2d %7.1f us plain, %7.1f us pdl (%4.0f GB/s)", pname, T, us, tp, float64(per)/tp/1e3))
				}
				if err != nil {
					h.free()
					m.free()
					return err
				}
				step[path][T] += 32 * us
				if T == 1 {
					t1 = us
					gbps := float64(per) / us / 1e3
					line += fmt.Sprintf(" %9.1f %7.0f %5.0f%%", us, gbps, 100*gbps/readGBps)
				} else {
					line += fmt.Sprintf(" %9.1f %6.2f", us, us/t1)
				}
			}
			fmt.Fprintln(w, line)
			h.free()
			m.free()
		}
	}
	fmt.Fprintf(w, "launched one after another plainly (the table) and with programmatic dependent launch (a step's graph: weights loaded before pdl_wait)\n%s\n", strings.Join(pdlRows, "\n"))
	layerBytes := int64(32) * (6144*4096 + 4096*4096 + 2*14336*4096 + 4096*14336)
	tgt.tune.F8MV = f8mvKnob{}
	for _, path := range fp8BWPaths() {
		st, sp := step[path], pdlStep[path]
		name := path
		fmt.Fprintf(w, "32 FP8 layers' products, %s: T=1 %.0f us (%.0f%% of the %.0f us bound at %.0f GB/s), T=5 %.0f us (%.2fx), T=16 %.0f us\n",
			name, st[1], 100*float64(layerBytes)/readGBps/1e3/st[1], float64(layerBytes)/readGBps/1e3, readGBps, st[5], st[5]/st[1], st[16])
		if sp[1] > 0 {
			fmt.Fprintf(w, "32 FP8 layers' products, %s, pdl: T=1 %.0f us (%.0f%% of the bound), T=5 %.0f us (%.2fx), T=2 %.0f us, T=8 %.0f us\n",
				name, sp[1], 100*float64(layerBytes)/readGBps/1e3/sp[1], sp[5], sp[5]/sp[1], sp[2], sp[8])
		}
		// Where the tc path ran too: this path with gate_up on the tensor
		// cores (RIGSCOPE_CUDA_F8TC=gate_up), from the same pdl timings.
		if tcs, ok := pdlShape["tc"]; ok && path != "tc" && pdlShape[path] != nil {
			var c [6]float64
			for name, ts := range pdlShape[path] {
				if strings.HasPrefix(name, "gate_up") {
					ts = tcs[name]
				}
				c[1] += 32 * ts[1]
				c[5] += 32 * ts[5]
			}
			fmt.Fprintf(w, "32 FP8 layers' products, %s with gate_up on tc, pdl: T=1 %.0f us (%.0f%% of the bound), T=5 %.0f us (%.2fx)\n",
				name, c[1], 100*float64(layerBytes)/readGBps/1e3/c[1], c[5], c[5]/c[1])
		}
	}
	return nil
}

// Tolerances of the FP8 files on the GPU against the CPU engine: both
// compute in float32 on the same exact weights (e4m3 times scale, one
// rounding), in different orders, so the first logits agree to float32
// sums' rounding and greedy paths may part only at a near-tie.
const (
	tolFP8Logits   = 1e-4
	minFP8GreedyOf = 1 // prompts of the 12 allowed to part from the CPU
)

// checkFP8Models writes gocoder-14m-hf (in models) as FP8 in each scheme
// into a temporary folder and decodes the reference prompts greedily on
// the GPU and the CPU (checkModelStats: GPU = CPU on all but
// minFP8GreedyOf prompts, first logits within tolFP8Logits), then verify
// against decode (checkVerifyDecode, float tolerance: the activations stay
// float32).
func checkFP8Models(ctx context.Context, d *Device, models string, w io.Writer) error {
	ref, err := readRef(models)
	if err != nil {
		return err
	}
	src := filepath.Join(models, "gocoder-14m-hf")
	if _, err := os.Stat(src); err != nil {
		fmt.Fprintf(w, "fp8 models skipped: %v\n", err)
		return nil
	}
	tmp, err := os.MkdirTemp("", "rigscope-fp8-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(w, "\nFP8 gocoder-14m (quant.WriteFP8 of gocoder-14m-hf) on the GPU vs the CPU engine\n%-28s %8s %10s %14s %14s\n", "model", "prompts", "greedy=ref", "greedy=cpu", "max rel logit")
	var errs []error
	var paths []string
	for _, sc := range quant.FP8Schemes {
		path := filepath.Join(tmp, "gocoder-14m-fp8-"+sc.Name)
		if err := quant.WriteFP8(src, path, sc.Scheme); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		paths = append(paths, path)
		match, rel, err := checkModelStats(ctx, d, path, false, ref, w)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sc.Name, err))
			continue
		}
		if match < len(ref.Prompts)-minFP8GreedyOf || !(rel <= tolFP8Logits) {
			errs = append(errs, fmt.Errorf("%s: GPU greedy = CPU on %d of %d prompts (want at least %d), first logits within %.2e relative (tol %.0e)",
				sc.Name, match, len(ref.Prompts), len(ref.Prompts)-minFP8GreedyOf, rel, tolFP8Logits))
		}
	}
	fmt.Fprintf(w, "\nFP8 verify(15) vs 15 decode steps\n")
	for _, path := range paths {
		if err := checkVerifyDecode(ctx, d, path, ref, w); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(path), err))
		}
	}
	return errors.Join(errs...)
}
