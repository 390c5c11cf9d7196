package cuda

import "rigscope/engine/tensor"

// Host-side layout of the quantized products (kernels/quant.cu): they need
// no GPU (and no cuda build tag), so quant_layout_test.go checks them, and
// a Go model of the kernels' block decoding, everywhere.

// quantPad is the zero bytes after a quantized matrix: the kernels read
// the unaligned types (Q4_0, Q8_0, Q6_K) through aligned 16-byte windows
// that may end up to 15 bytes past the last block (win in quant.cu).
const quantPad = 32

// mqSplit is how many of a block's 4 warps split one row group's units
// (ks in quant.cu) for a matrix of rows rows: 1 (each warp its own 4 rows,
// the most units per lane, the least per-thread overhead) where that
// still makes 16 warps per SM, else 2, else 4 (llama-8b: gate/up and the
// output projection 1, qkv 2, wo and down 4). It depends on the shape and
// the device only, never on T, so every T sums a row in the same order.
func mqSplit(rows, sms int) int {
	for _, ks := range []int{1, 2} {
		if (rows+3)/4*ks >= 16*sms {
			return ks
		}
	}
	return 4
}

// qxPerm is the order qx stores a type's activation groups in (PERM in
// quant.cu): 0 plain (Q8_0, Q4_0), 1 (Q4_K, Q5_K), 2 (Q6_K).
func qxPerm(dt tensor.DType) int {
	switch dt {
	case tensor.Q4_K, tensor.Q5_K:
		return 1
	case tensor.Q6_K:
		return 2
	}
	return 0
}

// qxSlot is qx_slot in quant.cu: the slot of 16-element group g of a row
// in activation order perm.
func qxSlot(perm, g int) int {
	base, l := g&^15, g&15
	switch perm {
	case 1:
		return base + l&12 + 2*(l&1) + (l>>1)&1
	case 2:
		n, k, h := l>>3, (l>>1)&3, l&1
		return base + 8*n + 4*(k&1) + 2*h + k>>1
	}
	return g
}
