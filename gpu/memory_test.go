package gpu

import (
	"runtime"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// cheapDevice answers the sampled calls without recording them (go-nvml's
// mocks keep every call, which would itself grow over an hour). Calls it
// does not override panic on the nil interface and read as unavailable.
type cheapDevice struct {
	nvml.Device
	n uint64
}

func (d *cheapDevice) GetFieldValues(vals []nvml.FieldValue) nvml.Return {
	d.n++
	for i := range vals {
		vals[i].NvmlReturn = uint32(nvml.SUCCESS)
		vals[i].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
		vals[i].Timestamp = int64(d.n) * 500_000
		vals[i].Value = [8]byte{byte(d.n), byte(d.n >> 8), byte(d.n >> 16)}
	}
	return nvml.SUCCESS
}
func (d *cheapDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return nvml.Utilization{Gpu: uint32(d.n % 100)}, nvml.SUCCESS
}
func (d *cheapDevice) GetPowerUsage() (uint32, nvml.Return) { return 300_000, nvml.SUCCESS }

// TestMemoryFlatOverAnHour pushes one hour of 500 ms samples for 4 GPUs
// through the rings while a view takes 15 snapshots a second, and checks
// the live heap after the first quarter hour and at the end.
func TestMemoryFlatOverAnHour(t *testing.T) {
	const gpus, hour = 4, 3600
	s := &Sampler{}
	for i := range gpus {
		s.gpus = append(s.gpus, &gpuState{dev: &device{dev: &cheapDevice{}, counters: true, info: Info{Index: i}}, ring: NewRing[Sample](1200)})
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	start := time.Unix(0, 0)
	var quarter uint64
	for sec := range hour {
		for half := range 2 {
			for _, g := range s.gpus {
				g.sample(start.Add(time.Duration(sec)*time.Second + time.Duration(half)*DefaultInterval))
			}
		}
		for range 15 {
			_ = s.Snapshot()
		}
		if sec == hour/4 {
			quarter = heap()
		}
	}
	end := heap()
	runtime.KeepAlive(s)
	t.Logf("heap after 15 min: %d KiB, after 60 min: %d KiB (4 GPUs, 7200 samples each, 54000 snapshots)", quarter>>10, end>>10)
	if end > quarter+256<<10 {
		t.Errorf("heap grew from %d to %d bytes between minute 15 and minute 60", quarter, end)
	}
}
