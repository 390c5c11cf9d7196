//go:build cubinonly

package kernels

// A build with -tags cubinonly embeds only the sm_90 cubin (H100, H200):
// about 10 MB smaller, for test binaries carried to the GPU machine. Any
// other GPU is refused at load (the PTX images are empty).
var ptx80, ptx90 []byte
