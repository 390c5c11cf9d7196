//go:build cuda

package main

import (
	"rigscope/engine"
	"rigscope/gpu/cuda"
	"rigscope/internal/cli/allreduce"
	"rigscope/internal/cli/cudabench"
)

// A -tags cuda build offers --device cuda (gpu/cuda) and the GPU-only
// commands.
func init() {
	engine.RegisterDevice("cuda", cuda.NewTarget)
	commands = append(commands, cudabench.Command, allreduce.CUDACommand)
}
