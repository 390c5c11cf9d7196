package ui

import (
	"math"
	"strings"
	"testing"

	"rigscope/engine/metrics"
	"rigscope/gpu"
)

// The engine's bytes of the ranks on each GPU, beside its PCIe counters.
func TestGPUTraffic(t *testing.T) {
	f := &frame{
		gpus: []gpu.GPUSnapshot{{Info: gpu.Info{Index: 0}}, {Info: gpu.Info{Index: 1}}},
		snap: metrics.Snapshot{Running: true, RankGPU: []int{0, 0, 1}, RankBytesSent: []int64{10, 20, 40}, RankBytesRecv: []int64{1, 2, 4}},
		// per rank, the bytes/s series: rank 1's latest interval unknown
		rankTX: [][]float64{{5, 100}, {7, math.NaN()}, {300}},
		rankRX: [][]float64{{1, 10}, {2, 20}, {30}},
	}
	fillGPUTraffic(f)
	want := []gpuTraffic{{ranks: []int{0, 1}, tx: 100, rx: 30, sent: 30, recv: 3}, {ranks: []int{2}, tx: 300, rx: 30, sent: 40, recv: 4}}
	for i, w := range want {
		g := f.gpuEngine[i]
		if len(g.ranks) != len(w.ranks) || g.tx != w.tx || g.rx != w.rx || g.sent != w.sent || g.recv != w.recv {
			t.Errorf("GPU %d: %+v, want %+v", i, g, w)
		}
	}
	if s := engineLine(f.gpuEngine[0], true); !strings.Contains(s, "ranks 0–1") || !strings.Contains(s, "100 B/s") {
		t.Errorf("engineLine = %q", s)
	}
	if s := engineLine(gpuTraffic{}, true); s != "" {
		t.Errorf("a GPU with no ranks: %q, want nothing", s)
	}
	f.snap.RankGPU = nil // CPU ranks: no GPU has engine traffic
	fillGPUTraffic(f)
	if len(f.gpuEngine[0].ranks)+len(f.gpuEngine[1].ranks) != 0 {
		t.Errorf("CPU ranks placed on GPUs: %+v", f.gpuEngine)
	}
}
