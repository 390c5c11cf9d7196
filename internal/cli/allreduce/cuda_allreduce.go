//go:build cuda

package allreduce

import (
	"context"
	"flag"
	"io"
	"strconv"

	"rigscope/internal/cli"
)

// CUDACommand is `rigscope cuda-allreduce` (cuda builds only).
var CUDACommand = cli.Command{
	Name:    "cuda-allreduce",
	Summary: "GPU allreduce backends (oneshot, twoshot, host, nccl) checked against a float64 sum at sizes from 1 float up; alias of allreduce-bench --device cuda",
	Run:     runCUDAAllReduce,
}

// runCUDAAllReduce is allreduce-bench --device cuda over float counts 1, 4,
// 16, ... up to --max, --max itself and the odd 1000003 (the sizes that
// exercise the kernels' tails); it fails when any sum is not exact.
func runCUDAAllReduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cuda-allreduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ranksFlag := fs.String("ranks", "2,4,8", "comma-separated rank counts (one per GPU when the machine has that many, else all on GPU 0)")
	maxN := fs.Int("max", 64<<20, "largest message in floats")
	iters := fs.Int("iters", 20, "timed calls per cell")
	backend := fs.String("backend", "oneshot,twoshot,host,nccl", "backends (allreduce-bench --device cuda --backend)")
	share := fs.Bool("share-gpu", false, "put every rank on GPU 0")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	sizes, err := cudaAllReduceSizes(*maxN)
	if err != nil {
		return err
	}
	bargs := []string{"--device", "cuda", "--backend", *backend, "--ranks", *ranksFlag, "--sizes", sizes, "--iters", strconv.Itoa(*iters)}
	if *share {
		bargs = append(bargs, "--share-gpu")
	}
	return runAllReduceBench(ctx, bargs, stdout, stderr)
}
