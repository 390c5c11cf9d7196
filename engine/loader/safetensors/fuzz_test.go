package safetensors

import (
	"testing"

	"rigscope/engine/tensor"
)

// FuzzParse feeds arbitrary bytes to Parse, seeded with small valid files.
func FuzzParse(f *testing.F) {
	f.Add(writeBytes(f, []*tensor.Tensor{bf16Tensor("a", 2, 3), bf16Tensor("b", 4)}))
	f.Add(withHeader(`{"d2t":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}`, 16))
	f.Add(withHeader(`{}`, 0))
	f.Add(withHeader(`{"w":{"dtype":"F8_E4M3","shape":[2,4],"data_offsets":[0,8]},"w_scale":{"dtype":"F32","shape":[],"data_offsets":[8,12]}}`, 12))
	f.Add(withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}}`, 12)) // a hole
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := Parse(data)
		if err != nil {
			return
		}
		var end uint64
		for _, ti := range sf.Tensors {
			if ti.Begin != end {
				t.Fatalf("accepted tensor %q at %d after data ending at %d", ti.Name, ti.Begin, end)
			}
			end = ti.End
			if f8, err := sf.FP8Tensor(ti.Name); err == nil {
				if err := f8.CheckBytes(); err != nil || f8.DType != tensor.F8_E4M3 {
					t.Fatalf("FP8Tensor(%q) %v failed CheckBytes: %v", ti.Name, f8.DType, err)
				}
			} else if ti.FileDType == "F8_E4M3" && len(ti.Shape) > 0 {
				t.Fatalf("FP8Tensor(%q) of %v: %v", ti.Name, ti.Shape, err)
			}
			tt, err := sf.Tensor(ti.Name)
			if err != nil {
				continue
			}
			if err := tt.Check(); err != nil {
				t.Fatalf("Tensor(%q) failed Check: %v", ti.Name, err)
			}
		}
	})
}
