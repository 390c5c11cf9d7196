package model

// Params counts a model's weights: its attention (ordinary or latent),
// dense or MoE MLPs (every expert, the router, the shared expert), norms
// and embeddings.
func (c *Config) Params() int64 {
	dim := int64(c.Dim)
	var n int64
	for l := range c.Layers {
		if a := &c.MLA; a.Enabled() {
			h := int64(c.Heads)
			n += dim*int64(a.QRank) + int64(a.QRank) + h*int64(a.QKDim())*int64(a.QRank) + // q_a, its norm, q_b
				dim*int64(a.KVRank+a.RopeDim) + int64(a.KVRank) + h*int64(a.NopeDim+a.VDim)*int64(a.KVRank) + // kv_a, its norm, kv_b
				dim*h*int64(a.VDim) // o
		} else {
			n += dim * int64(c.HeadDim) * int64(2*c.Heads+2*c.KVHeads)
		}
		if m := &c.MoE; m.Sparse(l) {
			n += int64(m.Experts)*(3*dim*int64(m.FFN)+dim) + 3*dim*int64(m.SharedFFN)
		} else {
			n += 3 * dim * int64(c.FFN)
		}
		n += 2 * dim
	}
	emb := int64(c.Vocab) * dim
	if !c.TiedEmbed {
		emb *= 2
	}
	return n + emb + dim
}

// ActiveParams counts the weights one token reads: as Params, but of each
// MoE layer's routed experts only the PerToken it is routed to.
func (c *Config) ActiveParams() int64 {
	n := c.Params()
	if m := &c.MoE; m.Enabled() {
		sparse := int64(c.Layers - m.FirstDense)
		n -= sparse * int64(m.Experts-m.PerToken) * 3 * int64(c.Dim) * int64(m.FFN)
	}
	return n
}

// KVBytesPerToken is one rank's cache memory per position: float32 keys
// and values of kvHeads heads, or latent attention's replicated latent and
// rope key.
func (c *Config) KVBytesPerToken(kvHeads int) int64 {
	if c.MLA.Enabled() {
		return int64(c.Layers) * int64(c.MLA.KVRank+c.MLA.RopeDim) * 4
	}
	return int64(c.Layers) * int64(kvHeads) * int64(c.HeadDim) * 2 * 4
}
