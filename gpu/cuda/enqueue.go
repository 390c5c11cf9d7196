//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"sort"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// bucket is the smallest compiled token count (1, 2, 4, 8, 16) >= T.
func bucket(T int) int {
	for _, b := range []int{1, 2, 4, 8, 16} {
		if T <= b {
			return b
		}
	}
	return MaxTokens
}

const (
	mvRows    = 4   // ROWS in kernels.cu
	mvThreads = 128 // MV_WARPS*32
)

// kernel launches one named kernel, timing it when profiling.
func (t *Target) kernel(cat string, bytes int64, name string, grid, block [3]int, args ...arg) error {
	fn, err := t.dev.fn(name)
	if err != nil {
		return err
	}
	if t.prof != nil {
		if err := t.prof.before(t.stream); err != nil {
			return err
		}
	}
	if err := launch(fn, grid, block, 0, t.stream, args...); err != nil {
		return fmt.Errorf("cuda: %s: %w", name, err)
	}
	if t.prof != nil {
		return t.prof.after(t.stream, cat, bytes)
	}
	return nil
}

// matvec: out (T, ldo) [+]= x (T, w.cols) . w^T.
func (t *Target) matvec(cat string, out cu.DevicePtr, ldo int, x cu.DevicePtr, w dweight, T, mode int) error {
	suf, err := kernelSuffix(w.dt)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("mv_%s_%d", suf, bucket(T))
	return t.kernel(cat, w.bytes(), name, [3]int{(w.rows + mvRows - 1) / mvRows, 1, 1}, [3]int{mvThreads, 1, 1},
		ptr(out), i32(ldo), ptr(x), ptr(w.w), ptr(w.s), i32(w.rows), i32(w.cols), i32(T), i32(mode))
}

func (t *Target) glu(out, x cu.DevicePtr, g, u dweight, T int) error {
	suf, err := kernelSuffix(g.dt)
	if err != nil {
		return err
	}
	if u.dt != g.dt {
		return fmt.Errorf("cuda: gate (%v) and up (%v) weights differ in type", g.dt, u.dt)
	}
	name := fmt.Sprintf("glu_%s_%d", suf, bucket(T))
	return t.kernel("gate_up", g.bytes()+u.bytes(), name, [3]int{(g.rows + mvRows - 1) / mvRows, 1, 1}, [3]int{mvThreads, 1, 1},
		ptr(out), i32(g.rows), ptr(x), ptr(g.w), ptr(g.s), ptr(u.w), ptr(u.s), i32(g.rows), i32(g.cols), i32(T))
}

func normThreads(dim int) int { return min(1024, max(32, (dim/4+31)/32*32)) }

// enqueue launches the whole forward pass for T tokens on the stream.
func (t *Target) enqueue(T int, mode model.LogitsMode) error {
	c, m := t.cfg, t.m
	hd, hq, hk := c.HeadDim, c.Heads, c.KVHeads
	suf, err := kernelSuffix(m.emb.dt)
	if err != nil {
		return err
	}
	// step.tokens is at byte offset 16 of struct Step.
	if err := t.kernel("embed", 0, "embed_"+suf, [3]int{T, 1, 1}, [3]int{128, 1, 1},
		ptr(t.x), ptr(m.emb.w), ptr(m.emb.s), ptr(t.step+16), i32(c.Dim)); err != nil {
		return err
	}
	nt := normThreads(c.Dim)
	inter := 0
	if c.RopeLayout == model.RopeInterleaved {
		inter = 1
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	layerKV := cu.DevicePtr(4 * t.slots * t.kvw)
	for l := range m.layers {
		L := &m.layers[l]
		kc, vc := t.kc+cu.DevicePtr(l)*layerKV, t.vc+cu.DevicePtr(l)*layerKV
		if err := t.kernel("rmsnorm", 0, "rmsnorm", [3]int{T, 1, 1}, [3]int{nt, 1, 1},
			ptr(t.xn), ptr(t.x), ptr(L.attnNorm), i32(c.Dim), f32(c.NormEps), i32(0)); err != nil {
			return err
		}
		if err := t.matvec("qkv", t.qkv, t.nqkv, t.xn, L.qkv, T, 0); err != nil {
			return err
		}
		if err := t.kernel("rope_store", 0, "rope_store", [3]int{T, hq + hk, 1}, [3]int{max(32, min(128, hd/2)), 1, 1},
			ptr(t.qkv), i32(t.nqkv), ptr(kc), ptr(vc), ptr(t.step), ptr(t.ropeCos), ptr(t.ropeSin),
			i32(hq), i32(hk), i32(hd), i32(inter)); err != nil {
			return err
		}
		kvBytes := int64(2 * 4 * t.kvw * (t.n + T))
		if err := t.kernel("attention", kvBytes, "attn_split", [3]int{hq, t.S, 1}, [3]int{128, 1, 1},
			ptr(t.pm), ptr(t.pl), ptr(t.pacc), ptr(t.qkv), i32(t.nqkv), ptr(kc), ptr(vc), ptr(t.step),
			i32(hq), i32(hk), i32(hd), f32(scale)); err != nil {
			return err
		}
		if err := t.kernel("attention", 0, "attn_combine", [3]int{hq, T, 1}, [3]int{max(hd, 32), 1, 1},
			ptr(t.att), ptr(t.pm), ptr(t.pl), ptr(t.pacc), i32(hq), i32(hd), i32(t.S)); err != nil {
			return err
		}
		if err := t.matvec("wo", t.x, c.Dim, t.att, L.wo, T, 1); err != nil {
			return err
		}
		if err := t.kernel("rmsnorm", 0, "rmsnorm", [3]int{T, 1, 1}, [3]int{nt, 1, 1},
			ptr(t.xn), ptr(t.x), ptr(L.ffnNorm), i32(c.Dim), f32(c.NormEps), i32(0)); err != nil {
			return err
		}
		if err := t.glu(t.hbuf, t.xn, L.gate, L.up, T); err != nil {
			return err
		}
		if err := t.matvec("down", t.x, c.Dim, t.hbuf, L.down, T, 1); err != nil {
			return err
		}
		if err := t.captureLayer(l, T); err != nil { // EAGLE-3 features: x after the layer's residual add
			return err
		}
	}
	if mode == model.LogitsNone {
		return nil
	}
	first, rows := T-1, 1
	if mode == model.LogitsAll {
		first, rows = 0, T
	}
	if err := t.kernel("rmsnorm", 0, "rmsnorm", [3]int{rows, 1, 1}, [3]int{nt, 1, 1},
		ptr(t.xn), ptr(t.x), ptr(m.outNorm), i32(c.Dim), f32(c.NormEps), i32(first)); err != nil {
		return err
	}
	if err := t.matvec("output", t.logits, c.Vocab, t.xn, m.out, rows, 0); err != nil {
		return err
	}
	return t.kernel("argmax", 0, "argmax_rows", [3]int{rows, 1, 1}, [3]int{1024, 1, 1},
		ptr(t.ids), ptr(t.logits), i32(c.Vocab), ptr(t.step))
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
		err = t.enqueue(T, model.LogitsLast)
	}
	t.prof = nil
	if err == nil {
		err = t.stream.Synchronize()
	}
	unbind()
	if err != nil {
		return nil, fmt.Errorf("cuda: profile step: %w", err)
	}
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
	for i := range p.evs {
		cu.DestroyEvent(&p.evs[i])
	}
	return out, nil
}
