//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"rigscope/engine/model"
)

// Multi-head latent attention on the GPU (DeepSeek-V2/V3, Kimi-K2; the
// kernels are kernels/mla.cu, the oracle engine/model/mla_forward.go), the
// seam's LatentAttention: per layer and rank two products and three
// kernels, all on the device, so the step stays one CUDA graph:
//
//	matvec     a = RMSNorm(x; attn_norm)·[QA; KVA]ᵀ        a (T, q rank + r + rope)
//	mla_qnorm  qn = RMSNorm(a[:, :q rank]; q_a_norm)        qn (T, q rank)
//	matvec     q = qn·QBᵀ                                   q (T, hl·(nope+rope))
//	mla_cache  cache[base+t] = (RMSNorm(latent; kv_a_norm), RoPE(k_rope))
//	mla_attend att[t,h] = W_UV_h·Σ_s softmax_s(scale·qc·cache[s]) cache[s][:r],
//	           qc = (W_UK_hᵀ·q_nope, RoPE(q_rope))         att (T, hl·v)
//
// then the output projection (AddProduct's wo, as every layer). The cache
// holds r + rope float32s per slot and layer (not full keys and values);
// at TP > 1 each rank computes the whole latent and keeps its own copy
// (replicated, as the CPU's ranks), and attends with its own heads
// (QB, W_UK, W_UV split by heads: model.MLALayer). The RoPE tables are the
// layer's (dattn: the CPU's, with its RoPE scaling), over the rope dims
// (Config.HeadDim = rope); the score scale is the CPU's (Config.MLAScale:
// with YaRN, times mscale²).

// dmla is one layer's latent attention weights of one rank on the device.
type dmla struct {
	a       dweight      // (q rank + r + rope, dim): QA and KVA stacked, replicated
	qaNorm  cu.DevicePtr // f32 (q rank)
	kvaNorm cu.DevicePtr // f32 (r)
	qb      dweight      // (hl·(nope+rope), q rank): this rank's heads
	ukt, uv cu.DevicePtr // f32 (hl, r, nope) and (hl, v, r): the heads' up-projections
	upBytes int64        // bytes of ukt and uv
}

// mlaBufs is a rank's latent attention scratch, sized for MaxTokens.
type mlaBufs struct {
	a  cu.DevicePtr // (MaxTokens, q rank + r + rope) f32
	qn cu.DevicePtr // (MaxTokens, q rank) f32
	q  cu.DevicePtr // (MaxTokens, hl·(nope+rope)) f32
}

// mlaBytes is the device memory of w's latent attention weights beyond
// the matrices (matrices lists QA, KVA, QB): norms and the float32
// up-projections.
func mlaBytes(w *model.Weights) int64 {
	var n int64
	for i := range w.Layers {
		if a := w.Layers[i].MLA; a != nil {
			n += 4 * int64(len(a.QANorm)+len(a.KVANorm)+len(a.UKT)+len(a.UV))
		}
	}
	return n
}

// uploadMLA copies layer L's latent attention weights (this rank's) to
// the device.
func (m *dmodel) uploadMLA(L *model.MLALayer) (*dmla, error) {
	D := &dmla{upBytes: 4 * int64(len(L.UKT)+len(L.UV))}
	var err error
	if D.a, err = m.uploadLayerMatrix("qkv", L.QA, L.KVA); err != nil {
		return nil, err
	}
	if D.qb, err = m.uploadLayerMatrix("qkv", L.QB); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		dst *cu.DevicePtr
		src []float32
	}{{&D.qaNorm, L.QANorm}, {&D.kvaNorm, L.KVANorm}, {&D.ukt, L.UKT}, {&D.uv, L.UV}} {
		if len(v.src) == 0 {
			return nil, fmt.Errorf("empty latent attention vector")
		}
		if *v.dst, err = m.uploadVec(v.src); err != nil {
			return nil, err
		}
	}
	return D, nil
}

// syntheticMLA makes a layer's latent attention weights for hl local
// heads on the device from mat and vec (syntheticModel's random fills).
func syntheticMLA(cfg model.Config, hl int, mat func(rows, cols int) (dweight, error), vec func(n int) (cu.DevicePtr, error)) (*dmla, error) {
	a := cfg.MLA
	r, nope, vd := a.KVRank, a.NopeDim, a.VDim
	D := &dmla{upBytes: 4 * int64(hl*r*(nope+vd))}
	var err error
	if D.a, err = mat(a.QRank+r+a.RopeDim, cfg.Dim); err != nil {
		return nil, err
	}
	if D.qb, err = mat(hl*a.QKDim(), a.QRank); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		dst *cu.DevicePtr
		n   int
	}{{&D.qaNorm, a.QRank}, {&D.kvaNorm, r}, {&D.ukt, hl * r * nope}, {&D.uv, hl * vd * r}} {
		if *v.dst, err = vec(v.n); err != nil {
			return nil, err
		}
	}
	return D, nil
}

// bytes is what one decode token reads of the layer's latent attention
// weights (the cache not counted, as for ordinary attention).
func (D *dmla) bytes() int64 {
	if D == nil {
		return 0
	}
	return D.a.bytes() + D.qb.bytes() + D.upBytes
}

// allocMLA gives every rank of a latent attention model its scratch
// (mlaBufs).
func (t *Target) allocMLA() error {
	a := t.cfg.MLA
	if !a.Enabled() {
		return nil
	}
	var err error
	for _, R := range t.ranks {
		alloc := t.allocOn(R.rd, &err) // on the rank's GPU
		R.mla = mlaBufs{
			a:  alloc(4 * int64(MaxTokens*(a.QRank+a.KVRank+a.RopeDim))),
			qn: alloc(4 * int64(MaxTokens*a.QRank)),
			q:  alloc(4 * int64(MaxTokens*R.dims.hq*a.QKDim())),
		}
		if err != nil || R.mla.a == 0 || R.mla.qn == 0 || R.mla.q == 0 {
			return fmt.Errorf("cuda: latent attention scratch of rank %d: allocation failed: %v", R.r, err)
		}
	}
	return nil
}

// mlaThreads is mla_attend's block (mla.cu's MLA_THREADS: it must be
// launched with exactly this many).
const mlaThreads = 256

// latentAttention enqueues layer l's latent attention for rank R on T
// tokens: the latents into the rank's cache, att (T, hl·v) for wo.
func (t *Target) latentAttention(R *rankState, l, T int) error {
	c := t.cfg
	a := c.MLA
	L := &R.m.layers[l]
	D := L.mla
	if D == nil {
		return fmt.Errorf("cuda: layer %d has no latent attention weights on the device", l)
	}
	B := R.mla
	qr, r, rope := a.QRank, a.KVRank, a.RopeDim
	lda := qr + r + rope
	hl := R.dims.hq
	inter := 0
	if c.RopeLayout == model.RopeInterleaved {
		inter = 1
	}
	if err := t.matvec("mla_a", B.a, lda, R.x, 0, D.a, T, 0, L.attnNorm); err != nil { // a (T, qr+r+rope)
		return err
	}
	if err := t.kernel("mla_norm", 0, "mla_qnorm", [3]int{T, 1, 1}, [3]int{256, 1, 1},
		ptr(B.qn), ptr(B.a), i32(lda), i32(qr), ptr(D.qaNorm), f32(model.MLANormEps)); err != nil { // qn (T, qr)
		return err
	}
	if err := t.matvec("mla_qb", B.q, hl*a.QKDim(), B.qn, 0, D.qb, T, 0, 0); err != nil { // q (T, hl*qk)
		return err
	}
	kc, _ := t.layerCache(R, l)
	at := &t.attn[l]
	if err := t.kernel("mla_cache", 0, "mla_cache", [3]int{T, 1, 1}, [3]int{128, 1, 1},
		ptr(kc), ptr(B.a), i32(lda), i32(qr), ptr(D.kvaNorm), ptr(t.step), ptr(at.cs), ptr(at.sn),
		i32(r), i32(rope), f32(model.MLANormEps), i32(inter)); err != nil {
		return err
	}
	cacheBytes := int64(4 * (r + rope) * (t.n + T))
	return t.kernel("attention", cacheBytes+D.upBytes, "mla_attend", [3]int{hl, T, 1}, [3]int{mlaThreads, 1, 1},
		ptr(R.att), ptr(B.q), ptr(kc), ptr(D.ukt), ptr(D.uv), ptr(t.step), ptr(at.cs), ptr(at.sn),
		i32(hl), i32(a.NopeDim), i32(rope), i32(r), i32(a.VDim), f32(c.MLAScale()), i32(inter)) // att (T, hl*v)
}
