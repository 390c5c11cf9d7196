package gpu

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"rigscope/gpu/gpufake"
)

func fakeServer(t *testing.T, n int) (*server.Server, []*server.Device) {
	t.Helper()
	return gpufake.Server(n)
}

func TestOpenWithoutLibrary(t *testing.T) {
	s := OpenLibrary(nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")), Options{})
	defer s.Close()
	var ue *UnavailableError
	if err := s.Err(); !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "NVML unavailable: ") {
		t.Fatalf("OpenLibrary(missing library).Err() = %v, want an *UnavailableError starting %q", err, "NVML unavailable: ")
	}
	if s.Count() != 0 || s.Topology() != nil || len(s.Snapshot()) != 0 {
		t.Errorf("OpenLibrary(missing library): Count=%d Topology=%v Snapshot=%v, want nothing", s.Count(), s.Topology(), s.Snapshot())
	}
	s.Start(context.Background(), time.Millisecond) // must not crash with no GPUs
	s.SampleOnce()
}

func TestOpenInitFailures(t *testing.T) {
	tests := []struct {
		name string
		set  func(s *server.Server)
		want string
	}{
		{"driver not loaded", func(s *server.Server) {
			s.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
		}, "NVML unavailable: nvmlInit: NVIDIA driver not loaded"},
		{"count fails", func(s *server.Server) {
			s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NO_PERMISSION }
		}, "NVML unavailable: nvmlDeviceGetCount: no permission"},
		{"init panics", func(s *server.Server) { s.InitFunc = nil }, "NVML unavailable: nvmlInit: driver too old for this call"},
	}
	for _, tc := range tests {
		srv, _ := fakeServer(t, 1)
		tc.set(srv)
		s := OpenLibrary(srv, Options{})
		if err := s.Err(); err == nil || err.Error() != tc.want {
			t.Errorf("%s: OpenLibrary().Err() = %v, want %q", tc.name, err, tc.want)
		}
		s.Close()
	}
}

func TestSampleCounters(t *testing.T) {
	srv, _ := fakeServer(t, 2)
	s := OpenLibrary(srv, Options{History: 4})
	defer s.Close()
	if s.Err() != nil || s.Count() != 2 {
		t.Fatalf("OpenLibrary(mock 2x H200): Err=%v Count=%d, want nil, 2", s.Err(), s.Count())
	}
	for range 6 {
		s.SampleOnce()
	}
	snaps := s.Snapshot()
	g := snaps[1]
	if g.Name != "NVIDIA H200 141GB HBM3e" || g.Index != 1 || g.BusID != "0000:11:00.0" {
		t.Errorf("Snapshot()[1].Info = %+v", g.Info)
	}
	if g.Seq != 6 || len(g.TX) != 4 {
		t.Errorf("after 6 SampleOnce with History 4: Seq=%d len(TX)=%d, want 6, 4", g.Seq, len(g.TX))
	}
	l := g.Latest
	checks := []struct {
		name string
		m    Metric
		want float64
	}{
		{"TX", l.TX, 2e6}, {"RX", l.RX, 4e6}, {"Util", l.Util, 87}, {"MemUtil", l.MemUtil, 40},
		{"Power", l.Power, 412.5}, {"SMClock", l.SMClock, 1980}, {"Temp", l.Temp, 61},
		{"LinkGen", l.LinkGen, 5}, {"LinkWidth", l.LinkWidth, 16}, {"MaxLinkWidth", g.MaxLinkWidth, 16},
		{"MemTotal", l.MemTotal, 144384 * 1024 * 1024},
	}
	for _, c := range checks {
		if !c.m.OK || c.m.Value != c.want {
			t.Errorf("Snapshot()[1].%s = %+v, want %v", c.name, c.m, c.want)
		}
	}
	if g.ThroughputSource != SourceCounters {
		t.Errorf("ThroughputSource = %q, want %q", g.ThroughputSource, SourceCounters)
	}
	if g.TX[3] != 2e6 || g.RX[3] != 4e6 || g.Util[0] != 87 {
		t.Errorf("series TX=%v RX=%v Util=%v", g.TX, g.RX, g.Util)
	}
}

func TestFirstCounterSampleIsMeasuring(t *testing.T) {
	srv, _ := fakeServer(t, 1)
	s := OpenLibrary(srv, Options{})
	defer s.Close()
	s.SampleOnce()
	g := s.Snapshot()[0]
	if g.Latest.TX.OK || g.Latest.TX.Why != "measuring" || !math.IsNaN(g.TX[0]) {
		t.Errorf("first sample TX = %+v series %v, want unavailable \"measuring\" and NaN", g.Latest.TX, g.TX)
	}
}

func TestSampleFailures(t *testing.T) {
	srv, devs := fakeServer(t, 1)
	d := devs[0]
	d.GetFieldValuesFunc = func([]nvml.FieldValue) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
	d.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
		if c == nvml.PCIE_UTIL_TX_BYTES {
			return 1000, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NO_PERMISSION
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetTemperatureFunc = nil // a mock without the call panics; it must read as unavailable
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	s := OpenLibrary(srv, Options{})
	defer s.Close()
	s.SampleOnce()
	g := s.Snapshot()[0]
	l := g.Latest
	checks := []struct {
		name string
		m    Metric
		want Metric
	}{
		{"TX", l.TX, Val(1000 * 1024)},
		{"RX", l.RX, Unavailable("no permission")},
		{"Power", l.Power, Unavailable("not supported on this GPU")},
		{"Temp", l.Temp, Unavailable("driver too old for this call")},
		{"Util", l.Util, Unavailable("GPU is lost")},
		{"MemUtil", l.MemUtil, Unavailable("GPU is lost")},
		{"MaxLinkGen", g.MaxLinkGen, Unavailable("not supported on this GPU")},
		{"SMClock", l.SMClock, Val(1980)},
	}
	for _, c := range checks {
		if c.m != c.want {
			t.Errorf("with failing calls: %s = %+v, want %+v", c.name, c.m, c.want)
		}
	}
	if g.ThroughputSource != SourceSampled {
		t.Errorf("ThroughputSource = %q, want %q", g.ThroughputSource, SourceSampled)
	}
	if got := l.Power.Format(func(float64) string { return "x" }); got != "n/a (not supported on this GPU)" {
		t.Errorf("Power.Format = %q", got)
	}
}

func TestStartClose(t *testing.T) {
	srv, _ := fakeServer(t, 3)
	s := OpenLibrary(srv, Options{History: 8})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx, time.Millisecond)
	s.Start(ctx, time.Millisecond) // no-op
	deadline := time.Now().Add(10 * time.Second)
	for {
		snaps := s.Snapshot()
		done := true
		for _, g := range snaps {
			done = done && g.Seq >= 3
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Start(1ms): samples after 10 s: %+v", snaps)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	seq := s.Snapshot()[0].Seq
	time.Sleep(10 * time.Millisecond)
	if got := s.Snapshot()[0].Seq; got != seq {
		t.Errorf("after Close, Seq moved from %d to %d", seq, got)
	}
}

func TestTopology(t *testing.T) {
	srv, devs := fakeServer(t, 4)
	idx := func(d nvml.Device) int {
		for i, x := range devs {
			if nvml.Device(x) == d {
				return i
			}
		}
		return -1
	}
	for i, d := range devs {
		d.GetTopologyCommonAncestorFunc = func(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			j := idx(o)
			switch {
			case i/2 == j/2:
				return nvml.TOPOLOGY_MULTIPLE, nvml.SUCCESS
			case i == 3 || j == 3:
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.TOPOLOGY_NODE, nvml.SUCCESS
		}
		d.GetP2PStatusFunc = func(o nvml.Device, c nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			if c == nvml.P2P_CAPS_INDEX_WRITE && i/2 != idx(o)/2 {
				return nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED, nvml.SUCCESS
			}
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		// GPU0 and GPU1 share 4 direct NVLinks (links 0..3).
		d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
			if i < 2 && l < 4 {
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(int) (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{Bus: uint32(0x10 + 1 - i)}, nvml.SUCCESS
		}
	}
	s := OpenLibrary(srv, Options{})
	defer s.Close()
	topo := s.Topology()
	want := [][]string{
		{"X", "NV4", "NODE", "?"},
		{"NV4", "X", "NODE", "?"},
		{"NODE", "NODE", "X", "PXB"},
		{"?", "?", "PXB", "X"},
	}
	for i := range want {
		for j := range want[i] {
			if got := topo.Links[i][j].Level; got != want[i][j] {
				t.Errorf("Topology().Links[%d][%d].Level = %q, want %q", i, j, got, want[i][j])
			}
		}
	}
	if lk := topo.Links[0][2]; lk.P2PRead != "OK" || lk.P2PWrite != "CNS" {
		t.Errorf("Links[0][2] P2P = %s/%s, want OK/CNS", lk.P2PRead, lk.P2PWrite)
	}
	if lk := topo.Links[0][3]; lk.Why != "not supported on this GPU" {
		t.Errorf("Links[0][3].Why = %q", lk.Why)
	}
	var b bytes.Buffer
	if err := topo.WriteMatrix(&b); err != nil {
		t.Fatal(err)
	}
	first := "        GPU0    GPU1    GPU2    GPU3    \nGPU0    X       NV4     NODE    ?       \n"
	if !strings.HasPrefix(b.String(), first) || !strings.Contains(b.String(), "OK/CNS") {
		t.Errorf("WriteMatrix =\n%s\nwant it to start\n%s", b.String(), first)
	}
}

func TestTopologyNVSwitch(t *testing.T) {
	srv, devs := fakeServer(t, 2)
	for _, d := range devs {
		d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
			if l < 18 {
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{Bus: 0xc0 + uint32(l%4)}, nvml.SUCCESS // NVSwitches
		}
	}
	s := OpenLibrary(srv, Options{})
	defer s.Close()
	if got := s.Topology().Links[0][1].Level; got != "NV18" {
		t.Errorf("GPUs with 18 links to NVSwitches: Level = %q, want NV18", got)
	}
}
