//go:build cuda

package cuda

// The few driver calls gorgonia.org/cu v0.9.6 lacks: stream capture, graph
// instantiate/launch, pinned host memory; and a raw kernel launch that
// takes its arguments as 8-byte slots in C memory.

/*
#cgo LDFLAGS: -lcuda -ldl
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

static CUresult rs_begin_capture(CUstream s) { return cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED); }
static CUresult rs_end_capture(CUstream s, CUgraph* g) { return cuStreamEndCapture(s, g); }
static CUresult rs_instantiate(CUgraphExec* e, CUgraph g) { return cuGraphInstantiateWithFlags(e, g, 0); }
static CUresult rs_graph_launch(CUgraphExec e, CUstream s) { return cuGraphLaunch(e, s); }
static CUresult rs_graph_destroy(CUgraph g) { return cuGraphDestroy(g); }
static CUresult rs_exec_destroy(CUgraphExec e) { return cuGraphExecDestroy(e); }
static CUresult rs_host_alloc(void** p, size_t n) { return cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE); }
static CUresult rs_host_free(void* p) { return cuMemFreeHost(p); }
static CUresult rs_host_alloc_mapped(void** p, size_t n) { return cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP); }
static CUresult rs_host_device_ptr(CUdeviceptr* d, void* p) { return cuMemHostGetDevicePointer(d, p, 0); }
static CUresult rs_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shm, CUstream s, uint64_t* args, int n) {
	void* ptrs[32];
	for (int i = 0; i < n && i < 32; i++) ptrs[i] = &args[i];
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, ptrs, NULL);
}
// rs_launch_pdl launches with programmatic stream serialization: the
// kernel may begin while the previous kernel in the stream drains; it
// must execute griddepcontrol.wait before using that kernel's results.
static CUresult rs_launch_pdl(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned shm, CUstream s, uint64_t* args, int n) {
	void* ptrs[32];
	for (int i = 0; i < n && i < 32; i++) ptrs[i] = &args[i];
	CUlaunchAttribute attr;
	attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
	attr.value.programmaticStreamSerializationAllowed = 1;
	CUlaunchConfig cfg = {0};
	cfg.gridDimX = gx; cfg.gridDimY = gy; cfg.gridDimZ = gz;
	cfg.blockDimX = bx; cfg.blockDimY = by; cfg.blockDimZ = bz;
	cfg.sharedMemBytes = shm; cfg.hStream = s;
	cfg.attrs = &attr; cfg.numAttrs = 1;
	return cuLaunchKernelEx(&cfg, f, ptrs, NULL);
}
static CUresult rs_init(void) { return cuInit(0); }
static const char* rs_err_name(CUresult r) { const char* s = 0; cuGetErrorName(r, &s); return s ? s : "unknown"; }
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"
)

func cres(op string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (%d)", op, C.GoString(C.rs_err_name(r)), int(r))
}

func cuInit() error { return cres("cuInit", C.rs_init()) }

func cstream(s cu.Stream) C.CUstream   { return *(*C.CUstream)(unsafe.Pointer(&s)) }
func cfunc(f cu.Function) C.CUfunction { return *(*C.CUfunction)(unsafe.Pointer(&f)) }

// graph is an instantiated CUDA graph.
type graph struct {
	g    C.CUgraph
	exec C.CUgraphExec
}

func beginCapture(s cu.Stream) error {
	return cres("cuStreamBeginCapture", C.rs_begin_capture(cstream(s)))
}

func endCapture(s cu.Stream) (*graph, error) {
	g := &graph{}
	if err := cres("cuStreamEndCapture", C.rs_end_capture(cstream(s), &g.g)); err != nil {
		return nil, err
	}
	if err := cres("cuGraphInstantiate", C.rs_instantiate(&g.exec, g.g)); err != nil {
		C.rs_graph_destroy(g.g)
		return nil, err
	}
	return g, nil
}

func (g *graph) launch(s cu.Stream) error {
	return cres("cuGraphLaunch", C.rs_graph_launch(g.exec, cstream(s)))
}

func (g *graph) destroy() {
	C.rs_exec_destroy(g.exec)
	C.rs_graph_destroy(g.g)
}

// pinned is page-locked host memory (C memory: safe to hand to the driver
// for asynchronous copies).
type pinned struct {
	p unsafe.Pointer
	n int
}

func allocPinned(n int) (pinned, error) {
	var p unsafe.Pointer
	if err := cres(fmt.Sprintf("cuMemHostAlloc(%d bytes)", n), C.rs_host_alloc(&p, C.size_t(n))); err != nil {
		return pinned{}, err
	}
	return pinned{p, n}, nil
}

// allocMapped is pinned memory that kernels can read and write through
// devicePtr (the host staging of the host allreduce backend).
func allocMapped(n int) (pinned, error) {
	var p unsafe.Pointer
	if err := cres(fmt.Sprintf("cuMemHostAlloc(%d bytes, mapped)", n), C.rs_host_alloc_mapped(&p, C.size_t(n))); err != nil {
		return pinned{}, err
	}
	return pinned{p, n}, nil
}

// devicePtr is the address of mapped pinned memory in the current
// context's device address space.
func (p pinned) devicePtr() (cu.DevicePtr, error) {
	var d C.CUdeviceptr
	if err := cres("cuMemHostGetDevicePointer", C.rs_host_device_ptr(&d, p.p)); err != nil {
		return 0, err
	}
	return cu.DevicePtr(d), nil
}

func (p pinned) free() {
	if p.p != nil {
		C.rs_host_free(p.p)
	}
}

func (p pinned) floats() []float32 { return unsafe.Slice((*float32)(p.p), p.n/4) }
func (p pinned) ints() []int32     { return unsafe.Slice((*int32)(p.p), p.n/4) }
func (p pinned) uint64s() []uint64 { return unsafe.Slice((*uint64)(p.p), p.n/8) }

// hostPtr is the address of s's first element for a synchronous copy.
func hostPtr(s []uint64) unsafe.Pointer { return unsafe.Pointer(&s[0]) }

// Kernel arguments, each widened to an 8-byte slot (the driver reads only
// the parameter's own size from the slot's start, little-endian).
type arg = uint64

func ptr(p cu.DevicePtr) arg { return uint64(p) }
func i32(v int) arg          { return uint64(uint32(int32(v))) }
func i64(v int) arg          { return uint64(int64(v)) }
func f32(v float32) arg      { return uint64(math.Float32bits(v)) }

// launch enqueues fn on s. args live in C memory for the call only: the
// driver copies parameter values at launch (and at capture).
func launch(fn cu.Function, grid, block [3]int, shm int, s cu.Stream, args ...arg) error {
	return launchWith(false, fn, grid, block, shm, s, args...)
}

// launchPDL is launch with programmatic dependent launch (sm_90): see
// pdl_wait in kernels.cu.
func launchPDL(fn cu.Function, grid, block [3]int, shm int, s cu.Stream, args ...arg) error {
	return launchWith(true, fn, grid, block, shm, s, args...)
}

func launchWith(pdl bool, fn cu.Function, grid, block [3]int, shm int, s cu.Stream, args ...arg) error {
	n := len(args)
	if n > 32 {
		return fmt.Errorf("cuda: launch with %d arguments (max 32)", n)
	}
	buf := (*[32]C.uint64_t)(C.malloc(C.size_t(8 * 32)))
	defer C.free(unsafe.Pointer(buf))
	for i, a := range args {
		buf[i] = C.uint64_t(a)
	}
	f, gx, gy, gz := cfunc(fn), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2])
	bx, by, bz := C.uint(block[0]), C.uint(block[1]), C.uint(block[2])
	if pdl {
		return cres("cuLaunchKernelEx", C.rs_launch_pdl(f, gx, gy, gz, bx, by, bz, C.uint(shm), cstream(s), &buf[0], C.int(n)))
	}
	return cres("cuLaunchKernel", C.rs_launch(f, gx, gy, gz, bx, by, bz, C.uint(shm), cstream(s), &buf[0], C.int(n)))
}
