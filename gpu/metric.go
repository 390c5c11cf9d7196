package gpu

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Metric is one reading that may be unavailable; Why says why when !OK.
type Metric struct {
	Value float64 `json:"value"`
	OK    bool    `json:"ok"`
	Why   string  `json:"why,omitempty"`
}

// Val is an available reading.
func Val(v float64) Metric { return Metric{Value: v, OK: true} }

// Unavailable is a reading that could not be taken, with the reason.
func Unavailable(why string) Metric { return Metric{Why: why} }

// String formats the value with %g, or "n/a (why)".
func (m Metric) String() string {
	return m.Format(func(v float64) string { return fmt.Sprintf("%g", v) })
}

// Format formats an available value with f, or "n/a (why)".
func (m Metric) Format(f func(float64) string) string {
	if m.OK {
		return f(m.Value)
	}
	if m.Why == "" {
		return "n/a"
	}
	return "n/a (" + m.Why + ")"
}

// Or returns the value when available and def otherwise.
func (m Metric) Or(def float64) float64 {
	if m.OK {
		return m.Value
	}
	return def
}

// reason turns an NVML return code into a short human reason.
func reason(r nvml.Return) string {
	switch r {
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported on this GPU"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "libnvidia-ml.so not found (no NVIDIA driver installed)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA driver not loaded"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost"
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return "driver too old for this call"
	case nvml.ERROR_UNINITIALIZED:
		return "NVML not initialized"
	case nvml.ERROR_TIMEOUT:
		return "timed out"
	}
	s := strings.ToLower(strings.TrimPrefix(r.Error(), "ERROR_"))
	return strings.ReplaceAll(s, "_", " ")
}

// LinkString renders a PCIe link as "Gen5 x16", or "n/a (reason)".
func LinkString(gen, width Metric) string {
	switch {
	case gen.OK && width.OK:
		return fmt.Sprintf("Gen%.0f x%.0f", gen.Value, width.Value)
	case !gen.OK:
		return gen.Format(nil)
	}
	return width.Format(nil)
}
