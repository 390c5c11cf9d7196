package loader

import (
	"encoding/binary"
	"fmt"
	"math"

	"rigscope/engine/tensor"
)

// scaleOffsets are where a quantized block keeps its f16 scales (ggml's
// block_q8_0, block_q4_0: d; block_q4_K and block_q5_K: d, dmin; block_q6_K: d after
// ql, qh and scales).
var scaleOffsets = map[tensor.DType][]int{
	tensor.Q8_0: {0},
	tensor.Q4_0: {0},
	tensor.Q4_K: {0, 2},
	tensor.Q5_K: {0, 2},
	tensor.Q6_K: {208},
}

// checkFinite refuses a weight holding NaN or Inf where that is cheap to
// see: every element of a vector (the norms), and every block scale of a
// quantized matrix (two bytes a block). A float matrix is not scanned: that
// would read the whole file at load.
func checkFinite(t *tensor.Tensor) error {
	if offs, ok := scaleOffsets[t.DType]; ok {
		bb := t.DType.BlockBytes()
		for b := 0; b+bb <= len(t.Data); b += bb {
			for _, o := range offs {
				if v := tensor.F16ToF32(binary.LittleEndian.Uint16(t.Data[b+o:])); !finite(v) {
					return fmt.Errorf("tensor %q (%v %v): block %d has scale %g; the file is corrupt", t.Name, t.DType, t.Shape, b/bb, v)
				}
			}
		}
		return nil
	}
	if len(t.Shape) != 1 {
		return nil
	}
	for i := range t.Elems() {
		if v := floatAt(t, i); !finite(v) {
			return fmt.Errorf("tensor %q (%v %v): element %d is %g; the file is corrupt", t.Name, t.DType, t.Shape, i, v)
		}
	}
	return nil
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// floatAt is element i of an F32, F16 or BF16 tensor (0 for other dtypes).
func floatAt(t *tensor.Tensor, i int) float32 {
	switch t.DType {
	case tensor.F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	case tensor.F16:
		return tensor.F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
	case tensor.BF16:
		return tensor.BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
	}
	return 0
}
