// Package cu provides an idiomatic interface to the CUDA Driver API.
package cu // import "gorgonia.org/cu"

// This file implements CUDA driver context management

//#include <cuda.h>
import "C"
import (
	"fmt"
)

const initHtml = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html"

// InitErr is why cuInit failed when the package was initialized (no
// device, no usable driver), or nil.
//
// rigscope patch: upstream prints the error and calls os.Exit(1) here, so
// a CUDA build could not even start on a machine without a GPU; the
// program now decides (the CPU path and the panel keep working, and
// --device cuda says why it cannot run).
var InitErr error

func init() {
	// Given that the flags must be 0, the CUDA driver is initialized at the package level
	// http://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html
	if err := result(C.cuInit(C.uint(0))); err != nil {
		InitErr = fmt.Errorf("cuInit: %v (see %s)", err, initHtml)
	}
}

// Version returns the version of the CUDA driver
func Version() int {
	var v C.int
	if err := result(C.cuDriverGetVersion(&v)); err != nil {
		return -1
	}
	return int(v)
}
