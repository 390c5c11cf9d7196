package loader

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"rigscope/engine/tensor"
)

// TestCheckFiniteKQuants: a NaN or Inf in any f16 scale of a k-quant block
// (Q4_K, Q5_K: d and dmin; Q6_K: d) refuses the tensor, naming the block.
func TestCheckFiniteKQuants(t *testing.T) {
	for _, tc := range []struct {
		dt   tensor.DType
		offs []int
	}{{tensor.Q4_K, []int{0, 2}}, {tensor.Q5_K, []int{0, 2}}, {tensor.Q6_K, []int{208}}} {
		bb := tc.dt.BlockBytes()
		fresh := func() *tensor.Tensor {
			w := &tensor.Tensor{Name: "w", DType: tc.dt, Shape: []int{2, 512}, Data: make([]byte, 4*bb)}
			for b := range 4 {
				for _, o := range tc.offs {
					binary.LittleEndian.PutUint16(w.Data[b*bb+o:], tensor.F32ToF16(0.01))
				}
			}
			return w
		}
		if err := checkFinite(fresh()); err != nil {
			t.Errorf("%v finite: %v", tc.dt, err)
		}
		for _, o := range tc.offs {
			for _, bits := range []uint16{0x7e00, 0x7c00, 0xfc00} {
				w := fresh()
				binary.LittleEndian.PutUint16(w.Data[2*bb+o:], bits)
				err := checkFinite(w)
				want := fmt.Sprintf("(%v [2 512]): block 2 has scale", tc.dt)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%v scale at %d = %#04x: error %v, want one containing %q", tc.dt, o, bits, err, want)
				}
			}
		}
	}
}
