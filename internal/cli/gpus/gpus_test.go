package gpus

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"rigscope/gpu"
	"rigscope/gpu/gpufake"
)

func TestGPUsCommand(t *testing.T) {
	tests := []struct {
		name string
		open func() *gpu.Sampler
		args []string
		want []string
	}{
		{
			name: "no NVML",
			open: func() *gpu.Sampler {
				return gpu.OpenLibrary(nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")), gpu.Options{})
			},
			want: []string{"NVML unavailable: nvmlInit: libnvidia-ml.so not found", "exit status 0"},
		},
		{
			name: "two mock H200s",
			open: func() *gpu.Sampler {
				s, devs := gpufake.Server(2)
				devs[1].GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
				return gpu.OpenLibrary(s, gpu.Options{})
			},
			args: []string{"--interval", "1ms"},
			want: []string{
				"NVIDIA H200 141GB HBM3e", "Gen5 x16", "2.0 MB/s", "4.0 MB/s", "87 %", "412.5 W",
				"n/a (not supported on this GPU)", "1980 MHz", "61 °C",
				"GPU0    X       SYS", "OK/OK", "Legend:", "TX/RX measured with: PCIe byte counters",
			},
		},
	}
	for _, tc := range tests {
		openGPUSampler = tc.open
		var out, errOut bytes.Buffer
		err := runGPUs(context.Background(), tc.args, &out, &errOut)
		if err != nil {
			t.Errorf("%s: rigscope gpus %v = %v, want nil", tc.name, tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: rigscope gpus %v printed\n%s\nwant it to contain %q", tc.name, tc.args, out.String(), w)
			}
		}
	}
	openGPUSampler = gpu.Open
}

func TestGPUsCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--interval", "0s"}, {"extra"}} {
		var out, errOut bytes.Buffer
		if err := runGPUs(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("rigscope gpus %v = nil, want an error", args)
		}
	}
}
