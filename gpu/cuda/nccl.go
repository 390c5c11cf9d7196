//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// NCCL's entry points, looked up with dlsym: libnccl.so.2 is never needed
// to build. ncclComm_t and cudaStream_t are pointers; ncclResult_t,
// ncclDataType_t and ncclRedOp_t are C enums (int).
typedef int (*nccl_version_fn)(int*);
typedef int (*nccl_init_all_fn)(void** comms, int ndev, const int* devlist);
typedef int (*nccl_allreduce_fn)(const void* send, void* recv, size_t count, int dtype, int op, void* comm, void* stream);
typedef int (*nccl_void_fn)(void);
typedef int (*nccl_destroy_fn)(void* comm);
typedef const char* (*nccl_errstr_fn)(int);

static void* rs_nccl_handle = 0;
static nccl_version_fn rs_p_version;
static nccl_init_all_fn rs_p_init_all;
static nccl_allreduce_fn rs_p_allreduce;
static nccl_void_fn rs_p_group_start, rs_p_group_end;
static nccl_destroy_fn rs_p_destroy;
static nccl_errstr_fn rs_p_errstr;

// rs_nccl_open loads the library and every symbol; it returns 0, or the
// dlerror text, or the name of the missing symbol (prefixed "missing ").
static const char* rs_nccl_open(void) {
	if (rs_nccl_handle) return 0;
	void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
#define RS_SYM(var, type, name) var = (type)dlsym(h, name); if (!var) return "missing " name;
	RS_SYM(rs_p_version, nccl_version_fn, "ncclGetVersion")
	RS_SYM(rs_p_init_all, nccl_init_all_fn, "ncclCommInitAll")
	RS_SYM(rs_p_allreduce, nccl_allreduce_fn, "ncclAllReduce")
	RS_SYM(rs_p_group_start, nccl_void_fn, "ncclGroupStart")
	RS_SYM(rs_p_group_end, nccl_void_fn, "ncclGroupEnd")
	RS_SYM(rs_p_destroy, nccl_destroy_fn, "ncclCommDestroy")
	RS_SYM(rs_p_errstr, nccl_errstr_fn, "ncclGetErrorString")
#undef RS_SYM
	rs_nccl_handle = h;
	return 0;
}
static int rs_nccl_version(int* v) { return rs_p_version(v); }
static const char* rs_nccl_errstr(int r) { const char* s = rs_p_errstr(r); return s ? s : "unknown NCCL error"; }
static int rs_nccl_init_all(uintptr_t* comms, int n, const int* devs) {
	void* tmp[64];
	if (n < 1 || n > 64) return -1;
	int r = rs_p_init_all(tmp, n, devs);
	if (r == 0) for (int i = 0; i < n; i++) comms[i] = (uintptr_t)tmp[i];
	return r;
}
// ncclFloat32 = 7, ncclSum = 0; in place (send == recv).
static int rs_nccl_allreduce_f32(uintptr_t buf, size_t count, uintptr_t comm, uintptr_t stream) {
	return rs_p_allreduce((const void*)buf, (void*)buf, count, 7, 0, (void*)comm, (void*)stream);
}
static int rs_nccl_group_start(void) { return rs_p_group_start(); }
static int rs_nccl_group_end(void) { return rs_p_group_end(); }
static int rs_nccl_destroy(uintptr_t comm) { return rs_p_destroy((void*)comm); }
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

var (
	ncclOnce sync.Once
	ncclVer  string
	ncclErr  error
)

// NCCLVersion loads libnccl.so.2 at run time (never needed to build), looks
// up every entry point rigscope calls and returns the library's version, or
// why it cannot be used. NVLink SHARP (NVLS, multicast) is kept off:
// NCCL_NVLS_ENABLE=0 is set before loading unless already set.
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
			ncclErr = fmt.Errorf("libnccl.so.2: ncclGetVersion failed: %s", ncclErrString(int(r)))
			return
		}
		ncclVer = fmt.Sprintf("%d.%d.%d", int(v)/10000, int(v)/100%100, int(v)%100)
	})
	return ncclVer, ncclErr
}

// ncclErrString is ncclGetErrorString(r) with the code (library loaded).
func ncclErrString(r int) string {
	if r == -1 {
		return "rigscope: bad argument to the NCCL shim (-1)"
	}
	return fmt.Sprintf("%s (ncclResult %d)", C.GoString(C.rs_nccl_errstr(C.int(r))), r)
}

func ncclCheck(op string, r C.int) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: nccl %s: %s", op, ncclErrString(int(r)))
}

// ncclInitAll makes one communicator per device ordinal (one process, one
// rank per GPU) with ncclCommInitAll. NCCL refuses a device listed twice.
func ncclInitAll(ordinals []int) ([]uintptr, error) {
	if _, err := NCCLVersion(); err != nil {
		return nil, err
	}
	if len(ordinals) < 1 || len(ordinals) > 64 {
		return nil, fmt.Errorf("cuda: nccl: %d ranks (1 to 64)", len(ordinals))
	}
	devs := make([]C.int, len(ordinals))
	for i, o := range ordinals {
		devs[i] = C.int(o)
	}
	comms := make([]C.uintptr_t, len(ordinals))
	if err := ncclCheck(fmt.Sprintf("ncclCommInitAll(GPUs %v)", ordinals), C.rs_nccl_init_all(&comms[0], C.int(len(devs)), &devs[0])); err != nil {
		return nil, err
	}
	out := make([]uintptr, len(comms))
	for i, c := range comms {
		out[i] = uintptr(c)
	}
	return out, nil
}

// withNCCLEnv runs f (which creates communicators) with NCCL_PROTO and
// NCCL_ALGO set from s, and restores the environment after: NCCL reads
// them when a communicator is made.
func withNCCLEnv(s NCCLSettings, f func() error) error {
	type kv struct{ k, v string }
	var saved []kv
	set := func(k, v string) {
		if v == "" {
			return
		}
		old, had := os.LookupEnv(k)
		if had {
			saved = append(saved, kv{k, old})
		} else {
			saved = append(saved, kv{k, "\x00"})
		}
		os.Setenv(k, v)
	}
	set("NCCL_PROTO", s.Proto)
	set("NCCL_ALGO", s.Algo)
	defer func() {
		for _, e := range saved {
			if e.v == "\x00" {
				os.Unsetenv(e.k)
			} else {
				os.Setenv(e.k, e.v)
			}
		}
	}()
	return f()
}

// ncclAllReduceAll sums n floats in place in bufs[r] on streams[r] for
// every rank, inside one ncclGroupStart/End (one thread drives all ranks).
func ncclAllReduceAll(comms []uintptr, bufs []cu.DevicePtr, streams []cu.Stream, n int) error {
	if err := ncclCheck("ncclGroupStart", C.rs_nccl_group_start()); err != nil {
		return err
	}
	var first error
	for r := range comms {
		err := ncclCheck(fmt.Sprintf("ncclAllReduce(rank %d, %d floats)", r, n),
			C.rs_nccl_allreduce_f32(C.uintptr_t(bufs[r]), C.size_t(n), C.uintptr_t(comms[r]), C.uintptr_t(streamHandle(streams[r]))))
		if err != nil && first == nil {
			first = err
		}
	}
	// The group must be closed even after a failed enqueue.
	if err := ncclCheck("ncclGroupEnd", C.rs_nccl_group_end()); err != nil && first == nil {
		first = err
	}
	return first
}

func ncclDestroy(comms []uintptr) {
	for _, c := range comms {
		if c != 0 {
			C.rs_nccl_destroy(C.uintptr_t(c))
		}
	}
}

// streamHandle is the CUstream (== cudaStream_t) of s as an integer.
func streamHandle(s cu.Stream) uintptr { return uintptr(unsafe.Pointer(cstream(s))) }
