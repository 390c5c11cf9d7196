package gpu

import (
	"fmt"
	"io"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Link is how GPU i reaches GPU j, in `nvidia-smi topo -m` terms.
type Link struct {
	// Level is X (self), NV# (# bonded NVLinks), PIX, PXB, PHB, NODE, SYS,
	// or "?" when NVML could not tell (Why says why).
	Level    string `json:"level"`
	NVLinks  int    `json:"nvlinks,omitempty"`
	P2PRead  string `json:"p2p_read"`  // OK, CNS, GNS, TNS, NS, U, X, or "?"
	P2PWrite string `json:"p2p_write"` // as P2PRead
	Why      string `json:"why,omitempty"`
}

// Topology is the matrix of links between every GPU pair.
type Topology struct {
	GPUs  []string `json:"gpus"`  // GPU0, GPU1, ...
	Links [][]Link `json:"links"` // [i][j]; Links[i][i].Level == "X"
}

// TopologyLegend explains the matrix's abbreviations, as nvidia-smi does.
const TopologyLegend = `  X    = self
  SYS  = through PCIe and the SMP interconnect between NUMA nodes (e.g. QPI/UPI)
  NODE = through PCIe and the interconnect between host bridges within a NUMA node
  PHB  = through PCIe and a PCIe host bridge (typically the CPU)
  PXB  = through multiple PCIe bridges (without the host bridge)
  PIX  = through at most a single PCIe bridge
  NV#  = through a bonded set of # NVLinks
P2P: OK = supported, CNS = chipset not supported, GNS = GPU not supported,
  TNS = topology not supported, NS = not supported, U = unknown`

func levelName(l nvml.GpuTopologyLevel) string {
	switch l {
	case nvml.TOPOLOGY_INTERNAL:
		return "X"
	case nvml.TOPOLOGY_SINGLE:
		return "PIX"
	case nvml.TOPOLOGY_MULTIPLE:
		return "PXB"
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return "PHB"
	case nvml.TOPOLOGY_NODE:
		return "NODE"
	case nvml.TOPOLOGY_SYSTEM:
		return "SYS"
	}
	return "?"
}

func p2pName(s nvml.GpuP2PStatus) string {
	switch s {
	case nvml.P2P_STATUS_OK:
		return "OK"
	case nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED:
		return "CNS"
	case nvml.P2P_STATUS_GPU_NOT_SUPPORTED:
		return "GNS"
	case nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
		return "TNS"
	case nvml.P2P_STATUS_DISABLED_BY_REGKEY, nvml.P2P_STATUS_NOT_SUPPORTED:
		return "NS"
	}
	return "U"
}

// nvlinkPeers counts, for one device, its active NVLinks per remote PCI
// address. Links that end at an address no GPU has (an NVSwitch) count
// toward switched.
func nvlinkPeers(dev nvml.Device, gpuAt map[pciAddr]int) (perGPU map[int]int, switched int) {
	perGPU = map[int]int{}
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		state, r := guard(func() (nvml.EnableState, nvml.Return) { return dev.GetNvLinkState(l) })
		if r != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
			continue
		}
		remote, r := guard(func() (nvml.PciInfo, nvml.Return) { return dev.GetNvLinkRemotePciInfo(l) })
		if r != nvml.SUCCESS {
			continue
		}
		if j, ok := gpuAt[pciAddr{remote.Domain, remote.Bus, remote.Device}]; ok {
			perGPU[j]++
		} else {
			switched++
		}
	}
	return perGPU, switched
}

// readTopology builds the matrix for devs (index order).
func readTopology(devs []nvml.Device) *Topology {
	n := len(devs)
	t := &Topology{GPUs: make([]string, n), Links: make([][]Link, n)}
	gpuAt := map[pciAddr]int{}
	for i, d := range devs {
		t.GPUs[i] = fmt.Sprintf("GPU%d", i)
		if p, r := guard(d.GetPciInfo); r == nvml.SUCCESS {
			gpuAt[pciAddr{p.Domain, p.Bus, p.Device}] = i
		}
	}
	peers := make([]map[int]int, n)
	switched := make([]int, n)
	for i, d := range devs {
		peers[i], switched[i] = nvlinkPeers(d, gpuAt)
	}
	for i := range devs {
		t.Links[i] = make([]Link, n)
		for j := range devs {
			t.Links[i][j] = readLink(devs, i, j, peers, switched)
		}
	}
	return t
}

func readLink(devs []nvml.Device, i, j int, peers []map[int]int, switched []int) Link {
	if i == j {
		return Link{Level: "X", P2PRead: "X", P2PWrite: "X"}
	}
	var lk Link
	a, b := devs[i], devs[j]
	if nv := peers[i][j] + min(switched[i], switched[j]); nv > 0 {
		lk.Level, lk.NVLinks = fmt.Sprintf("NV%d", nv), nv
	} else {
		level, r := guard(func() (nvml.GpuTopologyLevel, nvml.Return) { return a.GetTopologyCommonAncestor(b) })
		if r == nvml.SUCCESS {
			lk.Level = levelName(level)
		} else {
			lk.Level, lk.Why = "?", reason(r)
		}
	}
	p2p := func(c nvml.GpuP2PCapsIndex) string {
		s, r := guard(func() (nvml.GpuP2PStatus, nvml.Return) { return a.GetP2PStatus(b, c) })
		if r != nvml.SUCCESS {
			return "?"
		}
		return p2pName(s)
	}
	lk.P2PRead, lk.P2PWrite = p2p(nvml.P2P_CAPS_INDEX_READ), p2p(nvml.P2P_CAPS_INDEX_WRITE)
	return lk
}

// WriteMatrix prints the link matrix like `nvidia-smi topo -m`, then the
// P2P read/write matrix, then the legend.
func (t *Topology) WriteMatrix(w io.Writer) error {
	var b strings.Builder
	cell := func(s string) { fmt.Fprintf(&b, "%-8s", s) }
	header := func(title string) {
		cell(title)
		for _, g := range t.GPUs {
			cell(g)
		}
		b.WriteString("\n")
	}
	header("")
	for i, g := range t.GPUs {
		cell(g)
		for j := range t.GPUs {
			cell(t.Links[i][j].Level)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	header("P2P r/w")
	for i, g := range t.GPUs {
		cell(g)
		for j := range t.GPUs {
			lk := t.Links[i][j]
			if i == j {
				cell("X")
			} else {
				cell(lk.P2PRead + "/" + lk.P2PWrite)
			}
		}
		b.WriteString("\n")
	}
	for i := range t.Links {
		for j, lk := range t.Links[i] {
			if lk.Why != "" {
				fmt.Fprintf(&b, "GPU%d-GPU%d: %s\n", i, j, lk.Why)
			}
		}
	}
	b.WriteString("\nLegend:\n" + TopologyLegend + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
