package llama2c

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// Write writes a version-0 checkpoint for header h, taking each weight by
// canonical name from src (F32 tensors of the shapes Open hands out).
// freq_cis_real/imag are computed (theta 10000) when src lacks them.
func Write(w io.Writer, h Header, src func(name string) (*tensor.Tensor, error)) error {
	if _, err := h.Validate(); err != nil {
		return fmt.Errorf("llama2c: write: %w", err)
	}
	bw := bufio.NewWriter(w)
	hdr := make([]byte, HeaderBytes)
	for i, v := range []int32{h.Dim, h.HiddenDim, h.Layers, h.Heads, h.KVHeads, h.VocabSize, h.SeqLen} {
		binary.LittleEndian.PutUint32(hdr[4*i:], uint32(v))
	}
	bw.Write(hdr)
	for _, s := range h.sections() {
		for l := range max(s.layers, 1) {
			name := globalNames[s.name]
			if s.layers > 0 {
				name = model.LayerName(l, canonical[s.name])
			}
			t, err := src(name)
			if err != nil && (name == "freq_cis_real" || name == "freq_cis_imag") {
				t, err = freqCis(name, int(h.SeqLen), h.HeadDim()), nil
			}
			if err != nil {
				return fmt.Errorf("llama2c: write: %w", err)
			}
			if t.DType != tensor.F32 {
				return fmt.Errorf("llama2c: write: tensor %q is %v, want F32", name, t.DType)
			}
			if err := t.ExpectShape(s.shape...); err != nil {
				return fmt.Errorf("llama2c: write: %w", err)
			}
			if err := t.Check(); err != nil {
				return fmt.Errorf("llama2c: write: %w", err)
			}
			bw.Write(t.Data)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("llama2c: write: %w", err)
	}
	return nil
}

// freqCis computes the RoPE table llama2.c's export wrote (theta 10000):
// [seq, headDim/2] of cos (real) or sin (imag) of pos * theta^(-2i/headDim).
func freqCis(name string, seq, headDim int) *tensor.Tensor {
	half := headDim / 2
	data := make([]byte, 4*seq*half)
	for p := range seq {
		for i := range half {
			a := float64(p) * math.Pow(10000, -float64(2*i)/float64(headDim))
			v := math.Cos(a)
			if name == "freq_cis_imag" {
				v = math.Sin(a)
			}
			binary.LittleEndian.PutUint32(data[4*(p*half+i):], math.Float32bits(float32(v)))
		}
	}
	return &tensor.Tensor{Name: name, DType: tensor.F32, Shape: []int{seq, half}, Data: data}
}
