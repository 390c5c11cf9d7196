package quant

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"rigscope/engine/loader/gguf"
	"rigscope/internal/fixtures"
)

// TestWriteMatchesLlamaQuantize re-encodes gocoder-14m.Q8_0.gguf as q4_k_m
// and compares every tensor, type and bytes, with the file llama-quantize
// made from the same Q8_0 file (RIGSCOPE_LLAMA_Q4KM, which
// bench/peer-kquants.sh sets; skipped without it).
func TestWriteMatchesLlamaQuantize(t *testing.T) {
	peer := os.Getenv("RIGSCOPE_LLAMA_Q4KM")
	if peer == "" {
		t.Skip("RIGSCOPE_LLAMA_Q4KM (llama-quantize's Q4_K_M of gocoder-14m.Q8_0.gguf) not set")
	}
	src := fixtures.Path(t, "gocoder-14m.Q8_0.gguf")
	ours := filepath.Join(t.TempDir(), "gocoder-14m.Q4_K_M.gguf")
	if _, err := WriteFile(src, Q4KM, ours, false); err != nil {
		t.Fatal(err)
	}
	a, err := gguf.Open(ours)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := gguf.Open(peer)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(a.Tensors) != len(b.Tensors) {
		t.Fatalf("%d tensors, llama-quantize wrote %d", len(a.Tensors), len(b.Tensors))
	}
	var blocks int
	for _, ti := range b.Tensors {
		tb, err := b.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ta, err := a.Tensor(ti.Name)
		if err != nil {
			t.Fatalf("%s: %v", ti.Name, err)
		}
		if ta.DType != tb.DType {
			t.Errorf("%s: %v, llama-quantize chose %v", ti.Name, ta.DType, tb.DType)
			continue
		}
		bb := tb.DType.BlockBytes()
		for i := 0; i < len(tb.Data)/bb; i++ {
			if !bytes.Equal(ta.Data[i*bb:(i+1)*bb], tb.Data[i*bb:(i+1)*bb]) {
				t.Fatalf("%s (%v): block %d differs from llama-quantize's", ti.Name, tb.DType, i)
			}
		}
		blocks += len(tb.Data) / bb
	}
	t.Logf("%d tensors, %d blocks: types and bytes equal llama-quantize's", len(b.Tensors), blocks)
}
