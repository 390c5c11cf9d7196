// Package kernels holds the CUDA kernels of rigscope's GPU path as PTX
// text, compiled from kernels.cu (which includes tc.cu, quant.cu, attention.cu
// and allreduce.cu) and embedded in the binary. gpu/cuda loads
// the PTX that matches the device (sm_90 on Hopper, sm_80 otherwise) with
// cu.LoadData; the driver compiles it for the actual chip at load.
//
// Rebuild after editing any .cu file here (nvcc 11.8 from Debian non-free's
// nvidia-cuda-toolkit, or nvcc 13.0 on the GPU machine):
//
//	go generate ./kernels
//
// The generated .ptx files are committed so that building needs no nvcc.
package kernels

import _ "embed"

//go:generate nvcc -allow-unsupported-compiler -ptx -O3 -arch=compute_80 -o kernels_sm80.ptx kernels.cu
//go:generate nvcc -allow-unsupported-compiler -ptx -O3 -arch=compute_90 -o kernels_sm90.ptx kernels.cu

// PTX80 is kernels.cu compiled for compute capability 8.0 (runs on 8.x and
// 9.x through the driver's JIT).
//
//go:embed kernels_sm80.ptx
var PTX80 string

// PTX90 is kernels.cu compiled for compute capability 9.0 (Hopper).
//
//go:embed kernels_sm90.ptx
var PTX90 string

// For picks the PTX for a device of compute capability major.minor.
func For(major, minor int) (name, ptx string) {
	if major >= 9 {
		return "sm_90", PTX90
	}
	return "sm_80", PTX80
}
