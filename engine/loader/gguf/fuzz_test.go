package gguf

import (
	"testing"

	"rigscope/engine/tensor"
)

// FuzzParse feeds arbitrary bytes to Parse, seeded with small valid files.
// Parse must never panic, and every tensor it accepts must pass Check.
func FuzzParse(f *testing.F) {
	f.Add(writeBytes(f, sampleKV(), []*tensor.Tensor{f32Tensor("a", 2, 3), q80Tensor("b", 1, 32)}))
	f.Add(writeBytes(f, []KV{{"general.alignment", uint32(8)}, {"x", []any{[]int32{1}}}}, []*tensor.Tensor{f32Tensor("w", 4)}))
	f.Add(writeBytes(f, nil, nil))
	f.Add([]byte("GGUF"))
	// The first tensor relabelled from Q8_0 to F32, in bounds (its type
	// is at 53): the layout check refuses it.
	relabelled := writeBytes(f, nil, []*tensor.Tensor{q80Tensor("a", 32, 32), f32Tensor("b", 32, 32)})
	relabelled[53] = byte(TypeF32)
	f.Add(relabelled)
	f.Fuzz(func(t *testing.T, data []byte) {
		gf, err := Parse(data)
		if err != nil {
			return
		}
		if err := checkLayout(gf.Tensors, gf.Alignment, uint64(len(data))-min(gf.DataOffset, uint64(len(data)))); err != nil {
			t.Fatalf("Parse accepted a file whose layout fails: %v", err)
		}
		for _, ti := range gf.Tensors {
			if !ti.Type.Supported() {
				continue
			}
			tt, err := gf.Tensor(ti.Name)
			if err != nil {
				continue // e.g. Check rejects; must not panic
			}
			if err := tt.Check(); err != nil {
				t.Fatalf("Tensor(%q) returned a tensor failing Check: %v", ti.Name, err)
			}
		}
		for _, kv := range gf.KV {
			gf.Uint(kv.Key)
			gf.Float(kv.Key)
			gf.Int32s(kv.Key)
		}
	})
}
