//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// cuBLAS's entry points, looked up with dlsym: libcublas is never needed to
// build or to start (as NCCL, nccl.go). cublasHandle_t and cudaStream_t
// are pointers; cublasStatus_t, cublasOperation_t, cudaDataType_t,
// cublasComputeType_t and cublasGemmAlgo_t are C enums (int).
typedef int (*cb_create_fn)(void** handle);
typedef int (*cb_destroy_fn)(void* handle);
typedef int (*cb_set_stream_fn)(void* handle, void* stream);
typedef int (*cb_set_workspace_fn)(void* handle, void* ws, size_t bytes);
typedef int (*cb_version_fn)(void* handle, int* v);
typedef int (*cb_gemm_ex_fn)(void* handle, int transa, int transb, int m, int n, int k, const void* alpha,
                             const void* A, int atype, int lda, const void* B, int btype, int ldb, const void* beta,
                             void* C, int ctype, int ldc, int compute, int algo);
typedef const char* (*cb_status_fn)(int);

static void* rs_cb_lt = 0;
static void* rs_cb_handle = 0;
static cb_create_fn rs_cb_create;
static cb_destroy_fn rs_cb_destroy;
static cb_set_stream_fn rs_cb_set_stream;
static cb_set_workspace_fn rs_cb_set_workspace;
static cb_version_fn rs_cb_version;
static cb_gemm_ex_fn rs_cb_gemm_ex;
static cb_status_fn rs_cb_status;

// rs_cb_open loads cuBLAS from lib (a soname or a path; lt, when set, is
// its libcublasLt, loaded first with RTLD_GLOBAL so that the path's own
// copy serves libcublas's dependency) and every symbol; it returns 0, or the
// dlerror text, or "missing NAME". cublasSetWorkspace_v2 is optional.
static const char* rs_cb_open(const char* lt, const char* lib) {
	if (rs_cb_handle) return 0;
	if (lt) {
		void* l = dlopen(lt, RTLD_NOW | RTLD_GLOBAL);
		if (!l) return dlerror();
		rs_cb_lt = l;
	}
	void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
#define RS_SYM(var, type, name) var = (type)dlsym(h, name); if (!var) { dlclose(h); return "missing " name; }
	RS_SYM(rs_cb_create, cb_create_fn, "cublasCreate_v2")
	RS_SYM(rs_cb_destroy, cb_destroy_fn, "cublasDestroy_v2")
	RS_SYM(rs_cb_set_stream, cb_set_stream_fn, "cublasSetStream_v2")
	RS_SYM(rs_cb_version, cb_version_fn, "cublasGetVersion_v2")
	RS_SYM(rs_cb_gemm_ex, cb_gemm_ex_fn, "cublasGemmEx")
	RS_SYM(rs_cb_status, cb_status_fn, "cublasGetStatusString")
#undef RS_SYM
	rs_cb_set_workspace = (cb_set_workspace_fn)dlsym(h, "cublasSetWorkspace_v2");
	rs_cb_handle = h;
	return 0;
}
static const char* rs_cb_errstr(int r) { const char* s = rs_cb_status(r); return s ? s : "unknown cuBLAS status"; }
static int rs_cb_create_handle(uintptr_t* h) { void* p = 0; int r = rs_cb_create(&p); *h = (uintptr_t)p; return r; }
static int rs_cb_destroy_handle(uintptr_t h) { return rs_cb_destroy((void*)h); }
static int rs_cb_get_version(uintptr_t h, int* v) { return rs_cb_version((void*)h, v); }
static int rs_cb_stream(uintptr_t h, uintptr_t s) { return rs_cb_set_stream((void*)h, (void*)s); }
static int rs_cb_has_workspace(void) { return rs_cb_set_workspace != 0; }
static int rs_cb_workspace(uintptr_t h, uintptr_t ws, size_t n) { return rs_cb_set_workspace((void*)h, (void*)ws, n); }
// rs_cb_gemm: C (fp32, column-major m x n, ldc) = alpha * op(A) op(B) + beta * C
// with A and B bf16 (CUDA_R_16BF = 14), C fp32 (CUDA_R_32F = 0), compute
// CUBLAS_COMPUTE_32F (68), algorithm CUBLAS_GEMM_DEFAULT (-1).
static int rs_cb_gemm(uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t A, int lda,
                      uintptr_t B, int ldb, float beta, uintptr_t C, int ldc) {
	return rs_cb_gemm_ex((void*)h, ta, tb, m, n, k, &alpha, (const void*)A, 14, lda, (const void*)B, 14, ldb, &beta,
	                     (void*)C, 0, ldc, 68, -1);
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// cublasMajors are the cuBLAS major versions rigscope takes, in order of
// preference: every one has cublasGemmEx with bf16 inputs and
// CUBLAS_COMPUTE_32F, as rigscope calls it.
var cublasMajors = []string{"12", "13"}

// cublasDirs are the folders tried after the plain soname (the loader's
// search: LD_LIBRARY_PATH, ldconfig): the CUDA toolkit's and pip's
// nvidia-cublas wheels (PyTorch's), whichever Python holds them.
func cublasDirs() []string {
	dirs := []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}
	home, _ := os.UserHomeDir()
	for _, pat := range []string{
		"/usr/local/cuda-*/lib64", // versioned toolkits without the /usr/local/cuda link
		"/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib",
		"/usr/local/lib/python3*/site-packages/nvidia/cublas/lib",
		"/usr/lib/python3*/dist-packages/nvidia/cublas/lib",
		"/usr/lib/python3*/site-packages/nvidia/cublas/lib",
		"/opt/conda/lib/python3*/site-packages/nvidia/cublas/lib",
		"/opt/*/lib/python3*/site-packages/nvidia/cublas/lib",   // virtual environments
		"/usr/local/lib/python3*/dist-packages/nvidia/cu1*/lib", // CUDA 13 wheels: nvidia/cu13/lib
		"/usr/local/lib/python3*/site-packages/nvidia/cu1*/lib",
		filepath.Join(home, ".local/lib/python3*/site-packages/nvidia/cublas/lib"),
	} {
		m, _ := filepath.Glob(pat)
		dirs = append(dirs, m...)
	}
	return dirs
}

var (
	cublasOnce sync.Once
	cublasLib  string // what was loaded: the soname or path, and the version
	cublasErr  error
)

// cublasLoad loads cuBLAS at run time (never needed to build or start):
// libcublas.so.12 (then .13) by soname, then from each of cublasDirs. It
// returns the path that loaded, or why none did, naming every path tried.
func cublasLoad() (string, error) {
	cublasOnce.Do(func() {
		var tried []string
		try := func(dir, major string) bool {
			lib, lt := "libcublas.so."+major, ""
			if dir != "" {
				lib, lt = filepath.Join(dir, lib), filepath.Join(dir, "libcublasLt.so."+major)
				if _, err := os.Stat(lib); err != nil {
					tried = append(tried, lib+" (absent)")
					return false
				}
			}
			cl := C.CString(lib)
			defer C.free(unsafe.Pointer(cl))
			var clt *C.char
			if lt != "" {
				clt = C.CString(lt)
				defer C.free(unsafe.Pointer(clt))
			}
			if e := C.rs_cb_open(clt, cl); e != nil {
				tried = append(tried, fmt.Sprintf("%s (%s)", lib, C.GoString(e)))
				return false
			}
			cublasLib = lib
			return true
		}
		for _, dir := range append([]string{""}, cublasDirs()...) {
			for _, major := range cublasMajors {
				if try(dir, major) {
					return
				}
			}
		}
		cublasErr = fmt.Errorf("cuBLAS not found; tried %s", strings.Join(tried, "; "))
	})
	return cublasLib, cublasErr
}

// cublasCheck wraps a cuBLAS status (library loaded).
func cublasCheck(op string, r C.int) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: cuBLAS %s: %s (status %d)", op, C.GoString(C.rs_cb_errstr(r)), int(r))
}

// cublasWorkspace is the workspace given to cuBLAS (its guidance for
// Hopper: 32 MiB), ours so that no product allocates.
const cublasWorkspace = 32 << 20

// blas is a cuBLAS handle bound to one stream of the device whose context
// was current at newBLAS (the primary context: cuBLAS runs on the runtime,
// which uses the primary context).
type blas struct {
	h       uintptr
	lib     string // the library that loaded
	version int    // cublasGetVersion: major*10000 + minor*100 + patch
	ws      cu.DevicePtr
}

// newBLAS loads cuBLAS, makes a handle, binds it to stream s and gives it
// a workspace. The device context must be bound.
func newBLAS(s cu.Stream) (*blas, error) {
	lib, err := cublasLoad()
	if err != nil {
		return nil, err
	}
	b := &blas{lib: lib}
	var h C.uintptr_t
	if err := cublasCheck("cublasCreate", C.rs_cb_create_handle(&h)); err != nil {
		return nil, err
	}
	b.h = uintptr(h)
	var v C.int
	if err := cublasCheck("cublasGetVersion", C.rs_cb_get_version(h, &v)); err != nil {
		b.close()
		return nil, err
	}
	b.version = int(v)
	if err := cublasCheck("cublasSetStream", C.rs_cb_stream(h, C.uintptr_t(streamHandle(s)))); err != nil {
		b.close()
		return nil, err
	}
	if C.rs_cb_has_workspace() != 0 {
		if b.ws, err = cu.MemAlloc(cublasWorkspace); err != nil {
			b.close()
			return nil, fmt.Errorf("cuda: cuBLAS workspace (%d bytes): %w", cublasWorkspace, err)
		}
		if err := cublasCheck("cublasSetWorkspace", C.rs_cb_workspace(h, C.uintptr_t(b.ws), cublasWorkspace)); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// String is the library and its version, for stats and logs.
func (b *blas) String() string {
	return fmt.Sprintf("cuBLAS %d.%d.%d (%s)", b.version/10000, b.version/100%100, b.version%100, b.lib)
}

// close destroys the handle and frees the workspace (context bound).
func (b *blas) close() {
	if b == nil {
		return
	}
	if b.h != 0 {
		C.rs_cb_destroy_handle(C.uintptr_t(b.h))
		b.h = 0
	}
	if b.ws != 0 {
		cu.MemFree(b.ws)
		b.ws = 0
	}
}

// gemmRows enqueues out (T, N) fp32, row ldo apart, = alpha * x.W^T +
// beta * out for row-major x (T, K) bf16 and W (N, K) bf16: in cuBLAS's
// column-major terms C (N, T) = op(A) B with A = W as (K, N), transposed,
// and B = x as (K, T) ("TN", the layout cuBLAS runs fastest).
func (b *blas) gemmRows(out cu.DevicePtr, ldo int, x, w cu.DevicePtr, N, K, T int, alpha, beta float32) error {
	return cublasCheck(fmt.Sprintf("cublasGemmEx(%dx%d weights, %d tokens)", N, K, T),
		C.rs_cb_gemm(C.uintptr_t(b.h), 1, 0, C.int(N), C.int(T), C.int(K), C.float(alpha), C.uintptr_t(w), C.int(K),
			C.uintptr_t(x), C.int(K), C.float(beta), C.uintptr_t(out), C.int(ldo)))
}

// setStream binds the handle to stream s (the products enqueue on it).
func (b *blas) setStream(s cu.Stream) error {
	return cublasCheck("cublasSetStream", C.rs_cb_stream(C.uintptr_t(b.h), C.uintptr_t(streamHandle(s))))
}
