//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/tensor"
)

var (
	_ eagle3.TreeRunner    = (*Head)(nil)
	_ eagle3.SampledRunner = (*Head)(nil)
)

// TreeNodes implements eagle3.TreeRunner: a depth attends as one batch of
// every node so far (Step's tokens and mask), at most MaxTokens; the
// target's verify of a tree takes as many (with the context's token).
func (h *Head) TreeNodes() int { return MaxTokens }

// noPDL turns programmatic dependent launch off until the returned func
// runs: trees and sampled chains run ungraphed, with copies between their
// kernels, and a kernel launched after a copy does not overlap it.
func (h *Head) noPDL() func() {
	was := h.pdl
	h.pdl = false
	return func() { h.pdl = was }
}

// TreeRoot implements eagle3.TreeRunner: the extended rows (as Extend),
// the last one's output into the tree's row 0, and its draft logits
// (lm_head with the final norm) copied back.
func (h *Head) TreeRoot(ctx context.Context, first int, tokens []int32, feats []float32) ([]float32, error) {
	// The rows' last chunk is not waited for (pending: its event is
	// recorded, unused): the root's copy, logits and copy back follow it on
	// the stream, and one synchronize ends the call.
	if err := h.rows(ctx, first, tokens, feats, 0, true); err != nil {
		return nil, err
	}
	unbind, err := h.dev.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	defer h.noPDL()()
	c := h.cfg
	n := len(tokens)
	last := n - (n-1)/MaxTokens*MaxTokens // rows in the last chunk; its last row is the root
	rowBytes := int64(4 * c.Dim)
	if err := cu.MemcpyDtoDAsync(h.tres, h.res+cu.DevicePtr(int64(last-1)*rowBytes), rowBytes, h.stream); err != nil {
		return nil, fmt.Errorf("cuda: EAGLE-3 tree root: %w", err)
	}
	if err := h.matvec("output", h.logits, c.DraftVocab, h.tres, 0, h.lm, 1, 0, h.outNorm); err != nil {
		return nil, err
	}
	return h.logitsBack(1, "tree root")
}

// logitsBack copies rows rows of logits back and waits.
func (h *Head) logitsBack(rows int, what string) ([]float32, error) {
	dv := h.cfg.DraftVocab
	if err := cu.MemcpyDtoHAsync(h.hlog.p, h.logits, int64(4*rows*dv), h.stream); err != nil {
		return nil, fmt.Errorf("cuda: EAGLE-3 %s: copy logits back: %w", what, err)
	}
	if err := h.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuda: EAGLE-3 %s: %w", what, err)
	}
	return unsafe.Slice((*float32)(h.hlog.p), rows*dv), nil
}

// TreeDepth implements eagle3.TreeRunner. Node i's residual stream is tree
// row 1+i (row 0 the root): the new nodes' rows start as their parents'
// outputs (copies on the device); eagle_in builds their input with step 1
// (their tokens); the layer attends with step 0, the batch of all nodes
// [0, len(tokens)) at slots base.. with the tree mask (bit j of node i:
// j is i or an ancestor) over the cache [0, base); the new nodes' qkv
// rows follow the earlier nodes', which stay from their own depths. Their
// draft logits (len(tokens)-f0 rows) come back.
func (h *Head) TreeDepth(ctx context.Context, base int, tokens, parents, pos []int32, f0 int) ([]float32, error) {
	c := h.cfg
	n := len(tokens)
	switch {
	case n > MaxTokens:
		return nil, fmt.Errorf("cuda: EAGLE-3 tree of %d nodes; the device head takes at most %d", n, MaxTokens)
	case len(parents) != n || len(pos) != n || f0 < 0 || f0 >= n:
		return nil, fmt.Errorf("cuda: EAGLE-3 tree depth of nodes %d..%d with %d parents and %d positions", f0, n, len(parents), len(pos))
	case base < 1 || base+n > h.slots:
		return nil, fmt.Errorf("cuda: EAGLE-3 tree at %d of %d nodes exceeds the head's cache of %d", base, n, h.slots)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if h.inflight {
		return nil, fmt.Errorf("cuda: EAGLE-3 tree depth while a chain is left on the device")
	}
	att, in := h.hstep(0), h.hstep(1)
	*att = stepParams{Base: int32(base), T: int32(n)}
	*in = stepParams{Base: int32(base + f0), T: int32(n - f0)}
	for i := 0; i < n; i++ {
		par := parents[i]
		switch {
		case tokens[i] < 0 || int(tokens[i]) >= c.Vocab:
			return nil, fmt.Errorf("cuda: EAGLE-3 tree node %d: token id %d outside the vocabulary of %d", i, tokens[i], c.Vocab)
		case par < -1 || int(par) >= i:
			return nil, fmt.Errorf("cuda: EAGLE-3 tree node %d has parent %d", i, par)
		case pos[i] < 0 || int(pos[i]) >= h.maxPos:
			return nil, fmt.Errorf("cuda: EAGLE-3 tree node %d: position %d outside [0, %d)", i, pos[i], h.maxPos)
		}
		att.Tokens[i], att.Pos[i], att.Mask[i] = tokens[i], pos[i], 1<<i
		if par >= 0 {
			att.Mask[i] |= att.Mask[par]
		}
		if i >= f0 {
			in.Tokens[i-f0], in.Pos[i-f0], in.Mask[i-f0] = tokens[i], pos[i], 1<<(i-f0)
		}
	}
	unbind, err := h.dev.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	defer h.noPDL()()
	if err := cu.MemcpyHtoDAsync(h.steps, h.hsteps.p, int64(2*stepBytes), h.stream); err != nil {
		return nil, fmt.Errorf("cuda: EAGLE-3 tree step parameters: %w", err)
	}
	rowBytes := int64(4 * c.Dim)
	row := func(r int) cu.DevicePtr { return h.tres + cu.DevicePtr(int64(r)*rowBytes) }
	for i := f0; i < n; i++ {
		if err := cu.MemcpyDtoDAsync(row(1+i), row(1+int(parents[i])), rowBytes, h.stream); err != nil {
			return nil, fmt.Errorf("cuda: EAGLE-3 tree node %d's hidden input: %w", i, err)
		}
	}
	T := n - f0
	res := row(1 + f0)
	if err := h.eagleIn(h.emb, res, T, 1); err != nil {
		return nil, err
	}
	h.lres, h.lstep, h.lrow0 = res, 0, f0
	err = model.Layers((*headOps)(h), &h.mcfg, T)
	h.lrow0 = 0
	if err != nil {
		return nil, err
	}
	if err := h.matvec("output", h.logits, c.DraftVocab, res, 0, h.lm, T, 0, h.outNorm); err != nil {
		return nil, err
	}
	return h.logitsBack(T, "tree depth")
}

// SampledChain implements eagle3.SampledRunner: the extended rows (as
// Extend), then len(u) draft steps, ungraphed (each step's uniform number
// is its sampling kernel's argument): lm_head with the final norm into
// logits row j, sample_row (kernels/sample.cu: sample.Sampler.SampleU's
// pick and Probs's q, to the bit) over the draft vocabulary into sids[j]
// with q over the row, and the draft id into the next step's token, which
// eagle_in looks up in embD (the embedding's rows by draft id). The ids
// and q come back with one synchronize.
func (h *Head) SampledChain(ctx context.Context, first int, tokens []int32, feats []float32, p sample.Params, u []float64) ([]int32, []float32, error) {
	k := len(u)
	if k < 1 || k > spec.MaxK {
		return nil, nil, fmt.Errorf("cuda: EAGLE-3 sampled chain of %d tokens", k)
	}
	if err := checkSampleParams(p, u); err != nil {
		return nil, nil, err
	}
	if first+len(tokens)+k-1 > h.slots {
		return nil, nil, fmt.Errorf("cuda: EAGLE-3 sampled chain at %d of %d rows and %d tokens exceeds the head's cache of %d", first, len(tokens), k, h.slots)
	}
	if h.inflight { // a chain left on the device: its inputs' pinned copy is not to be overwritten yet
		if err := h.readBack(); err != nil {
			return nil, nil, err
		}
	}
	unbind, err := h.dev.Bind()
	if err != nil {
		return nil, nil, err
	}
	defer unbind()
	if err := h.uploadDraftEmbed(); err != nil {
		return nil, nil, err
	}
	c := h.cfg
	dv := c.DraftVocab
	n := first + len(tokens) // slot and position of draft step 1
	// Draft step j's parameters (j >= 1) go to the device with the rows'
	// (every chunk copies all MaxK steps and the features), and the rows'
	// last chunk is not waited for (pending: its event is unused).
	for j := 1; j < k; j++ {
		*h.hstep(j) = stepParams{Base: int32(n + j - 1), T: 1}
		s := h.hstep(j)
		s.Pos[0], s.Mask[0] = int32(n+j-1), 1
	}
	if err := h.rows(ctx, first, tokens, feats, 0, true); err != nil {
		return nil, nil, err
	}
	defer h.noPDL()()
	nt := len(tokens)
	last := h.res + cu.DevicePtr(4*int64(nt-(nt-1)/MaxTokens*MaxTokens-1)*int64(c.Dim)) // the last extended row
	for j := 0; j < k; j++ {
		if j > 0 {
			if err := h.eagleIn(h.embD, last, 1, j); err != nil {
				return nil, nil, err
			}
			h.lres, h.lstep = last, j
			if err := model.Layers((*headOps)(h), &h.mcfg, 1); err != nil {
				return nil, nil, err
			}
		}
		row := h.logits + cu.DevicePtr(4*j*dv)
		if err := h.matvec("output", row, dv, last, 0, h.lm, 1, 0, h.outNorm); err != nil {
			return nil, nil, err
		}
		if err := enqueueSample(h.dev, h.stream, h.sids+cu.DevicePtr(4*j), 0, row, row, dv, p, u[j:j+1]); err != nil {
			return nil, nil, err
		}
		if j+1 < k {
			if err := cu.MemcpyDtoDAsync(h.dstep(j+1)+tokensOff, h.sids+cu.DevicePtr(4*j), 4, h.stream); err != nil {
				return nil, nil, fmt.Errorf("cuda: EAGLE-3 sampled token %d into the next step: %w", j, err)
			}
		}
	}
	if err := cu.MemcpyDtoHAsync(h.hout.p, h.sids, int64(4*k), h.stream); err != nil {
		return nil, nil, fmt.Errorf("cuda: copy sampled draft ids back: %w", err)
	}
	q, err := h.logitsBack(k, "sampled chain")
	if err != nil {
		return nil, nil, err
	}
	return h.hout.ints()[:k], q, nil
}

// uploadDraftEmbed uploads embD, the embedding's rows of the draft
// vocabulary by draft id (gathered on the host from the head's weights,
// which outlive the device head), when first needed; with the identity
// map it is the embedding itself.
func (h *Head) uploadDraftEmbed() error {
	if h.hasD {
		return nil
	}
	w := h.src
	ident := len(w.DraftToTarget) == h.cfg.Vocab
	for d, t := range w.DraftToTarget {
		ident = ident && int(t) == d
	}
	if ident {
		h.embD, h.hasD = h.emb, true
		return nil
	}
	e := w.Embed
	if e.Scales != nil {
		return fmt.Errorf("cuda: EAGLE-3 sampled chain: the embedding (%v) has scales; gathering its draft rows is not implemented", e.DType)
	}
	if _, err := e.DType.Bytes(e.Cols()); err != nil {
		return fmt.Errorf("cuda: EAGLE-3 draft embedding: %w", err)
	}
	data := make([]byte, 0, e.RowBytes()*len(w.DraftToTarget))
	for _, t := range w.DraftToTarget {
		data = append(data, e.Row(int(t))...)
	}
	var err error
	g := &tensor.Tensor{Name: e.Name + "[draft vocabulary]", DType: e.DType, Shape: []int{len(w.DraftToTarget), e.Cols()}, Data: data}
	if h.embD, err = h.m.uploadStacked(false, "", g); err != nil {
		return fmt.Errorf("cuda: EAGLE-3 draft embedding: %w", err)
	}
	h.hasD = true
	return nil
}
