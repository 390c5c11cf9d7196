//go:build !cubinonly

package kernels

import _ "embed"

// ptx80 is kernels.cu compiled for compute capability 8.0 (runs on 8.x and
// 9.x through the driver's JIT), gzipped.
//
//go:embed kernels_sm80.ptx.gz
var ptx80 []byte

// ptx90 is kernels.cu compiled for compute capability 9.0 (Hopper), gzipped.
//
//go:embed kernels_sm90.ptx.gz
var ptx90 []byte
