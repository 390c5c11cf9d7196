package cpu

import (
	"math"
	"testing"

	"rigscope/engine/tensor"
)

// FuzzKQuantDot feeds arbitrary bytes as k-quant weight blocks (any scale
// bits: NaN, Inf, subnormal) and activations: the kernels must not fault
// and the assembly must give the portable kernels' bits (NaN for NaN).
func FuzzKQuantDot(f *testing.F) {
	f.Add(uint8(0), make([]byte, 144+64))
	f.Add(uint8(1), make([]byte, 176*2+16))
	f.Add(uint8(2), []byte{0x7c, 0x00, 0xff, 0x7e})
	f.Fuzz(func(t *testing.T, kindByte uint8, data []byte) {
		dt := kquantDTypes[int(kindByte)%len(kquantDTypes)]
		kind, _ := kquantKindOf(dt)
		bb := dt.BlockBytes()
		rows := 1 + int(kindByte>>2)%3
		nb := max(1, len(data)/(bb*rows))
		w := make([]byte, rows*nb*bb)
		for i := range w {
			if len(data) > 0 {
				w[i] = data[i%len(data)]
			}
		}
		x := make([]float32, nb*256)
		for i := range x {
			if len(data) > 0 {
				x[i] = float32(int8(data[(i*7)%len(data)])) / 16
			}
		}
		var a q8K
		a.size(len(x))
		quantizeRowQ8K(&a, x)
		got, want := make([]float32, rows), make([]float32, rows)
		dotKQuantRows(got, w, nb*bb, kind, &a)
		dotKQuantRowsGo(want, w, nb*bb, kind, &a)
		for r := range rows {
			g, e := got[r], want[r]
			if math.Float32bits(g) != math.Float32bits(e) && !(math.IsNaN(float64(g)) && math.IsNaN(float64(e))) {
				t.Fatalf("%v row %d of %d blocks: kernel %g, portable %g", dt, r, nb, g, e)
			}
		}
		// The row also dequantizes without faulting.
		DequantRow(make([]float32, nb*256), &tensor.Tensor{Name: "w", DType: dt, Shape: []int{rows, nb * 256}, Data: w}, 0)
	})
}
