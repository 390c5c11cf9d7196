//go:build cuda

package cuda

import (
	"fmt"
	"sort"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

const (
	mvRows    = 4   // ROWS in kernels.cu
	mvThreads = 128 // MV_WARPS*32
)

// tcTiles is the tensor-core kernel's count of 8-token n-tiles for T.
func tcTiles(T int) int { return (T + 7) / 8 }

// tcWarps is the block size (warps) of the tensor-core kernels for a
// matrix of rows rows (a block per 16 rows): 16, or 32 when the blocks fit
// in one wave of 2 such blocks per SM (measured on the H200: 8 warps loses
// 9% on llama-8b; 32 on the 2048-row products gains 10% on llama-1b, and
// on llama-8b's 4096-row wo and down 431 -> 406 and 1093 -> 1009 us a
// step, where qkv's 384 blocks, 1.45 waves at 32, lost 593 -> 707). It
// depends on the shape only, so decode and verify sum in the same order.
// RIGSCOPE_CUDA_TCW=W, or kind:W,... per kind, forces it (W 8, 16 or 32;
// GLU stops at 16).
func (t *launcher) tcWarps(cat string, rows int, glu bool) int {
	w := 16
	if rows/16 <= 2*t.dev.SMs {
		w = 32
	}
	if t.warps != 0 {
		w = t.warps
	}
	for _, f := range t.tune.Warps {
		if f.all || f.kind == cat {
			w = f.warps
		}
	}
	if glu {
		w = min(w, 16)
	}
	return w
}

// Row tiles: a tensor-core product can give each block 2 or 4 tiles of 16
// rows (kernels tc*rR); each x fragment then feeds R tiles, so a block
// reads x once per 16*R rows, which matters when x has several rows. Row
// sums keep their order, so results are bitwise those of one tile
// (cuda-check checks it). By default gate/up uses 2 tiles where that still
// leaves a block per SM (rows/32 >= SMs): verify of 5 went from 1.19 to
// 1.10-1.14 decode steps on llama-8b, and since the GLU loads 2 k tiles
// at a time (session 7) decode too (8B gate_up 2048 -> 1917 us). The
// plain and norm products keep one tile since they load 2 k tiles at a
// time (TC_U in tc.cu): with 2 row tiles, qkv's verify took 1.4x as long;
// the output projection was slower too (bench/cuda/README.md).
// RIGSCOPE_CUDA_RT replaces the policy, for comparisons (Tuning.RowTiles).

// tcLaunch is the tensor-core kernel (name, with the row-tile suffix when
// the policy asks for more than one tile and the kernel exists) and grid
// for cat's matrix of rows rows at T tokens.
func (t *launcher) tcLaunch(cat, name string, rows, T int) (string, [3]int) {
	tiles := 1
	if t.tune.RowTiles == nil {
		if cat == "gate_up" && rows/32 >= t.dev.SMs {
			tiles = 2
		}
	} else if r, ok := t.tune.RowTiles[cat]; ok && (T > 1 || !r.verifyOnly) {
		tiles = r.tiles
	}
	if more := fmt.Sprintf("%sr%d", name, tiles); tiles > 1 && t.dev.has(more) {
		name = more
	} else {
		tiles = 1
	}
	return name, [3]int{(rows + 16*tiles - 1) / (16 * tiles), 1, 1}
}

// kernel launches one named kernel, timing it when profiling.
func (t *launcher) kernel(cat string, bytes int64, name string, grid, block [3]int, args ...arg) error {
	if t.tune.Skip[cat] {
		return nil
	}
	d := t.dev
	if t.ld != nil {
		d = t.ld
	}
	fn, err := d.fn(name)
	if err != nil {
		return err
	}
	if t.prof != nil {
		if err := t.prof.before(t.stream); err != nil {
			return err
		}
	}
	lf := launch
	// Not after a copy or a graph's start: embed (fc in a head) follows the
	// step's parameter copy, kv_keep a copy too, gather starts a head's
	// chain in a speculative cycle (cycle.go).
	if t.pdl && cat != "embed" && cat != "fc" && cat != "kv_keep" && cat != "gather" {
		lf = launchPDL
	}
	times := 1
	if t.tune.Twice[cat] {
		times = 2
	}
	for range times {
		if err := lf(fn, grid, block, 0, t.ls, args...); err != nil {
			return fmt.Errorf("cuda: %s: %w", name, err)
		}
	}
	if t.tune.Nop[cat] {
		nop, err := d.fn("nop")
		if err != nil {
			return err
		}
		if err := lf(nop, [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, t.ls); err != nil {
			return fmt.Errorf("cuda: nop: %w", err)
		}
	}
	if t.prof != nil {
		return t.prof.after(t.stream, cat, bytes)
	}
	return nil
}

// matvec: out (T, ldo) [+]= x (T, w.cols) . w^T; with norm set, x is
// rmsnorm(x, norm) (fused into the product). xf, when set, is x split for
// the tensor cores already (store_xf in kernels.cu): a tiled product
// without norm then reads it instead of x (tcf*).
func (t *launcher) matvec(cat string, out cu.DevicePtr, ldo int, x, xf cu.DevicePtr, w dweight, T, mode int, norm cu.DevicePtr) error {
	if quantized(w.dt) {
		return t.qmatvec(cat, out, ldo, x, w, T, mode, norm)
	}
	t.qfuse, t.qin = nil, qready{} // a float product neither quantizes its output nor reads a quantized x
	suf, err := kernelSuffix(w.dt)
	if err != nil {
		return err
	}
	if w.tiled {
		nw := t.tcWarps(cat, w.rows, false)
		block := [3]int{32 * nw, 1, 1}
		pre, wa := tcWeight(w)
		if norm != 0 {
			name, grid := t.tcLaunch(cat, fmt.Sprintf("%stcn%d_%d", pre, nw, tcTiles(T)), w.rows, T)
			return t.kernel(cat, w.bytes(), name, grid, block,
				append(append([]arg{ptr(out), i32(ldo), ptr(x)}, wa...), i32(w.rows), i32(w.cols), i32(T), ptr(norm), f32(t.eps))...)
		}
		kind := "tc"
		if xf != 0 {
			kind, x = "tcf", xf
		}
		name, grid := t.tcLaunch(cat, fmt.Sprintf("%s%s%d_%d", pre, kind, nw, tcTiles(T)), w.rows, T)
		return t.kernel(cat, w.bytes(), name, grid, block,
			append(append([]arg{ptr(out), i32(ldo), ptr(x)}, wa...), i32(w.rows), i32(w.cols), i32(T), i32(mode))...)
	}
	if w.dt == tensor.F8_E4M3 && t.tune.F8MV.on {
		return t.mf8matvec(cat, out, ldo, x, w, T, mode, norm)
	}
	grid, block := [3]int{(w.rows + mvRows - 1) / mvRows, 1, 1}, [3]int{mvThreads, 1, 1}
	if norm != 0 {
		return t.kernel(cat, w.bytes(), fmt.Sprintf("mvn_%s_%d", suf, bucket(T)), grid, block,
			ptr(out), i32(ldo), ptr(x), ptr(w.w), ptr(w.s), i32(w.rows), i32(w.cols), i32(T), ptr(norm), f32(t.eps))
	}
	return t.kernel(cat, w.bytes(), fmt.Sprintf("mv_%s_%d", suf, bucket(T)), grid, block,
		ptr(out), i32(ldo), ptr(x), ptr(w.w), ptr(w.s), i32(w.rows), i32(w.cols), i32(T), i32(mode))
}

// tcWeight is a tiled matrix's kernel prefix and arguments: bf16 tiles
// (tc*: the tiles), FP8 ones (f8tc*, fp8.cu: the tiles and the scale grid).
func tcWeight(w dweight) (string, []arg) {
	if w.dt == tensor.F8_E4M3 {
		return "f8", []arg{ptr(w.w), ptr(w.s)}
	}
	return "", []arg{ptr(w.w)}
}

// glu: out (T, ffn) = act(rmsnorm(x).g^T) * (rmsnorm(x).u^T), act SiLU
// or (t.gelu) GELU-tanh; on the
// tensor cores, also split into xfo when set (down's xf).
func (t *launcher) glu(out, xfo, x cu.DevicePtr, g, u dweight, T int, norm cu.DevicePtr) error {
	suf, err := kernelSuffix(g.dt)
	if err != nil {
		return err
	}
	if u.dt != g.dt || u.tiled != g.tiled {
		return fmt.Errorf("cuda: gate (%v) and up (%v) weights differ in type", g.dt, u.dt)
	}
	if quantized(g.dt) {
		return t.qglu(out, x, g, u, T, norm)
	}
	t.qfuse, t.qin = nil, qready{}
	act := 0 // the kernels' last argument: 1 = GELU-tanh (Gemma 3), 0 = SiLU
	if t.gelu {
		act = 1
	}
	if g.tiled {
		nw := t.tcWarps("gate_up", g.rows, true)
		pre, ga := tcWeight(g)
		_, ua := tcWeight(u)
		name, grid := t.tcLaunch("gate_up", fmt.Sprintf("%stcglu%d_%d", pre, nw, tcTiles(T)), g.rows, T)
		return t.kernel("gate_up", g.bytes()+u.bytes(), name, grid, [3]int{32 * nw, 1, 1},
			append(append(append([]arg{ptr(out), i32(g.rows), ptr(x)}, ga...), ua...), i32(g.rows), i32(g.cols), i32(T), ptr(norm), f32(t.eps), ptr(xfo), i32(act))...)
	}
	if g.dt == tensor.F8_E4M3 && t.tune.F8MV.on {
		return t.mf8glu(out, x, g, u, T, norm, act)
	}
	name := fmt.Sprintf("glu_%s_%d", suf, bucket(T))
	return t.kernel("gate_up", g.bytes()+u.bytes(), name, [3]int{(g.rows + mvRows - 1) / mvRows, 1, 1}, [3]int{mvThreads, 1, 1},
		ptr(out), i32(g.rows), ptr(x), ptr(g.w), ptr(g.s), ptr(u.w), ptr(u.s), i32(g.rows), i32(g.cols), i32(T), ptr(norm), f32(t.eps), i32(act))
}

// attnMinRows is the fewest query rows one attention block serves (4 warps
// x RPW rows, RPW 1 or 2 in attention.cu): it sizes the split counters.
const attnMinRows = 4

// The most query rows one attention block serves is 4 (Tuning.AttnRows;
// RPW 1, so a verify's rows make more blocks): on the H200 (session 20,
// bench/cuda/results/s20/d8, d9) verify of 5 / decode went 1.093 -> 1.081
// on llama-8b and 1.154 -> 1.138 on llama-1b, decode unchanged, and the
// gocoder pair's verify of 5 from 97.3 to 85.6 us (EAGLE-3 15,756 against
// 14,836 tok/s); 8 (RPW 2) was the default before; 16, with RPW 4,
// measured 8% slower in verify on llama-8b and passes 48 KB of shared
// memory at head dim 256. With 8 the kv check found verify rows bitwise
// the decode rows across RPW 1 and 2; with 4 every step runs RPW 1, so a
// verify's rows take the decode's kernel. The cache is cut into fixed chunks
// (attnPlan, Tuning.AttnChunk: 32 slots; kernels/attn_fixed.cu) so that a
// row's output does not depend on the step's length. With the earlier
// split by length (the _len kernels, RIGSCOPE_CUDA_ATTCHUNK=0) the fewest
// cache slots one split covers (minper in attention.cu, a multiple of 32)
// is 32 (Tuning.AttnMin: one chunk per split at short contexts, 2% faster
// decode on llama-8b than 64, 128 4% slower).

// attnLaunch is the attention kernel for T tokens with at most maxRows
// query rows per block: its name (attn_HD_RPW) and grid (hk, S, row
// groups); block ATT_WARPS*32.
func attnLaunch(c model.Config, S, T, maxRows int) (string, [3]int) {
	rows := c.Heads / c.KVHeads * T // query rows per KV head
	rpw := 1
	for 4*rpw < min(rows, maxRows) {
		rpw *= 2
	}
	return fmt.Sprintf("attn_%d_%d", c.HeadDim, rpw), [3]int{c.KVHeads, S, (rows + 4*rpw - 1) / (4 * rpw)}
}

// enqueue launches the whole forward pass for T tokens on the stream: the
// model's Step (engine/model/step.go) with the Target's operations
// (step_ops.go), which enqueue per layer and rank qkv (with the attention
// norm), attention (RoPE, cache store, split softmax), wo; with TP > 1 the
// ranks' wo partial sums are added into the replicated x by one
// allreduce; then gate/up (with the FFN norm) and down, joined the same
// way; then every rank's output rows (with the final norm) into the shared
// logits, and argmax.
func (t *Target) enqueue(T int, mode model.LogitsMode) error {
	t.qfuse, t.qin = nil, qready{}
	t.st = stepState{T: T, mode: mode, sampled: t.smp != nil}
	err := model.Step((*targetOps)(t), &t.cfg, T, mode)
	t.st = stepState{}
	return err
}

// profiler times each kernel of an ungraphed step with events.
type profiler struct {
	evs  []cu.Event
	i    int
	cats []string
	byts []int64
}

func (p *profiler) event() (cu.Event, error) {
	if p.i < len(p.evs) {
		p.i++
		return p.evs[p.i-1], nil
	}
	e, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return e, fmt.Errorf("cuda: create event: %w", err)
	}
	p.evs = append(p.evs, e)
	p.i++
	return e, nil
}

func (p *profiler) before(s cu.Stream) error {
	e, err := p.event()
	if err != nil {
		return err
	}
	return e.Record(s)
}

func (p *profiler) after(s cu.Stream, cat string, bytes int64) error {
	e, err := p.event()
	if err != nil {
		return err
	}
	p.cats = append(p.cats, cat)
	p.byts = append(p.byts, bytes)
	return e.Record(s)
}

// KernelTime is the time of one kind of kernel in a step.
type KernelTime struct {
	Kind     string
	Launches int
	Micros   float64
	Bytes    int64   // bytes the kernels must read (weights; KV for attention)
	GBps     float64 // Bytes / time
}

// ProfileStep runs one ungraphed decode (or verify) step of T tokens with an
// event around every kernel and returns the time per kernel kind. The KV
// cache is rewound afterwards.
func (t *Target) ProfileStep(T int) ([]KernelTime, error) {
	unbind, err := t.dev.Bind()
	if err != nil {
		return nil, err
	}
	p := &profiler{}
	t.prof = p
	st := (*stepParams)(t.hstep.p)
	base := t.n
	st.Base, st.T = int32(base), int32(T)
	for i := 0; i < T; i++ {
		st.Tokens[i], st.Pos[i], st.Mask[i] = int32(i%t.cfg.Vocab), int32(base+i), uint32(1)<<(i+1)-1
	}
	err = cu.MemcpyHtoDAsync(t.step, t.hstep.p, int64(stepBytes), t.stream)
	if err == nil {
		mode := model.LogitsLast // as cuda-bench times them: a verify step argmaxes every row
		if T > 1 {
			mode = model.LogitsAll
		}
		err = t.enqueue(T, mode)
	}
	t.prof = nil
	if err == nil {
		err = t.stream.Synchronize()
	}
	unbind()
	if err != nil {
		return nil, fmt.Errorf("cuda: profile step: %w", err)
	}
	return p.kernelTimes()
}

// kernelTimes sums the timed kernels by kind (the stream is synchronized)
// and frees the events.
func (p *profiler) kernelTimes() ([]KernelTime, error) {
	defer func() {
		for i := range p.evs {
			cu.DestroyEvent(&p.evs[i])
		}
	}()
	agg := map[string]*KernelTime{}
	for i, cat := range p.cats {
		ms, err := p.evs[2*i].Elapsed(p.evs[2*i+1])
		if err != nil {
			return nil, fmt.Errorf("cuda: event time: %w", err)
		}
		k := agg[cat]
		if k == nil {
			k = &KernelTime{Kind: cat}
			agg[cat] = k
		}
		k.Launches++
		k.Micros += ms * 1000
		k.Bytes += p.byts[i]
	}
	var out []KernelTime
	for _, k := range agg {
		if k.Bytes > 0 && k.Micros > 0 {
			k.GBps = float64(k.Bytes) / (k.Micros * 1e3)
		}
		out = append(out, *k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Micros > out[j].Micros })
	return out, nil
}

// graphKey names a captured step: its token count, logits mode and the
// layers whose hidden states it copies out.
type graphKey struct {
	T       int
	mode    model.LogitsMode
	capture string
	sampled bool   // the logits rows are sampled after the graph: no argmax in it
	cycle   uint64 // a speculative cycle's verify: the head (Head.id) whose steps its argmax_accept sets up (cycle.go); 0: none
}

// enqueueStep replays (capturing first if needed) the graph for (T, mode),
// or launches the kernels directly.
func (t *Target) enqueueStep(T int, mode model.LogitsMode) error {
	if !t.UseGraphs || t.prof != nil {
		return t.enqueue(T, mode)
	}
	return replay(t.stream, t.graphs, graphKey{T, mode, t.cap.key, t.smp != nil, t.cycleKey()}, func() error { return t.enqueue(T, mode) })
}

// replay launches the graph captured for key on s, capturing it from
// enqueue on first use (a Target's steps, a Head's chains).
func replay[K comparable](s cu.Stream, graphs map[K]*graph, key K, enqueue func() error) error {
	g := graphs[key]
	if g == nil {
		if err := beginCapture(s); err != nil {
			return err
		}
		err := enqueue()
		g2, err2 := endCapture(s)
		if err != nil {
			if g2 != nil {
				g2.destroy()
			}
			return err
		}
		if err2 != nil {
			return err2
		}
		g = g2
		graphs[key] = g
	}
	return g.launch(s)
}
