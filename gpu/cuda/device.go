//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/kernels"
)

// Device is one GPU with its primary context and the loaded kernels. All
// methods lock the calling goroutine to its OS thread and make the context
// current first (Go moves goroutines between threads).
type Device struct {
	Ordinal      int
	Name         string
	Major, Minor int
	SMs          int
	TotalMem     int64
	PTX          string // which image was loaded ("sm_90 cubin", "sm_90", "sm_80", or RIGSCOPE_CUDA_PTX's path)

	dev cu.Device
	ctx cu.CUContext
	mod cu.Module
	fns map[string]cu.Function
	mu  sync.Mutex
}

var (
	initOnce sync.Once
	initErr  error
)

// ErrNoGPU is returned when the driver is present but sees no device.
var ErrNoGPU = errors.New("cuda: no CUDA device found")

func driverInit() error {
	initOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				initErr = fmt.Errorf("cuda: driver not usable: %v", r)
			}
		}()
		if err := cuInit(); err != nil {
			initErr = fmt.Errorf("no usable NVIDIA GPU (%s): check nvidia-smi, or run with --device cpu", strings.TrimPrefix(err.Error(), "cuda: "))
		}
	})
	return initErr
}

// Count reports how many CUDA devices the driver sees.
func Count() (int, error) {
	if err := driverInit(); err != nil {
		return 0, err
	}
	n, err := cu.NumDevices()
	if err != nil {
		return 0, fmt.Errorf("cuda: cuDeviceGetCount: %w", err)
	}
	return n, nil
}

// Open retains device ordinal's primary context and loads the kernels.
func Open(ordinal int) (*Device, error) {
	if _, err := CurrentTuning(); err != nil { // checked once here; later reads use the parsed knobs
		return nil, err
	}
	n, err := Count()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoGPU
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d requested, the driver sees %d", ordinal, n)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := &Device{Ordinal: ordinal, fns: map[string]cu.Function{}}
	if d.dev, err = cu.GetDevice(ordinal); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	if d.Name, err = d.dev.Name(); err != nil {
		return nil, fmt.Errorf("cuda: device %d name: %w", ordinal, err)
	}
	attrs, err := d.dev.Attributes(cu.ComputeCapabilityMajor, cu.ComputeCapabilityMinor, cu.MultiprocessorCount)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d attributes: %w", ordinal, err)
	}
	d.Major, d.Minor, d.SMs = attrs[0], attrs[1], attrs[2]
	if d.TotalMem, err = d.dev.TotalMem(); err != nil {
		return nil, fmt.Errorf("cuda: device %d memory: %w", ordinal, err)
	}
	if d.Major < 8 {
		return nil, fmt.Errorf("cuda: device %d (%s) has compute capability %d.%d; the kernels need 8.0 or newer", ordinal, d.Name, d.Major, d.Minor)
	}
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: device %d: retain primary context: %w", ordinal, err)
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return nil, fmt.Errorf("cuda: device %d: make context current: %w", ordinal, err)
	}
	if err := d.load(); err != nil {
		return nil, err
	}
	if t, _ := CurrentTuning(); !t.L2Prefetch { // the kernels' default is 1 (kernels.cu l2_prefetch)
		if err := d.setGlobalInt("l2_prefetch", 0); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// load loads the kernels' module: RIGSCOPE_CUDA_PTX's file when set (a
// rebuilt variant or a cubin, for comparisons: bench/cuda/variants.sh),
// else the embedded images in order (kernels.For): if the driver refuses
// the cubin, the PTX it compiles itself.
func (d *Device) load() error {
	if path := tunedPTX(); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("cuda: RIGSCOPE_CUDA_PTX: %w", err)
		}
		d.PTX = path
		if d.mod, err = cu.LoadData(string(b)); err != nil {
			return fmt.Errorf("cuda: loading %s on %s (compute %d.%d) failed: %w", path, d.Name, d.Major, d.Minor, err)
		}
		return nil
	}
	var errs []error
	for _, im := range kernels.For(d.Major, d.Minor) {
		image, err := im.Load()
		if err != nil {
			return err
		}
		if d.mod, err = cu.LoadData(image); err == nil {
			d.PTX = im.Name
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", im.Name, err))
	}
	return fmt.Errorf("cuda: loading the kernels on %s (compute %d.%d) failed: %w (the driver may be older than the PTX; rebuild with `go generate ./kernels` using an older nvcc)", d.Name, d.Major, d.Minor, errors.Join(errs...))
}

// setGlobalInt writes v into the module's __device__ int name (a switch
// the kernels read; the context is current while Open loads the module).
func (d *Device) setGlobalInt(name string, v int32) error {
	p, size, err := d.mod.Global(name)
	if err != nil || size != 4 {
		return fmt.Errorf("cuda: the module's %s (int, %d bytes): %v", name, size, err)
	}
	if err := cu.MemcpyHtoD(p, unsafe.Pointer(&v), 4); err != nil {
		return fmt.Errorf("cuda: setting %s: %w", name, err)
	}
	return nil
}

// Bind locks the goroutine to its thread and makes the context current.
// Call the returned function (UnlockOSThread) when done.
func (d *Device) Bind() (func(), error) {
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		runtime.UnlockOSThread()
		return func() {}, fmt.Errorf("cuda: make context of device %d current: %w", d.Ordinal, err)
	}
	return runtime.UnlockOSThread, nil
}

// Do runs f with d's context current on a locked thread.
func (d *Device) Do(f func() error) error {
	unbind, err := d.Bind()
	if err != nil {
		return err
	}
	defer unbind()
	return f()
}

// fn looks up a kernel by name (cached).
func (d *Device) fn(name string) (cu.Function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.fns[name]; ok {
		return f, nil
	}
	f, err := d.mod.Function(name)
	if err != nil {
		return f, fmt.Errorf("cuda: kernel %q not in the %s PTX: %w", name, d.PTX, err)
	}
	d.fns[name] = f
	return f, nil
}

// has says whether the PTX holds kernel name.
func (d *Device) has(name string) bool {
	_, err := d.fn(name)
	return err == nil
}

// MemInfo reports free and total device memory (context must be bound).
func (d *Device) MemInfo() (free, total int64, err error) {
	free, total, err = cu.MemInfo()
	if err != nil {
		err = fmt.Errorf("cuda: cuMemGetInfo: %w", err)
	}
	return
}

func (d *Device) String() string {
	return fmt.Sprintf("%s (device %d, compute %d.%d, %d SMs, %.1f GiB, PTX %s)", d.Name, d.Ordinal, d.Major, d.Minor, d.SMs, float64(d.TotalMem)/(1<<30), d.PTX)
}

// tunedPTX is RIGSCOPE_CUDA_PTX (Tuning.PTX).
func tunedPTX() string { t, _ := CurrentTuning(); return t.PTX }
