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

// The attention kernel's batch invariance (-checks kv): the T rows of one
// launch (a verify: a chain, or a tree with positions base + depth)
// against decode steps of one token, from the same qkv rows on the same
// cache, for each cache format: for every node t, its path from the root
// decoded one token a launch on a fresh copy of the cache. With fixed
// chunks (attnPlan.chunk > 0: attn_fixed.cu) node t's output row must
// equal the last decode's bit for bit, and every slot the decodes stored
// (position base+i) the slot the verify stored for the path's node i. The
// earlier split by length (chunk 0, RIGSCOPE_CUDA_ATTCHUNK=0) is held to
// float32's reassociation instead (kvRowsTol: its splits depend on the
// cached length, and the new slots are one chunk of their own in a
// verify); its caches must still be equal to the bit.
const kvRowsTol = 1e-5

// kvRowCase is one shape of the check: heads, head dim, cached slots
// before the step, tokens, blocks per head (grid y), and a sliding window
// (attnx_ kernels) when window > 0.
type kvRowCase struct{ hq, hk, hd, base, T, S, window int }

// kvRowCases: llama-8b's attention at TP 1 for every T, small heads and
// head dims 16 to 256, a step at position 0, steps across 32- and
// 128-slot boundaries, windows shorter than the tree and than the cache.
func kvRowCases() []kvRowCase {
	var cs []kvRowCase
	for T := 1; T <= MaxTokens; T++ {
		cs = append(cs, kvRowCase{hq: 32, hk: 8, hd: 128, base: 1000, T: T, S: 32})
	}
	return append(cs,
		kvRowCase{hq: 32, hk: 8, hd: 128, base: 4085, T: 16, S: 32},
		kvRowCase{hq: 32, hk: 8, hd: 128, base: 1010, T: 16, S: 32}, // decode in one chunk per block, the verify's last rows in groups
		kvRowCase{hq: 4, hk: 2, hd: 64, base: 90, T: 8, S: 3},
		kvRowCase{hq: 4, hk: 2, hd: 64, base: 60, T: 8, S: 3},
		kvRowCase{hq: 8, hk: 4, hd: 64, base: 300, T: 16, S: 7},
		kvRowCase{hq: 8, hk: 8, hd: 256, base: 77, T: 5, S: 4},
		kvRowCase{hq: 8, hk: 8, hd: 256, base: 120, T: 16, S: 4},
		kvRowCase{hq: 4, hk: 2, hd: 16, base: 33, T: 7, S: 2},
		kvRowCase{hq: 4, hk: 2, hd: 32, base: 0, T: 5, S: 3},
		kvRowCase{hq: 4, hk: 2, hd: 32, base: 30, T: 16, S: 1},
		kvRowCase{hq: 8, hk: 4, hd: 64, base: 120, T: 12, S: 5},
		kvRowCase{hq: 8, hk: 4, hd: 64, base: 300, T: 12, S: 7, window: 40},
		kvRowCase{hq: 8, hk: 4, hd: 64, base: 300, T: 9, S: 7, window: 5},
		kvRowCase{hq: 16, hk: 2, hd: 64, base: 1000, T: 16, S: 9, window: 200},
	)
}

// kvRowPlan is one attention plan of the checks: a chunk size (0: the
// earlier split by length), the chunks' group (1: none), and whether steps
// of one token take the _t1 kernel and chains' verifies the _ch one
// (Tuning.AttnOne and AttnChain, the product's defaults).
type kvRowPlan struct {
	chunk, group int
	one          bool
}

func (p kvRowPlan) String() string {
	switch {
	case p.chunk == 0:
		return "len"
	case p.one:
		return fmt.Sprintf("%d/g%d", p.chunk, p.group)
	}
	return fmt.Sprintf("%d/g%d/gen", p.chunk, p.group) // one-token steps and chains on the general kernel
}

// plan is p's attnPlan for a cache of slots slots with S blocks.
func (p kvRowPlan) plan(cfg model.Config, slots, S int) attnPlan {
	if p.chunk == 0 {
		return attnPlan{S: S}
	}
	return newAttnPlan(cfg, slots, 132, Tuning{AttnSplits: S, AttnChunk: p.chunk, AttnGroup: p.group, AttnOne: p.one, AttnChain: p.one})
}

// kvRowPlans are the plans checked: the earlier split, fixed chunks
// merged one by one and in groups of 4, with decode steps on the _t1
// kernels and chains' verifies on the _ch ones, and (gen) both on the
// general one.
var kvRowPlans = []kvRowPlan{{0, 1, false}, {32, 1, true}, {32, 4, true}, {32, 4, false}, {64, 4, true}, {128, 1, true}, {128, 4, true}}

// checkKVRows runs kvRowCases for every cache format, chunk size and mask
// (chain, tree) and prints per (format, chunk) the rows and slots that
// differ from decode's and the largest row difference (max |a-b| / max
// |b| per row).
func checkKVRows(d *Device, w io.Writer) error {
	s, done, err := d.checkStream()
	if err != nil {
		return err
	}
	defer done()
	rng := rand.New(rand.NewPCG(19, 2))
	fmt.Fprintf(w, "\nattention: a verify of T tokens (chain, tree) vs decode steps of each node's path, same qkv and cache; rows and cache slots not bitwise equal, max row rel\n")
	fmt.Fprintf(w, "%-8s %8s %6s %12s %12s %10s %s\n", "cache", "plan", "cases", "rows differ", "slots differ", "row rel", "")
	var fails []error
	for _, kvf := range kvFormats {
		for _, pl := range kvRowPlans {
			chunk := pl.chunk
			var r kvRowsResult
			n := 0
			for _, tc := range kvRowCases() {
				for _, tree := range []bool{false, true} {
					if err := kvRowsRun(s, d, rng, tc, kvf, pl, tree, &r); err != nil {
						return err
					}
					n++
				}
			}
			st := "ok"
			bad := r.slotsDiffer > 0 || (chunk > 0 && r.rowsDiffer > 0) || (chunk == 0 && r.rel > kvRowsTol)
			if bad {
				st = "FAIL " + r.first
				fails = append(fails, fmt.Errorf("cuda check kv rows %s plan %v: %d of %d rows and %d of %d slots differ from decode, row rel %.2e (%s)",
					kvf, pl, r.rowsDiffer, r.rows, r.slotsDiffer, r.slots, r.rel, r.first))
			}
			fmt.Fprintf(w, "%-8s %8v %6d %5d/%-6d %5d/%-6d %10.2e %s\n", kvf, pl, n, r.rowsDiffer, r.rows, r.slotsDiffer, r.slots, r.rel, st)
		}
	}
	if len(fails) > 0 {
		return fails[0]
	}
	return nil
}

// kvRowsResult sums kvRowsRun's comparisons.
type kvRowsResult struct {
	rows, rowsDiffer   int     // output rows compared, not bitwise equal
	slots, slotsDiffer int     // cache slot rows (K and V) compared, not bitwise equal
	rel                float64 // the largest row difference
	first              string  // the first case that differed
}

// kvRowsRun is one case of checkKVRows with a chain or a random tree
// (positions base + depth, nodes after their parents).
func kvRowsRun(s cu.Stream, d *Device, rng *rand.Rand, tc kvRowCase, kvf kvFormat, rp kvRowPlan, tree bool, res *kvRowsResult) error {
	h := newDevHelper(s)
	defer h.free()
	slots := tc.base + MaxTokens // the cache the plan is made for
	width := tc.hk * tc.hd
	ld := (tc.hq + 2*tc.hk) * tc.hd
	cfg := model.Config{Heads: tc.hq, KVHeads: tc.hk, HeadDim: tc.hd}
	ap := rp.plan(cfg, slots, tc.S)
	qkv := randn32(rng, tc.T*ld, 0, 1)
	Kc, Vc := randn32(rng, slots*width, 0, 1), randn32(rng, slots*width, 0, 1)
	kb, vb := kvCacheBytesOf(Kc, kvf), kvCacheBytesOf(Vc, kvf)
	cs, sn := cpu.NewRopeTable(tc.hd, slots+8, 10000).Tables(slots + 8)
	parent := make([]int, tc.T)
	verify := stepParams{Base: int32(tc.base), T: int32(tc.T)}
	for i := range parent {
		parent[i] = i - 1
		if tree && i > 1 && rng.IntN(2) == 0 {
			parent[i] = rng.IntN(i)
		}
		verify.Mask[i], verify.Pos[i] = 1<<i, int32(tc.base)
		if p := parent[i]; p >= 0 {
			verify.Mask[i] |= verify.Mask[p]
			verify.Pos[i] = verify.Pos[p] + 1
		}
	}
	stepBytesOf := func(p *stepParams) []byte {
		return append([]byte(nil), (*[1 << 10]byte)(unsafe.Pointer(p))[:stepBytes:stepBytes]...)
	}
	rowsAll := tc.hq * MaxTokens * ap.cols()
	qd, csd, snd := h.up(f32bytes(qkv)), h.up(f32bytes(cs)), h.up(f32bytes(sn))
	pm, pl, pacc := h.poison(rowsAll), h.poison(rowsAll), h.poison(rowsAll*tc.hd)
	cnt := h.up(make([]byte, 4*tc.hk*attnRowGroups(cfg)))
	width4 := tc.hq * tc.hd
	outV, outD := h.poison(tc.T*width4), h.poison(width4)
	kV, vV, kD, vD, kO, vO := h.up(kb), h.up(vb), h.up(kb), h.up(vb), h.up(kb), h.up(vb) // verify, decode, the original
	vstep := h.up(stepBytesOf(&verify))
	dsteps := make([]cu.DevicePtr, tc.T) // decode at base+i
	for i := range dsteps {
		one := stepParams{Base: int32(tc.base + i), T: 1}
		one.Pos[0], one.Mask[0] = int32(tc.base+i), 1
		dsteps[i] = h.up(stepBytesOf(&one))
	}
	if h.err != nil {
		return h.err
	}
	scale := float32(1 / math.Sqrt(float64(tc.hd)))
	run := func(out, kc, vc, qkv, step cu.DevicePtr, T int) error {
		name, grid := attnLaunch(cfg, ap.S, T, 8)
		if tc.window > 0 {
			name = attnKernel(name, &dlayer{}, &dattn{window: tc.window})
		}
		fn, err := d.fn(ap.kernel(kvf.kernel(name), T, !tree)) // a chain's verify on the _ch twin where the plan has it
		if err != nil {
			return err
		}
		return launch(fn, grid, [3]int{128, 1, 1}, 0, s, ptr(out), ptr(pm), ptr(pl), ptr(pacc), ptr(cnt), ptr(qkv), i32(ld), ptr(kc), ptr(vc),
			ptr(step), ptr(csd), ptr(snd), i32(tc.hq), i32(tc.hk), f32(scale), i32(0), i32(32), ptr(0),
			ptr(0), ptr(0), f32(1e-6), i32(tc.window), ptr(0), i32(ap.chunk), i32(ap.np), i32(ap.group))
	}
	if err := run(outV, kV, vV, qd, vstep, tc.T); err != nil {
		return err
	}
	ov, err := h.down(outV, tc.T*width4)
	if err != nil {
		return err
	}
	rowWords := width * kvf.elemBytes() / 4               // one slot row as float32 words
	newSlots := func(p cu.DevicePtr) ([]float32, error) { // rows [base, base+T)
		return h.down(p+cu.DevicePtr(4*tc.base*rowWords), tc.T*rowWords)
	}
	kAll, err := newSlots(kV)
	if err != nil {
		return err
	}
	vAll, err := newSlots(vV)
	if err != nil {
		return err
	}
	cacheBytes := int64(len(kb))
	desc := fmt.Sprintf("%s plan %v %d/%d hd=%d base=%d T=%d S=%d window=%d tree=%v", kvf, rp, tc.hq, tc.hk, tc.hd, tc.base, tc.T, tc.S, tc.window, tree)
	differ := func() {
		if res.first == "" {
			res.first = desc
		}
	}
	for t := range tc.T {
		var path []int // root first
		for a := t; a >= 0; a = parent[a] {
			path = append([]int{a}, path...)
		}
		for _, p := range [][2]cu.DevicePtr{{kD, kO}, {vD, vO}} { // a fresh cache for the path
			if err := cu.MemcpyDtoDAsync(p[0], p[1], cacheBytes, s); err != nil {
				return fmt.Errorf("cuda check kv rows: reset the cache: %w", err)
			}
		}
		for i, a := range path {
			if err := run(outD, kD, vD, qd+cu.DevicePtr(4*a*ld), dsteps[i], 1); err != nil {
				return err
			}
		}
		od, err := h.down(outD, width4)
		if err != nil {
			return err
		}
		row := ov[t*width4 : (t+1)*width4]
		if math.IsNaN(relMax(row, od)) {
			return fmt.Errorf("cuda check kv rows %s: row %d unwritten (NaN)", desc, t)
		}
		res.rows++
		res.rel = math.Max(res.rel, relMax(row, od))
		if !sameBits(row, od) {
			res.rowsDiffer++
			differ()
		}
		kd, err := newSlots(kD)
		if err != nil {
			return err
		}
		vd, err := newSlots(vD)
		if err != nil {
			return err
		}
		for i, a := range path { // decode's slot base+i, the verify's base+a
			for _, p := range [][2][]float32{{kd, kAll}, {vd, vAll}} {
				res.slots++
				di, vi := i*rowWords, a*rowWords
				if !sameBits(p[0][di:di+rowWords], p[1][vi:vi+rowWords]) {
					res.slotsDiffer++
					differ()
				}
			}
		}
	}
	return nil
}

// sameBits says whether a and b hold the same float32 bits.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
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
