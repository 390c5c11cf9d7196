// Package gpufake builds mock NVML servers (go-nvml's mock/server) with
// working telemetry calls, for tests and for demonstrating the panel on a
// machine without GPUs.
package gpufake

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Per-read increments of the fake cumulative PCIe counters, and the NVML
// time between reads: TX runs at 2 MB/s and RX at 4 MB/s.
const (
	TXPerRead   = 1_000_000
	RXPerRead   = 2_000_000
	MicrosPerRd = 500_000
)

// Server returns a mock DGX H200 with n GPUs at PCI bus 0x10+i. Each GPU
// reports Gen5 x16, 87% utilization, 412.5 W, 1980 MHz, 61 °C, cumulative
// PCIe byte counters (TXPerRead/RXPerRead per MicrosPerRd of NVML time),
// SYS topology between all pairs, P2P OK, no NVLink. Tests override single
// *Func fields of the returned devices to inject failures.
func Server(n int) (*server.Server, []*server.Device) {
	s := dgxh200.NewWithGPUs(gpus.Multiple(n, gpus.H200_SXM5_141GB)...)
	devs := make([]*server.Device, n)
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		devs[i] = dev
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{Domain: 0, Bus: uint32(0x10 + i), Device: 0}, nvml.SUCCESS
		}
		dev.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
		dev.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		dev.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
		dev.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: 87, Memory: 40}, nvml.SUCCESS
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 412_500, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 61, nvml.SUCCESS }
		var reads atomic.Int64
		dev.GetFieldValuesFunc = func(vals []nvml.FieldValue) nvml.Return {
			k := reads.Add(1) - 1
			for j := range vals {
				v := &vals[j]
				v.Timestamp = 1_000_000 + k*MicrosPerRd
				v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				v.NvmlReturn = uint32(nvml.SUCCESS)
				per := uint64(TXPerRead)
				if v.FieldId == nvml.FI_DEV_PCIE_COUNT_RX_BYTES {
					per = RXPerRead
				}
				binary.NativeEndian.PutUint64(v.Value[:], 5_000_000+uint64(k)*per)
			}
			return nvml.SUCCESS
		}
		dev.GetTopologyCommonAncestorFunc = func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		dev.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		dev.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	}
	return s, devs
}
