package model

import (
	"fmt"

	"rigscope/engine/tensor"
)

// KVCache holds one rank's keys and values by position (slot). Slots
// [0, Len) are valid; a forward pass appends at Len. Speculative decoding
// rewinds it (Rewind) or keeps one path of a verified tree (KeepPath).
type KVCache struct {
	Layers, Slots, Width int         // Width = kvl*hd
	K, V                 [][]float32 // per layer (Slots, Width)
	Len                  int
	// BF16: keys and values are rounded to bf16 (to nearest even) as they
	// are stored, before any read; the storage stays float32. This is the
	// GPU's bf16 cache (gpu/cuda's default) on the CPU, so
	// that the CPU stays its oracle. Latent caches are not rounded.
	BF16 bool
}

// NewKVCache allocates a cache of slots positions for kvHeads*headDim floats.
func NewKVCache(layers, slots, width int) *KVCache {
	c := &KVCache{Layers: layers, Slots: slots, Width: width, K: make([][]float32, layers), V: make([][]float32, layers)}
	for l := range c.K {
		c.K[l] = make([]float32, slots*width)
		c.V[l] = make([]float32, slots*width)
	}
	return c
}

// NewLatentCache allocates a cache of slots positions holding one
// width-float row per position in K (latent attention's latent and rope
// key); V is nil.
func NewLatentCache(layers, slots, width int) *KVCache {
	c := &KVCache{Layers: layers, Slots: slots, Width: width, K: make([][]float32, layers)}
	for l := range c.K {
		c.K[l] = make([]float32, slots*width)
	}
	return c
}

// store writes T rows of keys k and values v (T, Width) of layer l at
// slots [base, base+T), rounded to bf16 when c.BF16.
func (c *KVCache) store(l, base, T int, k, v []float32) {
	w := c.Width
	K, V := c.K[l][base*w:(base+T)*w], c.V[l][base*w:(base+T)*w]
	copy(K, k[:T*w])
	copy(V, v[:T*w])
	if c.BF16 {
		for i := range K {
			K[i] = tensor.BF16ToF32(tensor.F32ToBF16(K[i]))
			V[i] = tensor.BF16ToF32(tensor.F32ToBF16(V[i]))
		}
	}
}

// Rewind forgets every slot at or after n.
func (c *KVCache) Rewind(n int) error {
	if n < 0 || n > c.Len {
		return fmt.Errorf("kv cache: rewind to %d outside [0, %d]", n, c.Len)
	}
	c.Len = n
	return nil
}

// KeepPath keeps, of the slots appended after base, the ones at offsets
// path (ascending) and moves them to base, base+1, ...; Len becomes
// base+len(path). Used after tree verification.
func (c *KVCache) KeepPath(base int, path []int) error {
	if base < 0 || base > c.Len {
		return fmt.Errorf("kv cache: base %d outside [0, %d]", base, c.Len)
	}
	for j, off := range path {
		src, dst := base+off, base+j
		if src >= c.Len || off < j {
			return fmt.Errorf("kv cache: path %v does not fit %d slots after %d", path, c.Len-base, base)
		}
		if src == dst {
			continue
		}
		w := c.Width
		for l := 0; l < c.Layers; l++ {
			copy(c.K[l][dst*w:(dst+1)*w], c.K[l][src*w:(src+1)*w])
			if c.V != nil {
				copy(c.V[l][dst*w:(dst+1)*w], c.V[l][src*w:(src+1)*w])
			}
		}
	}
	c.Len = base + len(path)
	return nil
}

// Bytes is the cache's memory.
func (c *KVCache) Bytes() int64 {
	n := int64(c.Layers) * int64(c.Slots) * int64(c.Width) * 4
	if c.V != nil {
		n *= 2
	}
	return n
}
