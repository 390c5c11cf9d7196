//go:build cuda

package main

import (
	"rigscope/engine"
	"rigscope/gpu/cuda"
)

// A -tags cuda build offers --device cuda (gpu/cuda).
func init() { engine.RegisterDevice("cuda", engine.Device{Target: cuda.NewTarget, Head: cuda.NewHead}) }
