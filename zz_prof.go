//go:build !headless

package main

import (
	"os"
	"runtime/pprof"
)

func init() {
	if p := os.Getenv("RIGSCOPE_CPUPROFILE"); p != "" {
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}
}
