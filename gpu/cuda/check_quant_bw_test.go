//go:build cuda

package cuda

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"gorgonia.org/cu"

	"rigscope/engine/quant"
	"rigscope/engine/tensor"
)

// llama-8b's products (one layer, and the output projection).
type q8bShape struct {
	name string
	N, K int
	kind int // 0: + residual (mode 1), 1: fused norm, 2: GLU (gate and up)
	base int // bwTallShapes: the rows of the layer matrix stacked (its K split is kept); 0: none
}

var q8bShapes = []q8bShape{
	{"qkv 6144x4096 +norm", 6144, 4096, 1, 0},
	{"wo 4096x4096 +add", 4096, 4096, 0, 0},
	{"gate_up 2x14336x4096", 14336, 4096, 2, 0},
	{"down 4096x14336 +add", 4096, 14336, 0, 0},
	{"output 128256x4096", 128256, 4096, 1, 0},
}

// checkQuantBandwidth times each type's products on llama-8b's shapes for
// 1, 5 and 16 tokens as a step runs them (x quantized by the kernel
// before, no qx; wo, gate/up and down quantize their outputs), as weight
// bytes per second against the device's read bandwidth, and sums them into
// the products' part of an 8B decode step (32 layers and the output; the
// attention, embedding and argmax are not in it), also for a Q4_K_M file's
// mix of Q4_K and Q6_K as llama-quantize lays it out.
func checkQuantBandwidth(d *Device, w io.Writer) error {
	if *checkBWTall >= 2 && *checkBWSweep {
		return errors.New("cuda check: -bwtall needs -bwsweep=false (the K split sweep would change the tall rows' kernel)")
	}
	_, readGBps, err := Bandwidth(d, 1<<30)
	if err != nil {
		return err
	}
	s, timed, done, err := d.timedStream()
	if err != nil {
		return err
	}
	defer done()
	rng := rand.New(rand.NewPCG(8, 23))
	tgt := checkTarget(d, s)
	if tune, err := CurrentTuning(); err == nil {
		tgt.tune.MQV, tgt.tune.MQW, tgt.tune.MQN2 = tune.MQV, tune.MQW, tune.MQN2
	}
	mqvSets, err := bwMQVSets()
	if err != nil {
		return err
	}
	var mqvRows []string // T=1 under each -bwmqv setting
	Ts := []int{1, 5, 16}
	us := map[string]float64{} // type/shape/T[/ksK] -> us per call
	var sweeps []string        // the same at every K split, T 1 and 5
	var fuseCost []string      // the producers with and without their output quantization
	var pdlRows []string       // T=1 and 5 launched plainly and with programmatic dependent launch
	fmt.Fprintf(w, "\nquantized products on llama-8b shapes (device read bandwidth %.0f GB/s; weights rotated over copies >= 256 MB, so not from L2; x quantized by the kernel before, as in a step, no qx; wo, gate_up, down quantize their outputs; RIGSCOPE_CUDA_MQV %s, MQW %s, MQN2 %v)\n", readGBps, tgt.tune.MQV, tgt.tune.MQW, tgt.tune.MQN2)
	fmt.Fprintf(w, "%-6s %-22s %8s %9s %7s %6s %9s %6s %9s %6s\n", "type", "matrix", "MB", "T=1 us", "GB/s", "%read", "T=5 us", "/T=1", "T=16 us", "/T=1")
	run := func(dt tensor.DType, sh q8bShape, mats []dweight, label string) error {
		h := newDevHelper(s)
		defer h.free()
		xd := h.up(f32bytes(randn32(rng, MaxTokens*sh.K, 0, 1)))
		gd := h.up(f32bytes(randn32(rng, sh.K, 1, 0.2)))
		out := h.alloc(int64(4 * MaxTokens * sh.N))
		if h.err != nil {
			return h.err
		}
		per := mats[0].bytes()
		if sh.kind == 2 {
			per *= 2
		}
		line := fmt.Sprintf("%-6s %-22s %8.1f", label, sh.name, float64(per)/1e6)
		var t1 float64
		for _, T := range Ts {
			// As in a step: x arrives quantized by the kernel before (qin:
			// the attention for wo, the product before for the rest), and
			// wo, gate/up and down quantize their outputs for the next one.
			var norm cu.DevicePtr
			if sh.kind > 0 {
				norm = gd
			}
			if _, _, _, err := tgt.quantizeX(xd, mats[0], T, norm); err != nil {
				return err
			}
			xr := qready{x: xd, g: norm, T: T, cols: sh.K, buf: mats[0].qs.buf[0]}
			nofuse := false // set: without the output quantization, for its cost
			op := func(i int) error {
				tgt.qin = xr
				if sh.kind != 1 && !nofuse {
					tgt.qfuse = &qfuseReq{g: norm}
				}
				switch sh.kind {
				case 0:
					return tgt.matvec("bw", out, sh.N, xd, 0, mats[i%len(mats)], T, 1, 0)
				case 1:
					return tgt.matvec("bw", out, sh.N, xd, 0, mats[i%len(mats)], T, 0, gd)
				}
				j := 2 * (i % (len(mats) / 2))
				return tgt.glu(out, 0, xd, mats[j], mats[j+1], T, gd)
			}
			if sh.kind != 1 { // the products that quantize their output must have
				if err := op(0); err != nil {
					return err
				}
				if tgt.qin.buf == 0 {
					return fmt.Errorf("%v %s T=%d: the product did not quantize its output", dt, sh.name, T)
				}
			}
			t, err := timed(max(20, 2*len(mats)), op)
			if err != nil {
				return fmt.Errorf("%v %s T=%d: %w", dt, sh.name, T, err)
			}
			us[fmt.Sprintf("%s/%s/%d", label, sh.name, T)] = t
			if T <= 5 && *checkBWSweep && tgt.tune.MQM == 0 { // the K split sweep (mqSplit's choice is the line above)
				sweep := fmt.Sprintf("%-6s %-22s T=%-2d policy ks=%d:", label, sh.name, T, tgt.mqSplit(sh.N, dt))
				for _, ks := range []int{1, 2, 4} {
					tgt.mqks = ks
					tk, err := timed(max(20, 2*len(mats)), op)
					tgt.mqks = 0
					if err != nil {
						return fmt.Errorf("%v %s T=%d ks=%d: %w", dt, sh.name, T, ks, err)
					}
					us[fmt.Sprintf("%s/%s/%d/ks%d", label, sh.name, T, ks)] = tk
					sweep += fmt.Sprintf("  ks=%d %8.1f us", ks, tk)
				}
				sweeps = append(sweeps, sweep)
			}
			if sh.kind != 1 { // what the fused output quantization costs
				nofuse = true
				tn, err := timed(max(20, 2*len(mats)), op)
				nofuse = false
				if err != nil {
					return err
				}
				fuseCost = append(fuseCost, fmt.Sprintf("%-6s %-22s T=%-2d %6.1f us fused, %6.1f us without", label, sh.name, T, t, tn))
			}
			if T <= 5 && tgt.dev.Major >= 9 { // the same launched with programmatic dependent launch, as a step's graph runs it
				tgt.pdl = true
				tp, err := timed(max(20, 2*len(mats)), op)
				tgt.pdl = false
				if err != nil {
					return fmt.Errorf("%v %s T=%d pdl: %w", dt, sh.name, T, err)
				}
				us[fmt.Sprintf("%s/%s/%d/pdl", label, sh.name, T)] = tp
				pdlRows = append(pdlRows, fmt.Sprintf("%-6s %-22s T=%-2d %7.1f us plain, %7.1f us pdl (%4.0f GB/s)", label, sh.name, T, t, tp, float64(per)/(tp*1e3)))
			}
			if T == 1 && len(mqvSets) > 0 {
				if mqvRows, err = bwMQV(tgt, mats, sh, label, mqvSets, us, timed, op, mqvRows); err != nil {
					return fmt.Errorf("%v %s: %w", dt, sh.name, err)
				}
			}
			if T == 1 {
				t1 = t
				gbps := float64(per) / (t * 1e3)
				line += fmt.Sprintf(" %9.1f %7.0f %5.0f%%", t, gbps, 100*gbps/readGBps)
			} else {
				line += fmt.Sprintf(" %9.1f %6.2f", t, t/t1)
			}
		}
		fmt.Fprintln(w, line)
		return nil
	}
	// upload puts n copies of the (N, K) matrices made by mk on the device.
	upload := func(m *dmodel, mk func() []*tensor.Tensor, minCopies int) ([]dweight, error) {
		ts := mk()
		var mats []dweight
		one, err := m.uploadLayerMatrix("", ts...)
		if err != nil {
			return nil, err
		}
		copies := max(minCopies, min(16, int((256<<20)/max(one.bytes(), 1))+1))
		mats = append(mats, one)
		for len(mats) < copies {
			c, err := m.uploadLayerMatrix("", ts...)
			if err != nil {
				return nil, err
			}
			mats = append(mats, c)
		}
		return mats, nil
	}
	var errs []error
	for _, dt := range quantTypes {
		if !bwType(dt) {
			continue
		}
		for _, sh := range append(q8bShapes, bwTallShapes()...) {
			if sh.base > 0 { // a tall row: the K split (so the kernel) of the shape it stacks
				tgt.mqks = tgt.mqSplit(sh.base, dt)
			}
			m := &dmodel{}
			if _, err := m.scratch(max(sh.N, sh.K)); err != nil { // as a model's: its widest product's (gate_up quantizes 14336)
				return err
			}
			data := randBlocks(rng, dt, sh.N, sh.K)
			mk := func() []*tensor.Tensor {
				return []*tensor.Tensor{{Name: sh.name, DType: dt, Shape: []int{sh.N, sh.K}, Data: data}}
			}
			minCopies := 1
			if sh.kind == 2 {
				minCopies = 2
			}
			mats, err := upload(m, mk, minCopies)
			if err == nil {
				if sh.kind == 2 && len(mats)%2 == 1 {
					mats = mats[:len(mats)-1]
				}
				err = run(dt, sh, mats, dt.String())
			}
			tgt.mqks = 0
			m.free()
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	// A Q4_K_M layer's qkv whose attn_v is Q6_K: Q4_K q, k and Q6_K v.
	if bwType(tensor.Q4_K) && bwType(tensor.Q6_K) {
		m := &dmodel{}
		qk, v := randBlocks(rng, tensor.Q4_K, 5120, 4096), randBlocks(rng, tensor.Q6_K, 1024, 4096)
		mk := func() []*tensor.Tensor {
			return []*tensor.Tensor{{Name: "wqk", DType: tensor.Q4_K, Shape: []int{5120, 4096}, Data: qk},
				{Name: "wv", DType: tensor.Q6_K, Shape: []int{1024, 4096}, Data: v}}
		}
		mats, err := upload(m, mk, 1)
		if err == nil {
			err = run(tensor.Q4_K, q8bShapes[0], mats, "Q4_K+6")
		}
		if err == nil && *checkBWMMA { // its Q4_K part on the tensor cores
			tgt.tune.MQM = *checkBWMMAW
			err = run(tensor.Q4_K, q8bShapes[0], mats, "Q4_K+6m")
			tgt.tune.MQM = 0
		}
		m.free()
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Q4_K on the int8 tensor cores (quant_mma.cu, RIGSCOPE_CUDA_MQM), label Q4_Km.
	if bwType(tensor.Q4_K) && *checkBWMMA {
		for _, sh := range q8bShapes[:4] {
			m := &dmodel{}
			if _, err := m.scratch(max(sh.N, sh.K)); err != nil {
				return err
			}
			data := randBlocks(rng, tensor.Q4_K, sh.N, sh.K)
			mk := func() []*tensor.Tensor {
				return []*tensor.Tensor{{Name: sh.name, DType: tensor.Q4_K, Shape: []int{sh.N, sh.K}, Data: data}}
			}
			mats, err := upload(m, mk, 2)
			if err == nil {
				if sh.kind == 2 && len(mats)%2 == 1 {
					mats = mats[:len(mats)-1]
				}
				tgt.tune.MQM = *checkBWMMAW
				err = run(tensor.Q4_K, sh, mats, "Q4_Km")
				tgt.tune.MQM = 0
			}
			m.free()
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	fmt.Fprintf(w, "\nlaunched one after another plainly and with programmatic dependent launch (a step's graph: weights loaded before pdl_wait)\n%s\n", strings.Join(pdlRows, "\n"))
	fmt.Fprintf(w, "\nfused output quantization's cost (mq_quant_out)\n%s\n", strings.Join(fuseCost, "\n"))
	fmt.Fprintf(w, "\nK split sweep (ks warps share a row group's units: quant_layout.go mqSplit picks per shape; times as above)\n")
	for _, l := range sweeps {
		fmt.Fprintln(w, l)
	}
	// qx alone, for its share.
	for _, K := range []int{4096, 14336} {
		h := newDevHelper(s)
		m := &dmodel{}
		qs, err := m.scratch(K)
		xd := h.up(f32bytes(randn32(rng, MaxTokens*K, 0, 1)))
		if err == nil && h.err != nil {
			err = h.err
		}
		line := fmt.Sprintf("%-6s qx K=%-16d", "", K)
		for _, T := range Ts {
			if err != nil {
				break
			}
			var t float64
			t, err = timed(50, func(int) error {
				_, _, _, e := tgt.quantizeX(xd, dweight{dt: tensor.Q8_0, rows: 1, cols: K, qs: qs}, T, 0)
				return e
			})
			line += fmt.Sprintf("  T=%d %5.1f us", T, t)
			us[fmt.Sprintf("qx/%d/%d", K, T)] = t
		}
		fmt.Fprintln(w, line)
		m.free()
		h.free()
		if err != nil {
			errs = append(errs, err)
		}
	}
	// The products' part of an 8B step, per file type.
	// at is a product's time at T: with mqSplit's K split, or (best) with
	// the split fastest at T=1.
	missing := 0 // products a file needs that -bwtypes left out
	// at is a product's time at T as the table has it (v ""), launched
	// with programmatic dependent launch (v "pdl", T <= 5), or with the K
	// split fastest at T=1 (v "best").
	at := func(typ, shape string, T int, v string) float64 {
		key := fmt.Sprintf("%s/%s/%d", typ, shape, T)
		switch {
		case v == "pdl":
			key += "/pdl"
		case strings.HasPrefix(v, "mqv"):
			key += "/" + v
		case v == "best" && *checkBWSweep:
			bk := 1
			for _, ks := range []int{2, 4} {
				if us[fmt.Sprintf("%s/%s/1/ks%d", typ, shape, ks)] < us[fmt.Sprintf("%s/%s/1/ks%d", typ, shape, bk)] {
					bk = ks
				}
			}
			key += fmt.Sprintf("/ks%d", bk)
		}
		t, ok := us[key]
		if !ok && v == "best" { // no sweep for it (the tensor-core products have no K split)
			t, ok = us[fmt.Sprintf("%s/%s/%d", typ, shape, T)]
		}
		if !ok {
			missing++
		}
		return t
	}
	step := func(T int, typeOf func(part string, l int) string, v string) float64 {
		var sum float64
		for l := 0; l < 32; l++ {
			for _, sh := range q8bShapes[:4] {
				sum += at(typeOf(sh.name, l), sh.name, T, v)
			}
		}
		// and the one qx left: the first layer's qkv
		return sum + at(typeOf(q8bShapes[4].name, 0), q8bShapes[4].name, T, v) + us[fmt.Sprintf("qx/4096/%d", T)]
	}
	fmt.Fprintf(w, "\nllama-8b decode step, quantized products and the first layer's qx only (sum of the timed kernels, one launch after another, no graph; pdl: launched with programmatic dependent launch; best: each shape at its fastest K split at T=1)\n%-10s %9s %11s %9s %10s %9s %9s %10s %9s %9s\n",
		"file", "T=1 us", "tok/s bound", "T=5 us", "verify/dec", "pdl T=1", "pdl T=5", "verify/dec", "best T=1", "best T=5")
	files := []struct {
		name   string
		typeOf func(part string, l int) string
	}{
		{"Q8_0", func(string, int) string { return "Q8_0" }},
		{"Q4_0", func(p string, _ int) string {
			if p == q8bShapes[4].name {
				return "Q6_K"
			}
			return "Q4_0"
		}},
		{"Q4_K_M", func(p string, l int) string {
			switch p {
			case q8bShapes[0].name:
				if quant.Q4KM.TensorType(fmt.Sprintf("blk.%d.attn_v.weight", l), []int{1024, 4096}, 32, false) == tensor.Q6_K {
					return "Q4_K+6"
				}
			case q8bShapes[3].name:
				return quant.Q4KM.TensorType(fmt.Sprintf("blk.%d.ffn_down.weight", l), []int{4096, 14336}, 32, false).String()
			case q8bShapes[4].name:
				return "Q6_K"
			}
			return "Q4_K"
		}},
		{"Q4_K_M mma", func(p string, l int) string { // its Q4_K products on the tensor cores
			switch p {
			case q8bShapes[0].name:
				if quant.Q4KM.TensorType(fmt.Sprintf("blk.%d.attn_v.weight", l), []int{1024, 4096}, 32, false) == tensor.Q6_K {
					return "Q4_K+6m"
				}
			case q8bShapes[3].name:
				if t := quant.Q4KM.TensorType(fmt.Sprintf("blk.%d.ffn_down.weight", l), []int{4096, 14336}, 32, false); t != tensor.Q4_K {
					return t.String()
				}
			case q8bShapes[4].name:
				return "Q6_K"
			}
			return "Q4_Km"
		}},
		{"Q6_K", func(string, int) string { return "Q6_K" }},
		{"Q5_K", func(string, int) string { return "Q5_K" }},
	}
	for _, f := range files {
		missing = 0
		a, b := step(1, f.typeOf, ""), step(5, f.typeOf, "")
		if missing > 0 {
			continue
		}
		pa, pb := step(1, f.typeOf, "pdl"), step(5, f.typeOf, "pdl")
		ba, bb := step(1, f.typeOf, "best"), step(5, f.typeOf, "best")
		fmt.Fprintf(w, "%-10s %9.0f %11.0f %9.0f %10.2f %9.0f %9.0f %10.2f %9.0f %9.0f\n", f.name, a, 1e6/a, b, b/a, pa, pb, pb/pa, ba, bb)
	}
	if len(mqvSets) > 0 {
		fmt.Fprintf(w, "\none-token variants (-bwmqv: each setting's T=1 product against base, rounds alternating base and the settings that change it; type shape | setting | us plain r1 r2 | pdl r1 r2 | kernel/blocks/K split)\n%s\n", strings.Join(mqvRows, "\n"))
		fmt.Fprintf(w, "\nllama-8b decode step at T=1 under each -bwmqv setting (the products above, means of the two rounds; settings that change nothing of a file left out)\n")
		for _, f := range files {
			missing = 0
			a, pa := step(1, f.typeOf, "mqv0"), step(1, f.typeOf, "mqv0pdl")
			if missing > 0 {
				continue
			}
			fmt.Fprintf(w, "%-10s %-28s T=1 %7.0f us plain %7.0f us pdl\n", f.name, "base="+tgt.tune.MQV.String(), a, pa)
			for i, k := range mqvSets {
				b, pb := step(1, f.typeOf, fmt.Sprintf("mqv%d", i+1)), step(1, f.typeOf, fmt.Sprintf("mqv%dpdl", i+1))
				if missing == 0 && (b != a || pb != pa) {
					fmt.Fprintf(w, "%-10s %-28s T=1 %7.0f us plain %7.0f us pdl (%+.1f%% / %+.1f%%)\n", f.name, k.String(), b, pb, 100*(b/a-1), 100*(pb/pa-1))
				}
			}
		}
	}
	return errors.Join(errs...)
}

var (
	checkBWTypes = flag.String("bwtypes", "", "the quantized types of the quant bandwidth table (comma-separated, e.g. Q4_K,Q6_K; empty: all)")
	checkBWSweep = flag.Bool("bwsweep", true, "the quant bandwidth table's K split sweep")
	checkBWMMA   = flag.Bool("bwmma", true, "the quant bandwidth table's Q4_K rows on the int8 tensor cores (Q4_Km)")
	checkBWMMAW  = flag.Int("bwmmawarps", 16, "the warps a block of the Q4_Km rows' kernels (4, 8 or 16)")
	checkBWTall  = flag.Int("bwtall", 0, "also time the layer products with this many times their rows (>= 2; with -bwsweep=false), each with its own shape's kernel")
)

// bwTallShapes are the layer shapes with -bwtall times their rows, each
// launched as its own shape is (the same K split, so the same kernel):
// against the plain rows they part a product's time into what grows with
// its bytes and what a launch pays once (ramp, tail, the output's
// quantization). checkQuantBandwidth refuses them beside the K split
// sweep, which resets the split.
func bwTallShapes() []q8bShape {
	f := *checkBWTall
	if f < 2 {
		return nil
	}
	var out []q8bShape
	for _, sh := range q8bShapes[:4] {
		t := sh
		t.name, t.N, t.base = fmt.Sprintf("%s x%d", strings.Fields(sh.name)[0], f), f*sh.N, sh.N
		out = append(out, t)
	}
	return out
}

// bwType reports whether -bwtypes names dt (or is empty).
func bwType(dt tensor.DType) bool {
	if *checkBWTypes == "" {
		return true
	}
	for _, s := range strings.Split(*checkBWTypes, ",") {
		if strings.TrimSpace(s) == dt.String() {
			return true
		}
	}
	return false
}

// timedStream is checkStream with streamTimer on its stream: done
// releases both.
func (d *Device) timedStream() (s cu.Stream, timed func(n int, op func(i int) error) (float64, error), done func(), err error) {
	s, release, err := d.checkStream()
	if err != nil {
		return s, nil, func() {}, err
	}
	timed, closeTimer, err := streamTimer(s)
	if err != nil {
		release()
		return s, nil, func() {}, err
	}
	return s, timed, func() { closeTimer(); release() }, nil
}

// streamTimer returns timed, the mean device time (us, between two events
// on s) of n calls of op after 3 untimed ones, and release, which destroys
// the events.
func streamTimer(s cu.Stream) (timed func(n int, op func(i int) error) (float64, error), release func(), err error) {
	e0, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, nil, fmt.Errorf("cuda check: event: %w", err)
	}
	e1, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		cu.DestroyEvent(&e0)
		return nil, nil, fmt.Errorf("cuda check: event: %w", err)
	}
	release = func() { cu.DestroyEvent(&e0); cu.DestroyEvent(&e1) }
	timed = func(n int, op func(i int) error) (float64, error) {
		for i := 0; i < 3; i++ {
			if err := op(i); err != nil {
				return 0, err
			}
		}
		if err := e0.Record(s); err != nil {
			return 0, err
		}
		for i := 0; i < n; i++ {
			if err := op(i); err != nil {
				return 0, err
			}
		}
		if err := e1.Record(s); err != nil {
			return 0, err
		}
		if err := e1.Synchronize(); err != nil {
			return 0, fmt.Errorf("cuda check: %w", err)
		}
		ms, err := e0.Elapsed(e1)
		return float64(ms) * 1000 / float64(n), err
	}
	return timed, release, nil
}
