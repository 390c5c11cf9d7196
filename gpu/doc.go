// Package gpu reads per-GPU telemetry through NVML (github.com/NVIDIA/go-nvml):
// name, PCIe link generation and width, PCIe TX/RX throughput, utilization,
// memory, power, SM clock and temperature, plus the topology matrix between
// GPU pairs in `nvidia-smi topo -m` terms.
//
// NVML is loaded at run time (dlopen). Without a driver, without
// libnvidia-ml.so, or for a call this GPU does not support, the package
// reports an "unavailable" state with a reason — per metric where it can —
// and never fails the caller. Tests inject fakes through the Library
// interface (go-nvml's mock package satisfies it).
//
// A Sampler runs one goroutine per GPU (GetPcieThroughput blocks for about
// 20 ms) writing fixed-size ring buffers; views read copies via Snapshot.
package gpu
