//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl -lcuda
#include <cuda.h>
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
// ncclUniqueId (128 bytes, passed by value) and ncclConfig_t as NCCL 2.17
// laid it out (the first version with minCTAs and maxCTAs; NCCL reads a
// config by its size and version and keeps its defaults for later fields).
typedef struct { char internal[128]; } rs_nccl_uid;
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char* netName;
} rs_nccl_config_v21700;
typedef int (*nccl_uid_fn)(rs_nccl_uid*);
typedef int (*nccl_init_rank_config_fn)(void** comm, int nranks, rs_nccl_uid id, int rank, void* config);
typedef const char* (*nccl_last_error_fn)(void* comm);

static void* rs_nccl_handle = 0;
static nccl_version_fn rs_p_version;
static nccl_init_all_fn rs_p_init_all;
static nccl_allreduce_fn rs_p_allreduce;
static nccl_void_fn rs_p_group_start, rs_p_group_end;
static nccl_destroy_fn rs_p_destroy;
static nccl_errstr_fn rs_p_errstr;
// Optional (NCCL 2.14 and 2.13 on): without them communicators are made
// with ncclCommInitAll and channel settings are refused.
static nccl_uid_fn rs_p_uid;
static nccl_init_rank_config_fn rs_p_init_rank_config;
static nccl_last_error_fn rs_p_last_error;

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
	rs_p_uid = (nccl_uid_fn)dlsym(h, "ncclGetUniqueId");
	rs_p_init_rank_config = (nccl_init_rank_config_fn)dlsym(h, "ncclCommInitRankConfig");
	rs_p_last_error = (nccl_last_error_fn)dlsym(h, "ncclGetLastError");
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
static int rs_nccl_has_config(void) { return rs_p_uid && rs_p_init_rank_config; }
static const char* rs_nccl_last_error(void) { return rs_p_last_error ? rs_p_last_error(0) : 0; }
// rs_nccl_init_config makes one communicator per device ordinal with
// ncclCommInitRankConfig inside one group, each with its GPU's primary
// context current (NCCL takes the rank's device from the current context,
// and makes its own context current where it works: the primary one,
// which rigscope's Device also uses). minCTAs/maxCTAs 0 leave NCCL's
// choice (NCCL_CONFIG_UNDEF_INT). Returns -2 when a context could not be
// made current (the CUresult in *cu).
static int rs_nccl_init_config(uintptr_t* comms, int n, const int* devs, int minCTAs, int maxCTAs, int* cu) {
	void* tmp[64];
	rs_nccl_uid id;
	if (n < 1 || n > 64 || !rs_nccl_has_config()) return -1;
	int r = rs_p_uid(&id);
	if (r != 0) return r;
	rs_nccl_config_v21700 cfg = { sizeof(rs_nccl_config_v21700), 0xcafebeef, 21700,
		INT32_MIN, INT32_MIN, minCTAs > 0 ? minCTAs : INT32_MIN, maxCTAs > 0 ? maxCTAs : INT32_MIN, 0 };
	r = rs_p_group_start();
	if (r != 0) return r;
	int first = 0;
	for (int i = 0; i < n; i++) {
		tmp[i] = 0;
		CUdevice d;
		CUcontext c;
		CUresult e = cuDeviceGet(&d, devs[i]);
		if (e == CUDA_SUCCESS) e = cuDevicePrimaryCtxRetain(&c, d);
		if (e == CUDA_SUCCESS) {
			e = cuCtxSetCurrent(c);
			cuDevicePrimaryCtxRelease(d); // rigscope's Device holds its own retain
		}
		if (e != CUDA_SUCCESS) {
			*cu = (int)e;
			first = -2;
			break;
		}
		r = rs_p_init_rank_config(&tmp[i], n, id, i, &cfg);
		if (r != 0 && first == 0) first = r;
	}
	r = rs_p_group_end(); // the group must be closed even after a failed call
	if (first == 0) first = r;
	if (first == 0) for (int i = 0; i < n; i++) comms[i] = (uintptr_t)tmp[i];
	return first;
}
// rs_nccl_probe sums count floats (zeros) on every rank once, in one
// group on each GPU's null stream, and waits: a protocol/algorithm
// combination NCCL refuses fails here (ncclGroupEnd), not in a step.
static int rs_nccl_probe(const uintptr_t* comms, int n, const int* devs, size_t count, int* cu) {
	CUdeviceptr bufs[64];
	CUcontext ctxs[64];
	int r = 0;
	if (n < 1 || n > 64) return -1;
	for (int i = 0; i < n; i++) {
		CUdevice d;
		bufs[i] = 0;
		CUresult e = cuDeviceGet(&d, devs[i]);
		if (e == CUDA_SUCCESS) e = cuDevicePrimaryCtxRetain(&ctxs[i], d);
		if (e == CUDA_SUCCESS) {
			cuDevicePrimaryCtxRelease(d);
			e = cuCtxSetCurrent(ctxs[i]);
		}
		if (e == CUDA_SUCCESS) e = cuMemAlloc(&bufs[i], 4 * count);
		if (e == CUDA_SUCCESS) e = cuMemsetD32(bufs[i], 0, count);
		if (e != CUDA_SUCCESS) { *cu = (int)e; r = -2; n = i + (bufs[i] != 0); goto out; }
	}
	r = rs_p_group_start();
	if (r != 0) goto out;
	for (int i = 0; i < n; i++) {
		int e = rs_p_allreduce((const void*)bufs[i], (void*)bufs[i], count, 7, 0, (void*)comms[i], 0);
		if (e != 0 && r == 0) r = e;
	}
	{
		int e = rs_p_group_end();
		if (r == 0) r = e;
	}
	for (int i = 0; i < n && r == 0; i++) {
		CUresult e = cuCtxSetCurrent(ctxs[i]);
		if (e == CUDA_SUCCESS) e = cuCtxSynchronize();
		if (e != CUDA_SUCCESS) { *cu = (int)e; r = -2; }
	}
out:
	for (int i = 0; i < n; i++) {
		if (bufs[i] && cuCtxSetCurrent(ctxs[i]) == CUDA_SUCCESS) cuMemFree(bufs[i]);
	}
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
	"runtime"
	"strings"
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

// ncclErrString is ncclGetErrorString(r) with the code (library loaded),
// and NCCL's own last message (ncclGetLastError: the WARN line that says
// which setting it refused) when it has one.
func ncclErrString(r int) string {
	switch r {
	case -1:
		return "rigscope: bad argument to the NCCL shim (-1)"
	case -2:
		return "rigscope: a GPU's context could not be made current for NCCL (-2)"
	}
	msg := fmt.Sprintf("%s (ncclResult %d)", C.GoString(C.rs_nccl_errstr(C.int(r))), r)
	ncclMarkMu.Lock()
	before := ncclMarkText
	ncclMarkMu.Unlock()
	switch l := ncclLastError(); {
	case l == "":
	case l != before:
		msg += ": NCCL says: " + l
	default: // NCCL's last message did not change: it may be an earlier call's
		msg += " (NCCL's last message, which may be an earlier call's: " + l + ")"
	}
	return msg
}

// ncclLastError is NCCL's last error message (ncclGetLastError: one
// string for the process, kept until the next error).
func ncclLastError() string {
	if last := C.rs_nccl_last_error(); last != nil {
		return strings.TrimSpace(C.GoString(last))
	}
	return ""
}

// ncclMark remembers NCCL's last error message before a call, so an error
// of the call quotes NCCL's message only when the call wrote it.
var (
	ncclMarkMu   sync.Mutex
	ncclMarkText string
)

func ncclMark() {
	l := ncclLastError()
	ncclMarkMu.Lock()
	ncclMarkText = l
	ncclMarkMu.Unlock()
}

func ncclCheck(op string, r C.int) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: nccl %s: %s", op, ncclErrString(int(r)))
}

// ncclShimCheck is ncclCheck for the shim's calls that also set a CUresult
// (-2: a context could not be made current).
func ncclShimCheck(op string, r C.int, cuRes C.int) error {
	if r == -2 {
		return cres(fmt.Sprintf("nccl %s: a GPU's primary context, its memory or synchronize", op), C.CUresult(cuRes))
	}
	return ncclCheck(op, r)
}

// ncclProc is what NCCL has read once for this process (ncclcomms.go).
var ncclProc ncclProcess

// driverNCCL makes communicators through libnccl (ncclMaker).
type driverNCCL struct{}

func (driverNCCL) create(gpus []int, s NCCLSettings) ([]uintptr, error) {
	return ncclCreate(gpus, s)
}
func (driverNCCL) destroy(comms []uintptr) { ncclDestroy(comms) }

// ncclCreate makes one communicator per GPU ordinal (one process, one
// rank per GPU; NCCL refuses a GPU listed twice) with settings s:
// NCCL_PROTO, NCCL_ALGO and (for the process's first communicators)
// NCCL_BUFFSIZE set in the environment while NCCL reads them, the
// channel bounds as ncclConfig_t's minCTAs and maxCTAs
// (ncclCommInitRankConfig), and then one small allreduce on every rank, so
// a combination NCCL refuses is refused here with NCCL's message. The
// caller makes its own context current again after.
func ncclCreate(gpus []int, s NCCLSettings) ([]uintptr, error) {
	if _, err := NCCLVersion(); err != nil {
		return nil, err
	}
	buff, setBuff, err := ncclProc.admit(s, os.Getenv)
	if err != nil {
		return nil, err
	}
	return ncclMake(gpus, s, buff, setBuff)
}

// ncclMake is ncclCreate once the settings are admitted: buff is the
// buffer size the communicators will have, setBuff the NCCL_BUFFSIZE to
// set while they are made ("": leave the environment). The device check
// calls it with settings Check refuses, to see NCCL's own refusal.
func ncclMake(gpus []int, s NCCLSettings, buff int64, setBuff string) ([]uintptr, error) {
	if _, err := NCCLVersion(); err != nil {
		return nil, err
	}
	if len(gpus) < 1 || len(gpus) > 64 {
		return nil, fmt.Errorf("cuda: nccl: %d ranks (1 to 64)", len(gpus))
	}
	config := C.rs_nccl_has_config() != 0
	minCTAs, maxCTAs := ncclConfigCTAs(s)
	if !config && (minCTAs > 0 || maxCTAs > 0) {
		return nil, fmt.Errorf("cuda: nccl %s: this libnccl has no ncclCommInitRankConfig (NCCL 2.14 on), so a run cannot set its channels", ncclVer)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	devs := make([]C.int, len(gpus))
	for i, o := range gpus {
		devs[i] = C.int(o)
	}
	comms := make([]C.uintptr_t, len(gpus))
	ncclMark()
	err := withNCCLEnv(s, setBuff, func() error {
		var cuRes C.int
		if config {
			if err := ncclShimCheck(fmt.Sprintf("ncclCommInitRankConfig(GPUs %v)", gpus),
				C.rs_nccl_init_config(&comms[0], C.int(len(devs)), &devs[0], C.int(minCTAs), C.int(maxCTAs), &cuRes), cuRes); err != nil {
				return err
			}
		} else if err := ncclCheck(fmt.Sprintf("ncclCommInitAll(GPUs %v)", gpus), C.rs_nccl_init_all(&comms[0], C.int(len(devs)), &devs[0])); err != nil {
			return err
		}
		ncclProc.madeWith(buff)
		if err := ncclShimCheck("probe allreduce", C.rs_nccl_probe(&comms[0], C.int(len(devs)), &devs[0], 1024, &cuRes), cuRes); err != nil {
			for _, c := range comms {
				C.rs_nccl_destroy(c)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]uintptr, len(comms))
	for i, c := range comms {
		out[i] = uintptr(c)
	}
	return out, nil
}

// withNCCLEnv runs f (which creates communicators) with NCCL_PROTO and
// NCCL_ALGO set from s and NCCL_BUFFSIZE set to buff when buff is not "",
// and restores the environment after: NCCL reads them when a
// communicator is made (NCCL_BUFFSIZE only for the process's first).
func withNCCLEnv(s NCCLSettings, buff string, f func() error) error {
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
	set("NCCL_BUFFSIZE", buff)
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
	ncclMark()
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
