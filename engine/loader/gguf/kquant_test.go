package gguf

import (
	"bytes"
	"testing"

	"rigscope/engine/tensor"
)

// TestKQuantTensors: Q4_K, Q5_K and Q6_K tensors round-trip through
// Write and Parse with their type and bytes (Q5_K was refused before issue
// 23), and a row that is not whole 256-blocks is refused at write.
func TestKQuantTensors(t *testing.T) {
	var ts []*tensor.Tensor
	for i, dt := range []tensor.DType{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		w := &tensor.Tensor{Name: dt.String(), DType: dt, Shape: []int{2, 512}, Data: make([]byte, 4*dt.BlockBytes())}
		for j := range w.Data {
			w.Data[j] = byte(j*7 + i)
		}
		ts = append(ts, w)
	}
	f, err := Parse(writeBytes(t, nil, ts))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ts {
		got, err := f.Tensor(w.Name)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		if got.DType != w.DType || !bytes.Equal(got.Data, w.Data) || got.Rows() != 2 || got.Cols() != 512 {
			t.Errorf("%s: read back as %v %v", w.Name, got.DType, got.Shape)
		}
	}
	bad := []TensorSpec{{Name: "w", DType: tensor.Q5_K, Shape: []int{2, 384}}}
	if err := WriteFunc(&bytes.Buffer{}, nil, bad, func(int) ([]byte, error) { return nil, nil }); err == nil {
		t.Error("a Q5_K row of 384 was written")
	}
}
