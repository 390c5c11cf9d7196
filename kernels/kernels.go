// Package kernels holds the CUDA kernels of rigscope's GPU path as PTX
// text, compiled from kernels.cu (which includes tc.cu, quant.cu, attention.cu
// and allreduce.cu) and embedded in the binary, gzip-compressed (the PTX
// of every kernel instantiation is about 14 MB of text per architecture,
// 2.5 MB compressed). gpu/cuda loads the image that matches the device
// with cu.LoadData: on compute capability 9.0 (H100, H200) the sm_90 cubin
// that ptxas built from the sm_90 PTX (machine code: nothing to compile at
// load), else the PTX (sm_90 on 9.x and newer, sm_80 otherwise), which the
// driver compiles for the actual chip at load: 30-40 s for this much PTX
// the first time, then from the driver's cache (~/.nv/ComputeCache).
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
//go:generate sh -c "ptxas -arch=sm_90 -O3 -o kernels_sm90.cubin kernels_sm90.ptx && gzip -9 -n -k -f kernels_sm90.cubin"

// cubin90 is ptx90 compiled by ptxas for sm_90 exactly (H100, H200),
// gzipped.
//
//go:embed kernels_sm90.cubin.gz
var cubin90 []byte

var (
	text80  = sync.OnceValues(func() (string, error) { return gunzip(ptx80) })
	text90  = sync.OnceValues(func() (string, error) { return gunzip(ptx90) })
	image90 = sync.OnceValues(func() (string, error) { return gunzip(cubin90) })
)

func gunzip(b []byte) (string, error) {
	if len(b) == 0 {
		return "", fmt.Errorf("not in this build (-tags cubinonly embeds only the sm_90 cubin)")
	}
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

// Image is one module image the driver can load: a cubin or PTX.
type Image struct {
	Name string // "sm_90 cubin", "sm_90", "sm_80"
	Data func() (string, error)
}

// For lists the images for a device of compute capability major.minor,
// the one to try first first: the sm_90 cubin on 9.0, then the PTX the
// driver compiles at load (sm_90 on 9.x and newer, sm_80 otherwise).
func For(major, minor int) []Image {
	ptx := Image{"sm_80", text80}
	if major >= 9 {
		ptx = Image{"sm_90", text90}
	}
	if major == 9 && minor == 0 {
		return []Image{{"sm_90 cubin", image90}, ptx}
	}
	return []Image{ptx}
}

// Load returns the image's bytes.
func (im Image) Load() (string, error) {
	b, err := im.Data()
	if err != nil {
		return "", fmt.Errorf("kernels: the embedded %s does not decompress (%w): rebuild it with go generate ./kernels", im.Name, err)
	}
	return b, nil
}
