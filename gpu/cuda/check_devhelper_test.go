//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// devHelper holds the check's device buffers on one stream; the first
// error sticks in err.
type devHelper struct {
	s      cu.Stream
	allocs []cu.DevicePtr
	err    error
}

func newDevHelper(s cu.Stream) *devHelper { return &devHelper{s: s} }

// checkTarget is the Target the product checks launch through (matvec,
// glu and their dispatch) on d's stream s, with RMSNorm's eps 1e-5.
func checkTarget(d *Device, s cu.Stream) *Target {
	return &Target{launcher: launcher{dev: d, stream: s, ls: s, eps: 1e-5}, cfg: model.Config{NormEps: 1e-5}}
}

func (h *devHelper) free() {
	for _, p := range h.allocs {
		cu.MemFree(p)
	}
	h.allocs = nil
}

func (h *devHelper) alloc(n int64) cu.DevicePtr {
	if h.err != nil {
		return 0
	}
	p, err := cu.MemAlloc(n)
	if err != nil {
		h.err = fmt.Errorf("cuda check: cuMemAlloc(%d): %w", n, err)
		return 0
	}
	h.allocs = append(h.allocs, p)
	return p
}

func (h *devHelper) up(b []byte) cu.DevicePtr {
	p := h.alloc(int64(len(b)))
	if h.err == nil {
		if err := cu.MemcpyHtoD(p, unsafe.Pointer(&b[0]), int64(len(b))); err != nil {
			h.err = fmt.Errorf("cuda check: upload: %w", err)
		} else if err := cu.Synchronize(); err != nil {
			// cuMemcpyHtoD from pageable memory returns once the bytes are
			// staged, its DMA perhaps still under way, and the checks' stream
			// is NonBlocking (not ordered after the legacy stream's copy): a
			// kernel on it could run first and have its output overwritten
			// by the copy's tail. The fp8 check's x split ahead (xsplit into
			// a zeroed buffer) lost token group 1 so once (s18: tc T=11,
			// output 1664, 0.131 against 0.946).
			h.err = fmt.Errorf("cuda check: upload: %w", err)
		}
	}
	return p
}

// upQuant uploads data as an (N, K) matrix of type dt the way the
// product path uploads weights (uploadMatrix: quantized blocks followed by
// quantPad zero bytes), its allocations freed with the helper's.
func (h *devHelper) upQuant(name string, dt tensor.DType, N, K int, data []byte) (dweight, error) {
	m := &dmodel{}
	wd, err := m.uploadMatrix(&tensor.Tensor{Name: name, DType: dt, Shape: []int{N, K}, Data: data})
	h.allocs = append(h.allocs, m.allocs...)
	return wd, err
}

// poison is n float32 NaNs on the device.
func (h *devHelper) poison(n int) cu.DevicePtr {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], 0x7fc00000)
	}
	return h.up(b)
}

// down synchronizes the stream and copies n float32s back.
func (h *devHelper) down(p cu.DevicePtr, n int) ([]float32, error) { return download[float32](h, p, n) }

// download synchronizes h's stream and copies n 4-byte values back.
func download[T float32 | int32](h *devHelper, p cu.DevicePtr, n int) ([]T, error) {
	out := make([]T, n)
	if err := h.s.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuda check: %w", err)
	}
	if err := cu.MemcpyDtoH(unsafe.Pointer(&out[0]), p, int64(4*n)); err != nil {
		return nil, fmt.Errorf("cuda check: download: %w", err)
	}
	return out, nil
}

// downQX copies back the first T rows of the quantized activation in the
// scratch at xq (rows of K): int8 q (T, K) and float2 (T, K/16) as
// float32 pairs.
func (h *devHelper) downQX(xq cu.DevicePtr, T, K int) ([]int8, []float32, error) {
	qp, mp, _ := qxPtrs(xq, K)
	if err := h.s.Synchronize(); err != nil {
		return nil, nil, fmt.Errorf("cuda check: %w", err)
	}
	q := make([]int8, T*K)
	if err := cu.MemcpyDtoH(unsafe.Pointer(&q[0]), qp, int64(T*K)); err != nil {
		return nil, nil, fmt.Errorf("cuda check: download: %w", err)
	}
	m, err := h.down(mp, T*K/16*2)
	return q, m, err
}
