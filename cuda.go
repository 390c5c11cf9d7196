//go:build cuda

package main

import (
	"rigscope/engine"
	"rigscope/gpu/cuda"
	"rigscope/internal/cli/allreduce"
	"rigscope/internal/cli/cudabench"
)

// A -tags cuda build offers --device cuda (gpu/cuda: targets and EAGLE-3
// heads) and the GPU-only commands.
func init() {
	engine.RegisterDevice("cuda", engine.Device{Target: cuda.NewTarget, Head: cuda.NewHead, Backends: cuda.StepBackendInfo, MaxContext: cuda.MaxContext})
	commands = append(commands, cudabench.Command, allreduce.CUDACommand)
}
