// Package kernels holds the CUDA kernels of rigscope's GPU path as PTX
// text, compiled from kernels.cu (which includes tc.cu, quant.cu, attention.cu
// and allreduce.cu) and embedded in the binary, gzip-compressed (the PTX
// of every kernel instantiation is about 14 MB of text per architecture,
// 2.5 MB compressed). gpu/cuda loads the PTX that matches the device
// (sm_90 on Hopper, sm_80 otherwise) with cu.LoadData; the driver compiles
// it for the actual chip at load.
//
// Rebuild after editing any .cu file here (nvcc 11.8 from Debian non-free's
// nvidia-cuda-toolkit, or nvcc 13.0 on the GPU machine):
//
//	go generate ./kernels
//
// The generated .ptx.gz files are committed so that building needs no
// nvcc; the .ptx text beside them is kept for reading, not committed.
package kernels

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"

	_ "embed"
)

//go:generate sh -c "nvcc -allow-unsupported-compiler -ptx -O3 -arch=compute_80 -o kernels_sm80.ptx kernels.cu && gzip -9 -n -k -f kernels_sm80.ptx"
//go:generate sh -c "nvcc -allow-unsupported-compiler -ptx -O3 -arch=compute_90 -o kernels_sm90.ptx kernels.cu && gzip -9 -n -k -f kernels_sm90.ptx"

// ptx80 is kernels.cu compiled for compute capability 8.0 (runs on 8.x and
// 9.x through the driver's JIT), gzipped.
//
//go:embed kernels_sm80.ptx.gz
var ptx80 []byte

// ptx90 is kernels.cu compiled for compute capability 9.0 (Hopper), gzipped.
//
//go:embed kernels_sm90.ptx.gz
var ptx90 []byte

var (
	text80 = sync.OnceValues(func() (string, error) { return gunzip(ptx80) })
	text90 = sync.OnceValues(func() (string, error) { return gunzip(ptx90) })
)

func gunzip(b []byte) (string, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// For picks the PTX for a device of compute capability major.minor.
func For(major, minor int) (name, ptx string, err error) {
	name, text := "sm_80", text80
	if major >= 9 {
		name, text = "sm_90", text90
	}
	if ptx, err = text(); err != nil {
		return "", "", fmt.Errorf("kernels: the embedded %s PTX does not decompress (%w): rebuild it with go generate ./kernels", name, err)
	}
	return name, ptx, nil
}
