//go:build !cuda

package allreduce

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Without the cuda build tag, --device cuda fails with how to get it.
func TestAllReduceBenchCUDAWithoutTag(t *testing.T) {
	for _, args := range [][]string{
		{"--device", "cuda"},
		{"--device", "cuda", "--backend", "nccl,auto", "--ranks", "8", "--sizes", "1K:64M"},
	} {
		var out, errOut bytes.Buffer
		err := runAllReduceBench(context.Background(), args, &out, &errOut)
		if err == nil {
			t.Fatalf("allreduce-bench %v: no error in a build without cuda", args)
		}
		for _, want := range []string{"built without CUDA", "-tags 'headless cuda'", "bench/cuda/README.md"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("allreduce-bench %v: error %q lacks %q", args, err, want)
			}
		}
		if out.Len() != 0 {
			t.Errorf("allreduce-bench %v printed %q before failing", args, out.String())
		}
	}
}
