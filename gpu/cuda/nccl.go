//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef int (*nccl_version_fn)(int*);
static void* rs_nccl_handle = 0;
static const char* rs_nccl_open(void) {
	if (rs_nccl_handle) return 0;
	rs_nccl_handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!rs_nccl_handle) return dlerror();
	return 0;
}
static int rs_nccl_version(int* v) {
	nccl_version_fn f = (nccl_version_fn)dlsym(rs_nccl_handle, "ncclGetVersion");
	if (!f) return -1;
	return f(v);
}
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
)

var (
	ncclOnce sync.Once
	ncclVer  string
	ncclErr  error
)

// NCCLVersion loads libnccl.so.2 at run time (never needed to build) and
// returns its version, or why it cannot be used. NVLink SHARP (NVLS) is
// kept off: NCCL_NVLS_ENABLE=0 is set before loading unless already set.
func NCCLVersion() (string, error) {
	ncclOnce.Do(func() {
		if os.Getenv("NCCL_NVLS_ENABLE") == "" {
			os.Setenv("NCCL_NVLS_ENABLE", "0")
		}
		if e := C.rs_nccl_open(); e != nil {
			ncclErr = fmt.Errorf("cannot load libnccl.so.2: %s", C.GoString(e))
			return
		}
		var v C.int
		if r := C.rs_nccl_version(&v); r != 0 {
			ncclErr = fmt.Errorf("libnccl.so.2: ncclGetVersion failed (%d)", int(r))
			return
		}
		ncclVer = fmt.Sprintf("%d.%d.%d", int(v)/10000, int(v)/100%100, int(v)%100)
	})
	return ncclVer, ncclErr
}
