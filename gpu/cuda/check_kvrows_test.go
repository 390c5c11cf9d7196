//go:build cuda

package cuda

import (
	"context"
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

// The attention kernel's step rows (-checks kv): T tokens in one launch
// (a verify chain) against the same T tokens in T launches of one token
// (decode steps), from the same qkv rows on the same cache, for each
// cache format. Every new slot is stored by the same arithmetic in both
// runs, so the caches after them must be equal to the bit; each output row
// is the same attention over the same stored values, summed in another
// order (the splits depend on the cached length, the new slots are one
// chunk of their own in a verify), so it must agree to float32's
// reassociation: kvRowsTol. A kernel that attended to a fresh slot before
// rounding it (or to another slot than it stored) differs by the bf16
// rounding, about 1e-3.
const kvRowsTol = 1e-5

// kvRowCase is one shape of the check: heads, head dim, cached slots
// before the step, tokens, splits.
type kvRowCase struct{ hq, hk, hd, base, T, S int }

var kvRowCases = []kvRowCase{
	{hq: 32, hk: 8, hd: 128, base: 1000, T: 8, S: 32}, // llama-8b's attention at TP 1
	{hq: 4, hk: 2, hd: 64, base: 60, T: 8, S: 3},
	{hq: 8, hk: 4, hd: 64, base: 300, T: 16, S: 7},
	{hq: 8, hk: 8, hd: 256, base: 77, T: 5, S: 4},
	{hq: 4, hk: 2, hd: 16, base: 33, T: 7, S: 2},
}

// checkKVRows runs kvRowCases for every cache format and prints the
// largest row difference (max |a-b| / max |b| per row).
func checkKVRows(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	rng := rand.New(rand.NewPCG(19, 2))
	fmt.Fprintf(w, "\nattention: T tokens in one launch vs T launches of one token, same qkv and cache; caches after both bitwise, output rows max|a-b|/max|b| (tolerance %.0e)\n", kvRowsTol)
	fmt.Fprintf(w, "%-30s %8s %10s %s\n", "case", "cache", "row rel", "")
	var fails []error
	for _, kvf := range kvFormats {
		for _, tc := range kvRowCases {
			rel, sameCache, err := kvRowsRun(s, d, rng, tc, kvf)
			if err != nil {
				return err
			}
			st := "ok"
			if rel > kvRowsTol || !sameCache {
				st = "FAIL"
				fails = append(fails, fmt.Errorf("cuda check kv rows %s %v: row rel %.2e, caches equal %v", kvf, tc, rel, sameCache))
			}
			cache := "bitwise"
			if !sameCache {
				cache = "differ"
			}
			fmt.Fprintf(w, "%-30s %8s %10.2e %s\n", fmt.Sprintf("%s %d/%d hd=%d base=%d T=%d S=%d", kvf, tc.hq, tc.hk, tc.hd, tc.base, tc.T, tc.S), cache, rel, st)
		}
	}
	if len(fails) > 0 {
		return fails[0]
	}
	return nil
}

// kvRowsRun is one case of checkKVRows: the largest row rel and whether
// the caches agree to the bit.
func kvRowsRun(s cu.Stream, d *Device, rng *rand.Rand, tc kvRowCase, kvf kvFormat) (float64, bool, error) {
	h := newDevHelper(s)
	defer h.free()
	slots := tc.base + tc.T
	width := tc.hk * tc.hd
	ld := (tc.hq + 2*tc.hk) * tc.hd
	qkv := randn32(rng, tc.T*ld, 0, 1)
	Kc, Vc := randn32(rng, slots*width, 0, 1), randn32(rng, slots*width, 0, 1)
	kb, vb := kvCacheBytesOf(Kc, kvf), kvCacheBytesOf(Vc, kvf)
	cs, sn := cpu.NewRopeTable(tc.hd, slots+8, 10000).Tables(slots + 8)
	cfg := model.Config{Heads: tc.hq, KVHeads: tc.hk, HeadDim: tc.hd}
	rowsAll := tc.hq * MaxTokens * tc.S
	qd, csd, snd := h.up(f32bytes(qkv)), h.up(f32bytes(cs)), h.up(f32bytes(sn))
	pm, pl, pacc := h.poison(rowsAll), h.poison(rowsAll), h.poison(rowsAll*tc.hd)
	cnt := h.up(make([]byte, 4*tc.hk*attnRowGroups(cfg)))
	width4 := tc.hq * tc.hd
	outV, outD := h.poison(tc.T*width4), h.poison(tc.T*width4)
	kV, vV, kD, vD := h.up(kb), h.up(vb), h.up(kb), h.up(vb)
	// steps: the verify (chain mask), then one per decode step
	var steps []cu.DevicePtr
	verify := stepParams{Base: int32(tc.base), T: int32(tc.T)}
	for i := range tc.T {
		verify.Pos[i], verify.Mask[i] = int32(tc.base+i), uint32(1)<<(i+1)-1
	}
	stepBytesOf := func(p *stepParams) []byte {
		return append([]byte(nil), (*[1 << 10]byte)(unsafe.Pointer(p))[:stepBytes:stepBytes]...)
	}
	steps = append(steps, h.up(stepBytesOf(&verify)))
	for i := range tc.T {
		one := stepParams{Base: int32(tc.base + i), T: 1}
		one.Pos[0], one.Mask[0] = int32(tc.base+i), 1
		steps = append(steps, h.up(stepBytesOf(&one)))
	}
	if h.err != nil {
		return 0, false, h.err
	}
	scale := float32(1 / math.Sqrt(float64(tc.hd)))
	run := func(out, kc, vc, qkv, step cu.DevicePtr, T int) error {
		name, grid := attnLaunch(cfg, tc.S, T, 8)
		fn, err := d.fn(kvf.kernel(name))
		if err != nil {
			return err
		}
		return launch(fn, grid, [3]int{128, 1, 1}, 0, s, ptr(out), ptr(pm), ptr(pl), ptr(pacc), ptr(cnt), ptr(qkv), i32(ld), ptr(kc), ptr(vc),
			ptr(step), ptr(csd), ptr(snd), i32(tc.hq), i32(tc.hk), f32(scale), i32(0), i32(32), ptr(0),
			ptr(0), ptr(0), f32(1e-6), i32(0), ptr(0))
	}
	if err := run(outV, kV, vV, qd, steps[0], tc.T); err != nil {
		return 0, false, err
	}
	for i := range tc.T {
		off := cu.DevicePtr(4 * i * ld)
		if err := run(outD+cu.DevicePtr(4*i*width4), kD, vD, qd+off, steps[1+i], 1); err != nil {
			return 0, false, err
		}
	}
	if err := s.Synchronize(); err != nil {
		return 0, false, fmt.Errorf("cuda check kv rows: %w", err)
	}
	words := slots * width * kvf.elemBytes() / 4
	same := true
	for _, p := range [][2]cu.DevicePtr{{kV, kD}, {vV, vD}} {
		a, err := h.down(p[0], words)
		if err != nil {
			return 0, false, err
		}
		b, err := h.down(p[1], words)
		if err != nil {
			return 0, false, err
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				same = false
			}
		}
	}
	ov, err := h.down(outV, tc.T*width4)
	if err != nil {
		return 0, false, err
	}
	od, err := h.down(outD, tc.T*width4)
	if err != nil {
		return 0, false, err
	}
	rel := 0.0
	for t := range tc.T {
		r := relMax(ov[t*width4:(t+1)*width4], od[t*width4:(t+1)*width4])
		if math.IsNaN(r) {
			return 0, false, fmt.Errorf("cuda check kv rows %s %v: row %d unwritten (NaN)", kvf, tc, t)
		}
		rel = math.Max(rel, r)
	}
	return rel, same, nil
}

// kvSlotDiff is how the cache slots a verify stores differ from those
// decode steps store for the same tokens (gocoder, -checks kv): the
// diagnosis of a verify row's difference from decode. Values stored by
// one path that the other's rounding would have put elsewhere are what
// make a bf16 cache's verify rows differ more than a float32 one's: such an
// element is one bf16 step (2^-8 of its binade) apart; small values may be
// many steps apart (a float32-level difference of the row is many steps of
// a value near zero), so the steps are reported, not held to one.
type kvSlotDiff struct {
	n, differ int     // elements compared, elements not equal
	differ0   int     // ... of them in layer 0 (fed by the embedding, the norm and qkv product only)
	n0        int     // elements of layer 0
	rel       float64 // max over layers and slots of max|a-b| / max|b| per slot row
	maxSteps  int     // bf16: the most bf16 steps between two values (uint16 distance)
}

func (a *kvSlotDiff) add(b kvSlotDiff) {
	a.n, a.differ, a.differ0, a.n0 = a.n+b.n, a.differ+b.differ, a.differ0+b.differ0, a.n0+b.n0
	a.rel, a.maxSteps = math.Max(a.rel, b.rel), max(a.maxSteps, b.maxSteps)
}

func (a kvSlotDiff) String() string {
	return fmt.Sprintf("slots verify vs decode: %d of %d elements differ (layer 0: %d of %d), max rel %.2e, max bf16 steps %d",
		a.differ, a.n, a.differ0, a.n0, a.rel, a.maxSteps)
}

// slotDiff decodes toks one by one after base, reads the k new slots of
// every layer, then verifies them in one step and compares.
func slotDiff(ctx context.Context, t *Target, base int, toks []int32) (kvSlotDiff, error) {
	k := min(len(toks), MaxTokens)
	if err := t.Rewind(base); err != nil {
		return kvSlotDiff{}, err
	}
	for i := range k {
		if _, err := t.ForwardIDs(ctx, model.Batch{Tokens: toks[i : i+1], Logits: model.LogitsLast}); err != nil {
			return kvSlotDiff{}, err
		}
	}
	dec, err := readSlots(t, base, k)
	if err != nil {
		return kvSlotDiff{}, err
	}
	if err := t.Rewind(base); err != nil {
		return kvSlotDiff{}, err
	}
	if _, err := t.ForwardIDs(ctx, model.Batch{Tokens: toks[:k], Logits: model.LogitsAll}); err != nil {
		return kvSlotDiff{}, err
	}
	ver, err := readSlots(t, base, k)
	if err != nil {
		return kvSlotDiff{}, err
	}
	var d kvSlotDiff
	R := t.ranks[0]
	row := R.kvw * t.kv.elemBytes()
	for l := range dec {
		for kv := range 2 {
			a, b := ver[l][kv], dec[l][kv]
			for s := range k {
				ra, rb := a[s*row:(s+1)*row], b[s*row:(s+1)*row]
				va, vb := slotValues(ra, t.kv), slotValues(rb, t.kv)
				var num, den float64
				for i := range vb {
					num = math.Max(num, math.Abs(float64(va[i]-vb[i])))
					den = math.Max(den, math.Abs(float64(vb[i])))
					if va[i] != vb[i] {
						d.differ++
						if l == 0 {
							d.differ0++
						}
						if t.kv == kvBF16 {
							sa, sb := bf16Order(binary.LittleEndian.Uint16(ra[2*i:])), bf16Order(binary.LittleEndian.Uint16(rb[2*i:]))
							d.maxSteps = max(d.maxSteps, sa-sb, sb-sa)
						}
					}
				}
				d.n += len(vb)
				if l == 0 {
					d.n0 += len(vb)
				}
				if den > 0 {
					d.rel = math.Max(d.rel, num/den)
				}
			}
		}
	}
	return d, t.Rewind(base)
}

// readSlots copies slots [base, base+k) of every layer's K and V cache of
// rank 0 back (raw bytes: [layer][0 K, 1 V]).
func readSlots(t *Target, base, k int) ([][2][]byte, error) {
	unbind, err := t.dev.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	if err := t.stream.Synchronize(); err != nil {
		return nil, err
	}
	R := t.ranks[0]
	row := R.kvw * t.kv.elemBytes()
	out := make([][2][]byte, t.cfg.Layers)
	for l := range out {
		kc, vc := t.layerCache(R, l)
		for i, p := range []cu.DevicePtr{kc, vc} {
			b := make([]byte, k*row)
			if err := cu.MemcpyDtoH(unsafe.Pointer(&b[0]), p+cu.DevicePtr(base*row), int64(len(b))); err != nil {
				return nil, fmt.Errorf("cuda check: read cache slots: %w", err)
			}
			out[l][i] = b
		}
	}
	return out, nil
}

// slotValues is a raw cache row as float32 values.
func slotValues(raw []byte, f kvFormat) []float32 {
	if f == kvBF16 {
		v := make([]float32, len(raw)/2)
		for i := range v {
			v[i] = tensor.BF16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
		return v
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

// bf16Order maps bf16 bits to integers in the order of their values, one
// apart for neighbours (-0 and +0 both 0).
func bf16Order(b uint16) int {
	if b&0x8000 != 0 {
		return -int(b & 0x7fff)
	}
	return int(b)
}
