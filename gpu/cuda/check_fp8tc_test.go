//go:build cuda

package cuda

import (
	"flag"
	"fmt"
	"math"
	"strings"

	"gorgonia.org/cu"
)

// fp8Path is one way the FP8 checks run the products: row-major on the
// CUDA cores (mv_f8), or tiled on the tensor cores (f8tc*: Tuning.F8TC,
// fp8.cu and tc.cu) with the dispatch's block size and row tiles, or
// forced ones (warps, tiles: 0 for the dispatch's), or row-major on mf8*
// (fp8_mv.cu: mf, Tuning.F8MV as RIGSCOPE_CUDA_F8MV spells it; a name
// ending gN: the persistent grid forced to N blocks, so that blocks
// stride over the row blocks).
type fp8Path struct {
	name         string
	tc           bool
	warps, tiles int
	mf           string
}

var checkFP8BW = flag.String("fp8bw", "mv,mf,tc", "the paths of the fp8 bandwidth table (comma-separated: mv, tc, mf with RIGSCOPE_CUDA_F8MV's setting (1 where unset), mf=SPEC with F8MV SPEC, + for its commas)")

// fp8BWPaths are the bandwidth table's paths (-fp8bw): mv (mv_f8), tc (the
// tensor cores), mf or mf=SPEC (mf8*: fp8BWKnob).
func fp8BWPaths() []string {
	var out []string
	for _, p := range strings.Split(*checkFP8BW, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// fp8BWKnob is Tuning.F8MV for a bandwidth table path: off but for mf
// (the process's F8MV, on with the defaults where unset) and mf=SPEC.
func fp8BWKnob(path string) (f8mvKnob, error) {
	switch {
	case path == "mf":
		if cur, err := CurrentTuning(); err == nil && cur.F8MV.on {
			return cur.F8MV, nil
		}
		return f8mvKnob{on: true}, nil
	case strings.HasPrefix(path, "mf="):
		return parseF8MV(strings.ReplaceAll(path[3:], "+", ","))
	case path == "mv" || path == "tc":
		return f8mvKnob{}, nil
	}
	return f8mvKnob{}, fmt.Errorf("-fp8bw: unknown path %q (mv, tc, mf, mf=SPEC)", path)
}

var fp8Paths = []fp8Path{{"mv", false, 0, 0, ""}, {"mf", false, 0, 0, "1"}, {"mf r2", false, 0, 0, "r2"}, {"mf t", false, 0, 0, "t"},
	{"mf p", false, 0, 0, "p"}, {"mf r2p g7", false, 0, 0, "r2,p"}, {"mf p ks1 g3", false, 0, 0, "p,ks1"}, {"mf b", false, 0, 0, "b"}, {"mf l", false, 0, 0, "l"}, {"mf ks1", false, 0, 0, "ks1"}, {"mf ks2", false, 0, 0, "ks2"}, {"mf ks4", false, 0, 0, "ks4"},
	{"mf s", false, 0, 0, "s"}, {"mf sw", false, 0, 0, "sw"}, {"mf s w4", false, 0, 0, "s,w4"}, {"mf sw w4", false, 0, 0, "sw,w4"}, {"mf s w16", false, 0, 0, "s,w16"}, {"mf s ks1", false, 0, 0, "s,ks1"}, {"mf sw ks2", false, 0, 0, "sw,ks2"},
	{"tc", true, 0, 0, ""}, {"tc w16", true, 16, 0, ""}, {"tc w16 r2", true, 16, 2, ""}, {"tc w16 r4", true, 16, 4, ""}}

// checkFP8Split checks the tensor-core FP8 products' other inputs and
// outputs against outs (their outputs by T, as the dispatch runs them):
// with x split ahead by xsplit (f8tcf*, as wo and down read the
// attention's and the GLU's split outputs) the plain products are bitwise
// the same, and the GLU's split output (down's input) is bitwise xsplit's
// of its output. "-" for the norm product (no split input or output).
func checkFP8Split(d *Device, h *devHelper, tgt *Target, mode int, base []float32, xd cu.DevicePtr, Wd, W2d dweight, norm cu.DevicePtr, N, K int, outs map[int][]float32) (string, error) {
	if mode == 3 {
		return "-", nil
	}
	fn, err := d.fn("xsplit")
	if err != nil {
		return "", err
	}
	split := func(x cu.DevicePtr, T, K int) cu.DevicePtr {
		xf := h.up(make([]byte, xfBytes(K)))
		if h.err == nil {
			if e := launch(fn, [3]int{64, 1, 1}, [3]int{256, 1, 1}, 0, h.s, ptr(xf), ptr(x), i32(T), i32(K)); e != nil {
				h.err = e
			}
		}
		return xf
	}
	for T := 1; T <= MaxTokens; T++ {
		var out, xfo cu.DevicePtr
		if mode == 1 {
			out = h.up(f32bytes(base[:T*N]))
		} else {
			out = h.poison(T * N)
		}
		if mode == 2 || mode == 4 {
			xfo = h.up(make([]byte, xfBytes(N)))
			if h.err != nil {
				return "", h.err
			}
			tgt.gelu = mode == 4
			err = tgt.glu(out, xfo, xd, Wd, W2d, T, norm)
			tgt.gelu = false
		} else {
			xf := split(xd, T, K)
			if h.err != nil {
				return "", h.err
			}
			err = tgt.matvec("check", out, N, xd, xf, Wd, T, mode, 0)
		}
		if err != nil {
			return "", err
		}
		got, err := h.down(out, T*N)
		if err != nil {
			return "", err
		}
		for i, v := range got {
			if math.Float32bits(v) != math.Float32bits(outs[T][i]) {
				return fmt.Sprintf("T=%d output %d: %g with the split (ahead or out), %g without", T, i, v, outs[T][i]), nil
			}
		}
		if xfo == 0 {
			continue
		}
		want := split(h.up(f32bytes(got)), T, N)
		n := int(xfBytes(N) / 4)
		a, err := h.down(xfo, n)
		if err != nil {
			return "", err
		}
		b, err := h.down(want, n)
		if err != nil {
			return "", err
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return fmt.Sprintf("T=%d: the GLU's split output differs from xsplit's at word %d", T, i), nil
			}
		}
	}
	return "ok", nil
}
