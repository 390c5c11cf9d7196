//go:build !cuda

package allreduce

import (
	"context"
	"errors"
	"io"
)

// runCUDAAllReduceBench: this build has no CUDA backend.
func runCUDAAllReduceBench(ctx context.Context, cfg gpuBenchConfig, stdout, stderr io.Writer) error {
	return errors.New(cudaUnavailable)
}
