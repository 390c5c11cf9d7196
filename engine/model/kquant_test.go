package model

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

func TestWidenKQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const rows, cols = 70, 512 // more rows than one worker's share
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		rb, _ := dt.Bytes(cols)
		data := make([]byte, rows*rb)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		for b := 0; b < len(data); b += dt.BlockBytes() { // sane f16 scales
			off := []int{0, 2}
			if dt == tensor.Q6_K {
				off = []int{208}
			}
			for _, o := range off {
				binary.LittleEndian.PutUint16(data[b+o:], tensor.F32ToF16(rng.Float32()/32))
			}
		}
		q := &tensor.Tensor{Name: "w", DType: dt, Shape: []int{rows, cols}, Data: data}
		for _, env := range []string{"", "f16"} { // the default (Q8_0), and F16
			t.Setenv("RIGSCOPE_KQUANT", env)
			to := kquantTarget()
			w := widenKQuant(q)
			if w.DType != to || w.Rows() != rows || w.Cols() != cols {
				t.Fatalf("%v: widened to %v %v, want %v", dt, w.DType, w.Shape, to)
			}
			if err := w.Check(); err != nil {
				t.Fatal(err)
			}
			vals := make([]float32, cols)
			want := make([]byte, len(w.Row(0)))
			for r := range rows {
				cpu.DequantRow(vals, q, r)
				tensor.Encode(want, to, vals)
				if !bytes.Equal(w.Row(r), want) {
					t.Fatalf("%v to %v: row %d differs from the encoded decoding", dt, to, r)
				}
			}
		}
	}
	f := &tensor.Tensor{Name: "n", DType: tensor.F32, Shape: []int{4}, Data: make([]byte, 16)}
	if widenKQuant(f) != f {
		t.Error("an F32 tensor was copied")
	}
}
