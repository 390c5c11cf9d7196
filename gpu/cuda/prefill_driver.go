//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

static CUresult rs_set_max_dyn_smem(CUfunction f, int n) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, n);
}
*/
import "C"

import "gorgonia.org/cu"

// setMaxDynamicSmem lets fn launch with up to n bytes of dynamic shared
// memory (past the default 48 KB; the prefill kernels, gemm.cu).
func setMaxDynamicSmem(fn cu.Function, n int) error {
	return cres("cuFuncSetAttribute", C.rs_set_max_dyn_smem(C.CUfunction(cfunc(fn)), C.int(n)))
}
