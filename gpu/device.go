package gpu

import (
	"encoding/binary"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Info is what does not change while the program runs.
type Info struct {
	Index        int    `json:"index"`
	Name         string `json:"name"`
	UUID         string `json:"uuid,omitempty"`
	BusID        string `json:"bus_id,omitempty"`
	MaxLinkGen   Metric `json:"max_link_gen"`
	MaxLinkWidth Metric `json:"max_link_width"`
}

// Sample is one reading of a GPU's counters.
type Sample struct {
	At        time.Time `json:"at"`
	LinkGen   Metric    `json:"link_gen"`   // current PCIe generation
	LinkWidth Metric    `json:"link_width"` // current PCIe lanes
	TX        Metric    `json:"tx"`         // PCIe transmit, bytes/s
	RX        Metric    `json:"rx"`         // PCIe receive, bytes/s
	Util      Metric    `json:"util"`       // GPU busy, percent
	MemUtil   Metric    `json:"mem_util"`   // memory controller busy, percent
	MemUsed   Metric    `json:"mem_used"`   // bytes
	MemTotal  Metric    `json:"mem_total"`  // bytes
	Power     Metric    `json:"power"`      // watts
	SMClock   Metric    `json:"sm_clock"`   // MHz
	Temp      Metric    `json:"temp"`       // degrees Celsius
}

// Throughput sources, as shown to the user.
const (
	SourceCounters = "PCIe byte counters"
	SourceSampled  = "GetPcieThroughput (20 ms sample)"
)

// device reads one GPU. Its methods run on that GPU's sampling goroutine
// only (or under the Sampler's once-lock), never concurrently.
type device struct {
	dev  nvml.Device
	info Info

	counters   bool   // read cumulative FI_DEV_PCIE_COUNT_{TX,RX}_BYTES
	source     string // SourceCounters or SourceSampled
	havePrev   bool
	prevTX     uint64
	prevRX     uint64
	prevMicros int64 // NVML timestamp (µs) or wall clock of the previous counters
}

func newDevice(index int, dev nvml.Device) *device {
	d := &device{dev: dev, counters: true, source: SourceCounters}
	d.info.Index = index
	name, r := guard(dev.GetName)
	if r != nvml.SUCCESS {
		name = "GPU (name " + reason(r) + ")"
	}
	d.info.Name = name
	if uuid, r := guard(dev.GetUUID); r == nvml.SUCCESS {
		d.info.UUID = uuid
	}
	if pci, r := guard(dev.GetPciInfo); r == nvml.SUCCESS {
		d.info.BusID = busID(pci)
	}
	d.info.MaxLinkGen = metricOf(dev.GetMaxPcieLinkGeneration, intf)
	d.info.MaxLinkWidth = metricOf(dev.GetMaxPcieLinkWidth, intf)
	return d
}

func intf(v int) float64             { return float64(v) }
func u32f(v uint32) float64          { return float64(v) }
func milliW(v uint32) float64        { return float64(v) / 1000 }
func kiBps(v uint32) float64         { return float64(v) * 1024 } // NVML reports KB/s
func memUsed(m nvml.Memory) float64  { return float64(m.Used) }
func memTotal(m nvml.Memory) float64 { return float64(m.Total) }

// read takes one Sample; with the throughput fallback it blocks ~40 ms.
func (d *device) read(now time.Time) Sample {
	dev := d.dev
	s := Sample{At: now}
	s.LinkGen = metricOf(dev.GetCurrPcieLinkGeneration, intf)
	s.LinkWidth = metricOf(dev.GetCurrPcieLinkWidth, intf)
	s.TX, s.RX = d.readPCIe(now)
	u, r := guard(dev.GetUtilizationRates)
	if r == nvml.SUCCESS {
		s.Util, s.MemUtil = Val(float64(u.Gpu)), Val(float64(u.Memory))
	} else {
		s.Util, s.MemUtil = Unavailable(reason(r)), Unavailable(reason(r))
	}
	m, r := guard(dev.GetMemoryInfo)
	if r == nvml.SUCCESS {
		s.MemUsed, s.MemTotal = Val(memUsed(m)), Val(memTotal(m))
	} else {
		s.MemUsed, s.MemTotal = Unavailable(reason(r)), Unavailable(reason(r))
	}
	s.Power = metricOf(dev.GetPowerUsage, milliW)
	s.SMClock = metricOf(func() (uint32, nvml.Return) { return dev.GetClockInfo(nvml.CLOCK_SM) }, u32f)
	s.Temp = metricOf(func() (uint32, nvml.Return) { return dev.GetTemperature(nvml.TEMPERATURE_GPU) }, u32f)
	return s
}

// readPCIe prefers the cumulative byte counters (non-blocking; the rate is
// the difference between two reads) and falls back for good to
// GetPcieThroughput (KB/s over a 20 ms window, blocking) when the driver
// lacks them.
func (d *device) readPCIe(now time.Time) (tx, rx Metric) {
	if d.counters {
		vals := []nvml.FieldValue{
			{FieldId: nvml.FI_DEV_PCIE_COUNT_TX_BYTES},
			{FieldId: nvml.FI_DEV_PCIE_COUNT_RX_BYTES},
		}
		_, r := guard(func() (struct{}, nvml.Return) { return struct{}{}, d.dev.GetFieldValues(vals) })
		txB, okT := fieldUint(vals[0])
		rxB, okR := fieldUint(vals[1])
		if r == nvml.SUCCESS && okT && okR {
			return d.rates(now, vals[0].Timestamp, txB, rxB)
		}
		d.counters, d.source = false, SourceSampled
	}
	tx = metricOf(func() (uint32, nvml.Return) { return d.dev.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES) }, kiBps)
	rx = metricOf(func() (uint32, nvml.Return) { return d.dev.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES) }, kiBps)
	return tx, rx
}

// rates turns two cumulative counter reads into bytes per second.
func (d *device) rates(now time.Time, stampMicros int64, txB, rxB uint64) (tx, rx Metric) {
	if stampMicros <= 0 {
		stampMicros = now.UnixMicro()
	}
	prevOK := d.havePrev && stampMicros > d.prevMicros && txB >= d.prevTX && rxB >= d.prevRX
	dt := float64(stampMicros-d.prevMicros) / 1e6
	if prevOK {
		tx, rx = Val(float64(txB-d.prevTX)/dt), Val(float64(rxB-d.prevRX)/dt)
	} else {
		tx, rx = Unavailable("measuring"), Unavailable("measuring")
	}
	d.havePrev, d.prevTX, d.prevRX, d.prevMicros = true, txB, rxB, stampMicros
	return tx, rx
}

// fieldUint decodes an unsigned NVML field value.
func fieldUint(f nvml.FieldValue) (uint64, bool) {
	if nvml.Return(f.NvmlReturn) != nvml.SUCCESS {
		return 0, false
	}
	switch nvml.ValueType(f.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG:
		return binary.NativeEndian.Uint64(f.Value[:]), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(f.Value[:4])), true
	}
	return 0, false
}

// busID renders the PCI address as domain:bus:device.0 in lower case.
func busID(p nvml.PciInfo) string {
	return pciAddr{p.Domain, p.Bus, p.Device}.String()
}

type pciAddr struct{ domain, bus, device uint32 }

func (a pciAddr) String() string {
	const hex = "0123456789abcdef"
	b := []byte("0000:00:00.0")
	put := func(at int, v uint32, n int) {
		for i := n - 1; i >= 0; i-- {
			b[at+i] = hex[v&0xf]
			v >>= 4
		}
	}
	put(0, a.domain, 4)
	put(5, a.bus, 2)
	put(8, a.device, 2)
	return string(b)
}
