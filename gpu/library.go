package gpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Library is the part of nvml.Interface this package uses; nvml.New() and
// go-nvml's mock.Interface (and mock/server.Server) both satisfy it.
type Library interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return)
}

// UnavailableError says why NVML as a whole cannot be used.
type UnavailableError struct {
	Op  string      // the call that failed, e.g. "nvmlInit"
	Ret nvml.Return // NVML's code
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("NVML unavailable: %s: %s", e.Op, reason(e.Ret))
}

// guard calls f and turns a panic inside NVML bindings (a mock without the
// function set, a binding the loaded driver lacks) into an NVML error code,
// so telemetry never takes the program down.
func guard[T any](f func() (T, nvml.Return)) (v T, r nvml.Return) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, r = zero, nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

// metricOf converts a guarded NVML reading to a Metric with conv.
func metricOf[T any](f func() (T, nvml.Return), conv func(T) float64) Metric {
	v, r := guard(f)
	if r != nvml.SUCCESS {
		return Unavailable(reason(r))
	}
	return Val(conv(v))
}
