package tensor_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"

	"rigscope/engine/tensor"
)

// TestEncodeVsGGML compares Encode with ggml's own quantizer block by block
// on the same rows: RIGSCOPE_GGML_QUANTREF names a build of
// bench/peer/quantref.cpp (see bench/peer-kquants.sh). Skipped without it.
func TestEncodeVsGGML(t *testing.T) {
	ref := os.Getenv("RIGSCOPE_GGML_QUANTREF")
	if ref == "" {
		t.Skip("RIGSCOPE_GGML_QUANTREF (a build of bench/peer/quantref.cpp) not set")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	const rows, cols = 64, 1024
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * 0.02
		if i%173 == 0 {
			x[i] *= 25
		}
	}
	raw := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	for _, tc := range []struct {
		dt      tensor.DType
		ggml    string
		minSame float64 // fraction of blocks that must be byte-identical
	}{{tensor.Q8_0, "8", 1}, {tensor.Q4_0, "2", 1}, {tensor.Q4_K, "12", 0.99}, {tensor.Q6_K, "14", 0.99}} {
		cmd := exec.Command(ref, tc.ggml, "1024")
		cmd.Stdin = bytes.NewReader(raw)
		want, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s: %v", tc.dt, ref, err)
		}
		rb, _ := tc.dt.Bytes(cols)
		got := make([]byte, rows*rb)
		for r := range rows {
			tensor.Encode(got[r*rb:(r+1)*rb], tc.dt, x[r*cols:(r+1)*cols])
		}
		if len(want) != len(got) {
			t.Fatalf("%v: ggml wrote %d bytes, Encode %d", tc.dt, len(want), len(got))
		}
		bb, same, n := tc.dt.BlockBytes(), 0, len(got)/tc.dt.BlockBytes()
		for b := range n {
			if bytes.Equal(got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb]) {
				same++
			}
		}
		t.Logf("%v: %d of %d blocks byte-identical to ggml's", tc.dt, same, n)
		if float64(same) < tc.minSame*float64(n) {
			t.Errorf("%v: only %d of %d blocks equal ggml's", tc.dt, same, n)
		}
	}
}
