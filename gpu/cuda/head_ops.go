//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// headOps is the GPU's EAGLE-3 head as model.Ops for its one decoder
// layer (model.Layers), as the CPU's eagle3 headOps: x is the residual
// stream h.lres, which eagle_in started, and AttentionInput reads h.cat
// (T, 2*dim), not a norm of x. One rank: no joins, no post-norms.
type headOps Head

var _ model.Ops = (*headOps)(nil)

// Embed is not the head's: eagle_in builds its input (enqueueLayer).
func (o *headOps) Embed(T int, scale float32) error {
	return fmt.Errorf("cuda: the EAGLE-3 head's residual stream starts at its hidden input, not a token embedding")
}

// AttentionInput: qkvb (T, nqkv) = cat · [Wq;Wk;Wv]ᵀ.
func (o *headOps) AttentionInput(l, T int) error {
	h := (*Head)(o)
	out := h.qkvb + cu.DevicePtr(4*h.lrow0*h.nqkv) // a tree depth's rows follow the earlier nodes'
	return h.matvec("qkv", out, h.nqkv, h.cat, 0, h.qkv, T, 0, 0)
}

// Attend: rotate-half RoPE (inter 0, as the head was trained), the cache
// store and attention; no biases, head norms or window.
func (o *headOps) Attend(l, T int) error {
	h := (*Head)(o)
	c := h.cfg
	// A tree depth attends as the batch of every node so far (lrow0+T
	// rows, the step's tree mask): the earlier nodes' qkv rows are kept,
	// so their keys and values are stored again unchanged.
	name, grid := attnLaunch(h.mcfg, h.ap.S, h.lrow0+T, h.tune.AttnRows)
	name = h.ap.kernel(h.kv.kernel(name), h.lrow0+T, false)
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	return h.kernel("attention", 0, name, grid, [3]int{128, 1, 1},
		ptr(h.att), ptr(h.pm), ptr(h.pl), ptr(h.pacc), ptr(h.attnCnt), ptr(h.qkvb), i32(h.nqkv), ptr(h.kc), ptr(h.vc),
		ptr(h.dstep(h.lstep)), ptr(h.ropeCos), ptr(h.ropeSin), i32(c.Heads), i32(c.KVHeads), f32(scale), i32(0), i32(h.tune.AttnMin),
		ptr(0), ptr(0), ptr(0), f32(0), i32(0), ptr(0), i32(h.ap.chunk), i32(h.ap.np), i32(h.ap.group))
}

// LatentAttention is not the head's.
func (o *headOps) LatentAttention(l, T int) error {
	return fmt.Errorf("cuda: the EAGLE-3 head has no latent attention")
}

// AddProduct: res += att · woᵀ or res += hbuf · downᵀ (the products'
// add epilogue, mode 1).
func (o *headOps) AddProduct(l int, role model.Role, T int) error {
	h := (*Head)(o)
	switch role {
	case model.RoleAttnOut:
		att := h.att + cu.DevicePtr(4*h.lrow0*h.cfg.Heads*h.cfg.HeadDim) // the layer's rows of the attention's batch
		return h.matvec("wo", h.lres, h.cfg.Dim, att, 0, h.wo, T, 1, 0)
	case model.RoleDown:
		return h.matvec("down", h.lres, h.cfg.Dim, h.hbuf, 0, h.down, T, 1, 0)
	}
	return fmt.Errorf("cuda: EAGLE-3 head: no product of %v", role)
}

// GatedMLP: hbuf (T, ffn) = silu(post_norm(res)·gateᵀ) * (post_norm(res)·upᵀ).
func (o *headOps) GatedMLP(l, T int, act model.Activation) error {
	h := (*Head)(o)
	if act != model.ActSiLU {
		return fmt.Errorf("cuda: the EAGLE-3 head's MLP is SiLU-gated, not activation %d", act)
	}
	return h.glu(h.hbuf, 0, h.lres, h.gate, h.up, T, h.postNorm)
}

// MixtureOfExperts is not the head's.
func (o *headOps) MixtureOfExperts(l, T int) error {
	return fmt.Errorf("cuda: the EAGLE-3 head has no mixture of experts")
}

// Capture: the head's output is res itself.
func (o *headOps) Capture(l, T int) error { return nil }

// Logits is the head's own (enqueueDraftToken: lm_head and argmax_d2t).
func (o *headOps) Logits(first, rows int, softcap float32) error {
	return fmt.Errorf("cuda: the EAGLE-3 head's logits are its lm_head's (enqueueDraftToken)")
}

// draftOut is enqueueDraftToken in one kernel (Tuning.HeadOut): tcnam*
// (kernels/headout.cu) computes the logits as the output product's tcn
// kernel does (its code, so bitwise the same), reduces their argmax across
// its blocks, writes out[j] and step j+1's token, and with the eagle_in
// fold builds step j+1's input in its last block, as argmax_d2t_in. False
// (nothing enqueued) where it does not apply: lm_head not on the tensor
// cores, or no such kernel for the block size or the embedding's type.
func (h *Head) draftOut(row cu.DevicePtr, j, k int) (bool, error) {
	c := h.cfg
	if !h.lm.tiled || h.lm.rows != c.DraftVocab || h.lm.cols != c.Dim {
		return false, nil
	}
	suf, err := kernelSuffix(h.emb.dt)
	if err != nil {
		return false, nil
	}
	nw := h.tcWarps("output", h.lm.rows, false) // the output product's block, so its sums are tcn's
	name := fmt.Sprintf("tcnam%d_%s", nw, suf)
	if !h.dev.has(name) {
		return false, nil
	}
	var next, cat cu.DevicePtr
	if j+1 < k {
		next = h.dstep(j + 1)
		if h.tune.EagleInFold {
			cat = h.cat
		}
	}
	return true, h.kernel("headout", h.lm.bytes(), name, [3]int{(h.lm.rows + 15) / 16, 1, 1}, [3]int{32 * nw, 1, 1},
		ptr(h.logits), ptr(row), ptr(h.lm.w), i32(h.lm.rows), i32(h.lm.cols), ptr(h.outNorm), f32(h.eps),
		ptr(h.ids), ptr(h.hoPart), ptr(h.hoCnt), ptr(h.d2t), ptr(h.out), i32(j), ptr(next),
		ptr(cat), ptr(h.emb.w), ptr(h.emb.s), ptr(h.inNorm), ptr(h.hidNorm), i32(h.nbr()))
}
