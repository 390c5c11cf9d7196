//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// targetOps is the Target as model.Ops: the model's Step
// (engine/model/step.go) drives the decoder, and each operation enqueues
// the Target's fused kernels for it on every rank. Within a phase between
// two joins (an allreduce or a copy on the target's stream) the
// operations' per-rank work is queued and the phase then runs rank after
// rank (onRanks: one fork and join of the ranks' streams per phase), so a
// step launches the same kernels in the same order as one hand-sequenced
// pass would, and its CUDA graph has the same shape.
type targetOps Target

var _ model.Ops = (*targetOps)(nil)

// stepState is the step being enqueued: its logits mode (a product that
// quantizes its output for the next one looks ahead to the output
// projection) and the queued work of the phase in hand.
type stepState struct {
	T       int
	mode    model.LogitsMode
	sampled bool // sample_row follows the step (Target.smp): Logits leaves out the argmax
	phase   []func(R *rankState) error
}

// queue adds f to the phase in hand (run on every rank by endPhase).
func (o *targetOps) queue(f func(R *rankState) error) { o.st.phase = append(o.st.phase, f) }

// endPhase runs the queued work on every rank, each rank's in order.
func (o *targetOps) endPhase() error {
	ph := o.st.phase
	o.st.phase = nil
	if len(ph) == 0 {
		return nil
	}
	return (*Target)(o).onRanks(func(R *rankState) error {
		for _, f := range ph {
			if err := f(R); err != nil {
				return err
			}
		}
		return nil
	})
}

// Embed: every rank embeds the step's tokens into its own x (the
// replicated activations) from its own copy of the embedding, times scale
// (Gemma 3), on its stream (the first phase of the step).
func (o *targetOps) Embed(T int, scale float32) error {
	t := (*Target)(o)
	suf, err := kernelSuffix(t.ranks[0].m.emb.dt)
	if err != nil {
		return err
	}
	o.queue(func(R *rankState) error {
		// step.tokens is at byte offset 16 of struct Step.
		if err := t.kernel("embed", 0, "embed_"+suf, [3]int{T, 1, 1}, [3]int{128, 1, 1},
			ptr(R.x), ptr(R.m.emb.w), ptr(R.m.emb.s), ptr(R.rd.step+16), i32(t.cfg.Dim)); err != nil {
			return err
		}
		return t.scaleEmbedding(R, T, scale) // arch.go
	})
	return nil
}

// AttentionInput: qkv (T, nqkv) = rmsnorm(x) · [Wq;Wk;Wv]ᵀ, the norm fused
// into the product.
func (o *targetOps) AttentionInput(l, T int) error {
	t := (*Target)(o)
	o.queue(func(R *rankState) error {
		L := &R.m.layers[l]
		return t.matvec("qkv", R.qkv, R.nqkv, R.x, 0, L.qkv, T, 0, L.attnNorm)
	})
	return nil
}

// Attend: one kernel (attention.cu) adds the biases, norms the q/k heads,
// rotates q and k, stores k and v in the cache and attends with the
// step's mask and the layer's window; it also splits att for wo's tensor
// cores (SplitX) or quantizes it for a quantized wo (att_quant).
func (o *targetOps) Attend(l, T int) error {
	t := (*Target)(o)
	c := t.cfg
	inter := 0
	if c.RopeLayout == model.RopeInterleaved {
		inter = 1
	}
	o.queue(func(R *rankState) error {
		L := &R.m.layers[l]
		kc, vc := t.layerCache(R, l)
		rc := c
		rc.Heads, rc.KVHeads = R.dims.hq, R.dims.hk
		name, grid := attnLaunch(rc, t.ap.S, T, t.tune.AttnRows)
		a := &R.rd.attn[l]
		name = t.ap.kernel(t.kv.kernel(attnKernel(name, L, a)), T, t.cyc.on) // a cycle's verify is a chain (cycle.go)
		kvBytes := int64(2 * t.kv.elemBytes() * R.kvw * (t.n + T))
		attQ := t.attnQuantOut(L.wo, R.dims.hq, c.HeadDim) // wo's x quantized by the attention itself (att_quant)
		if err := t.kernel("attention", kvBytes, name, grid, [3]int{128, 1, 1},
			ptr(R.att), ptr(R.pm), ptr(R.pl), ptr(R.pacc), ptr(R.attnCnt), ptr(R.qkv), i32(R.nqkv), ptr(kc), ptr(vc),
			ptr(R.rd.step), ptr(a.cs), ptr(a.sn), i32(R.dims.hq), i32(R.dims.hk), f32(a.scale), i32(inter), i32(t.tune.AttnMin),
			ptr(t.attXF(R, L)), ptr(L.bias), ptr(L.qkNorm), f32(t.eps), i32(a.window), ptr(attQ), i32(t.ap.chunk), i32(t.ap.np), i32(t.ap.group)); err != nil {
			return err
		}
		if attQ != 0 {
			t.qin = qready{x: R.att, T: T, cols: L.wo.cols, buf: attQ}
		}
		return nil
	})
	return nil
}

// attXF is wo's input split by the attention, when wo is on the tensor
// cores (0: not split).
func (t *Target) attXF(R *rankState, L *dlayer) cu.DevicePtr {
	if t.tune.SplitX && L.wo.tiled && L.mla == nil { // mla_attend does not split att
		return R.attXF
	}
	return 0
}

// hXF is down's input split by the GLU, when both are on the tensor
// cores (0: not split).
func (t *Target) hXF(R *rankState, L *dlayer) cu.DevicePtr {
	if t.tune.SplitX && L.gate.tiled && L.down.tiled {
		return R.hXF
	}
	return 0
}

// LatentAttention: the latent and query products, the latents into the
// rank's cache and the absorbed attention (mla.go, kernels/mla.cu), into
// att (T, hl·v) for AddProduct's wo.
func (o *targetOps) LatentAttention(l, T int) error {
	t := (*Target)(o)
	o.queue(func(R *rankState) error { return t.latentAttention(R, l, T) })
	return nil
}

// MixtureOfExperts: route, the chosen experts' GLU and their weighted
// down products (moe.go, kernels/moe.cu), into x at TP 1; at TP > 1 each
// rank's partial sums (its FFN columns of every expert) are joined into
// every rank's x by joinRanks, as AddProduct's down.
func (o *targetOps) MixtureOfExperts(l, T int) error {
	t := (*Target)(o)
	o.queue(func(R *rankState) error { return t.moeBlock(R, l, T) })
	if err := o.endPhase(); err != nil {
		return err
	}
	if len(t.ranks) == 1 {
		return nil
	}
	return t.joinRanks(T, 2*l+1, 0) // the call index of the layer's down, which an MoE layer has not
}

// GatedMLP: hbuf (T, ffn) = act(rmsnorm(x)·gateᵀ) * (rmsnorm(x)·upᵀ), one
// kernel; it also splits hbuf for down's tensor cores or quantizes it for
// a quantized down.
func (o *targetOps) GatedMLP(l, T int, act model.Activation) error {
	t := (*Target)(o)
	switch act {
	case model.ActSiLU, model.ActGELUTanh:
		t.gelu = act == model.ActGELUTanh
	default:
		return fmt.Errorf("cuda: MLP activation %d is not implemented on the GPU", act)
	}
	o.queue(func(R *rankState) error {
		L := &R.m.layers[l]
		if quantized(L.gate.dt) && t.readsQX(L.down) { // down reads the GLU's output: the GLU quantizes it
			t.qfuse = &qfuseReq{}
		}
		return t.glu(R.hbuf, t.hXF(R, L), R.x, L.gate, L.up, T, L.ffnNorm)
	})
	return nil
}

// AddProduct: wo or down. At TP 1 the product adds into x itself (mode 1,
// its epilogue), or with a Gemma 3 post-norm writes R.part and postNorm
// adds its norm to x; at TP > 1 each rank writes its partial sums to
// R.part and joinRanks adds their (normed) sum to every rank's x.
func (o *targetOps) AddProduct(l int, role model.Role, T int) error {
	t := (*Target)(o)
	tp := len(t.ranks) > 1
	var call int
	switch role {
	case model.RoleAttnOut:
		call = 2 * l
	case model.RoleDown:
		call = 2*l + 1
	default:
		return fmt.Errorf("cuda: layer %d: no product of %v", l, role)
	}
	o.queue(func(R *rankState) error {
		L := &R.m.layers[l]
		cat, w, in, xf, post := "wo", L.wo, R.att, t.attXF(R, L), L.postAttn
		if role == model.RoleDown {
			cat, w, in, xf, post = "down", L.down, R.hbuf, t.hXF(R, L), L.postFFN
		}
		out, mode := R.x, 1
		if tp || post != 0 { // partial sums (joinRanks), or Gemma 3's output for its post-norm (arch.go)
			out, mode = R.part, 0
		}
		if out == R.x {
			t.fuseNext(R, l, role)
		}
		if err := t.matvec(cat, out, t.cfg.Dim, in, xf, w, T, mode, 0); err != nil {
			return err
		}
		return t.postNorm(R, post, T)
	})
	if err := o.endPhase(); err != nil {
		return err
	}
	if !tp {
		return nil
	}
	L0 := &t.ranks[0].m.layers[l]
	post := L0.postAttn
	if role == model.RoleDown {
		post = L0.postFFN
	}
	return t.joinRanks(T, call, post) // arch.go
}

// fuseNext asks a quantized product of layer l that adds into x to
// quantize x as it leaves it, for the quantized product that reads x next
// (quant.go): wo -> gate/up, down -> the next layer's qkv or the output
// projection.
func (t *Target) fuseNext(R *rankState, l int, role model.Role) {
	L := &R.m.layers[l]
	if role == model.RoleAttnOut {
		if quantized(L.wo.dt) && t.readsQX(L.gate) {
			t.qfuse = &qfuseReq{g: L.ffnNorm}
		}
		return
	}
	if !quantized(L.down.dt) {
		return
	}
	if l+1 < t.cfg.Layers && t.readsQX(R.m.layers[l+1].qkv) {
		t.qfuse = &qfuseReq{g: R.m.layers[l+1].attnNorm}
	} else if l+1 == t.cfg.Layers && t.st.mode != model.LogitsNone && t.readsQX(R.m.out) {
		t.qfuse = &qfuseReq{g: R.m.outNorm}
	}
}

// Capture copies x after layer l for EAGLE-3 (capture.go), when asked.
func (o *targetOps) Capture(l, T int) error {
	if err := o.endPhase(); err != nil {
		return err
	}
	return (*Target)(o).captureLayer(l, T)
}

// Logits: every rank's vocab rows (vocab-parallel) of the output
// projection of x's rows [first, first+rows), the final norm fused, into
// the shared logits; then argmax_rows on the device, or for a one-token
// step argmax_next, which also sets up the next decode step (ahead.go).
func (o *targetOps) Logits(first, rows int, softcap float32) error {
	t := (*Target)(o)
	c := t.cfg
	if softcap != 0 {
		return fmt.Errorf("cuda: the GPU path does not implement final logit soft-capping (%g); run this model with --device cpu", softcap)
	}
	if err := o.endPhase(); err != nil {
		return err
	}
	err := t.onRanks(func(R *rankState) error {
		if err := t.matvec("output", t.outputRows(R)+cu.DevicePtr(4*R.dims.vocabLo), c.Vocab, R.x+cu.DevicePtr(4*first*c.Dim), 0, R.m.out, rows, 0, R.m.outNorm); err != nil {
			return err
		}
		return t.logitsHome(R, rows) // a remote rank's rows to the shared logits (rankdev.go)
	})
	if err != nil || o.st.sampled {
		return err
	}
	if t.cyc.on { // a speculative cycle's verify (cycle.go)
		return t.acceptRows(rows)
	}
	if o.st.T == 1 && rows == 1 {
		return t.kernel("argmax", 0, "argmax_next", [3]int{t.amBlocks(), 1, 1}, [3]int{256, 1, 1},
			ptr(t.ids), ptr(t.logits), i32(c.Vocab), ptr(t.step), ptr(t.amPart), ptr(t.amCnt), ptr(t.ringDev))
	}
	return t.kernel("argmax", 0, "argmax_rows", [3]int{t.amBlocks(), rows, 1}, [3]int{256, 1, 1},
		ptr(t.ids), ptr(t.logits), i32(c.Vocab), ptr(t.step), ptr(t.amPart), ptr(t.amCnt))
}
