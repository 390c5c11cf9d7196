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
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := Parse(data)
		if err != nil {
			return
		}
		for _, ti := range sf.Tensors {
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
