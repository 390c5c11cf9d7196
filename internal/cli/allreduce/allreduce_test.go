package allreduce

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseGPUBackends(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"all", gpuBackendNames, ""},
		{"nccl,auto", []string{"nccl", "auto"}, ""},
		{" oneshot , oneshot,host", []string{"oneshot", "host"}, ""},
		{"ring", nil, `"ring" is not a GPU backend`},
		{"", nil, `"" is not a GPU backend`},
		{"nccl,compressed", nil, `"compressed" is not a GPU backend`},
	} {
		got, err := parseGPUBackends(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseGPUBackends(%q) error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseGPUBackends(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSizesAndRanks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
		err  bool
	}{
		{"1K:8K", []int64{1024, 2048, 4096, 8192}, false},
		{"4,16,1M", []int64{4, 16, 1 << 20}, false},
		{"1K:64M", nil, false},
		{"6", nil, true},     // not whole float32s
		{"8K:1K", nil, true}, // backwards
		{"x", nil, true},
		{"8G", nil, true}, // over 4G
	} {
		got, err := parseSizes(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("parseSizes(%q) error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if tc.want != nil && !slices.Equal(got, tc.want) {
			t.Errorf("parseSizes(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if tc.in == "1K:64M" && (len(got) != 17 || got[16] != 64<<20) {
			t.Errorf("parseSizes(1K:64M) = %d sizes ending %d, want 17 ending at 64M", len(got), got[len(got)-1])
		}
	}
	if _, err := parseRanks("2,0"); err == nil {
		t.Errorf("parseRanks(2,0) accepted a group of 0")
	}
	if got, err := parseRanks("1,2,8"); err != nil || !slices.Equal(got, []int{1, 2, 8}) {
		t.Errorf("parseRanks(1,2,8) = %v, %v", got, err)
	}
}

func TestAutoVsNCCL(t *testing.T) {
	row := func(b string, bytes int64, us float64) benchRow {
		return benchRow{Backend: b, Bytes: bytes, TimeUs: us}
	}
	for _, tc := range []struct {
		name string
		rows []benchRow
		want []string
	}{
		{"no nccl", []benchRow{row("auto", 1024, 5)}, nil},
		{"fast everywhere", []benchRow{row("nccl", 1024, 20), row("auto", 1024, 8), row("nccl", 1<<20, 50), row("auto", 1<<20, 50)},
			[]string{"over 2 sizes: never slower", "at most 0.40x", "target <= 0.5x: met"}},
		{"slower at 1M, small target missed", []benchRow{row("nccl", 1024, 10), row("auto", 1024, 6), row("nccl", 1<<20, 50), row("auto", 1<<20, 60)},
			[]string{"slower at 1M (1.20x)", "at most 0.60x", "NOT met"}},
	} {
		got := autoVsNCCL(tc.rows)
		if tc.want == nil && got != "" {
			t.Errorf("%s: %q, want empty", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want it to contain %q", tc.name, got, w)
			}
		}
	}
}

func TestInexactRows(t *testing.T) {
	rows := []benchRow{
		{Backend: "oneshot", Bytes: 1024, MaxRelErr: 1e-7},
		{Backend: "twoshot", Bytes: 1024, MaxRelErr: 1e-3},
		{Backend: "host", Bytes: 1024, MaxRelErr: math.NaN()},
		{Backend: "nccl", Bytes: 1024, MaxRelErr: -1},
	}
	got := inexactRows(rows)
	if len(got) != 3 || !strings.HasPrefix(got[0], "twoshot") {
		t.Errorf("inexactRows = %q, want twoshot, host, nccl", got)
	}
}

func TestCUDAAllReduceSizes(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want string
		err  bool
	}{
		{1, "4", false},
		{16, "4,16,64", false},
		{20, "4,16,64,80", false},
		{1 << 20, "4,16,64,256,1024,4096,16384,65536,262144,1048576,4000012,4194304", false},
		{0, "", true},
		{1<<30 + 1, "", true},
	} {
		got, err := cudaAllReduceSizes(tc.max)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("cudaAllReduceSizes(%d) = %q, %v; want %q (error %v)", tc.max, got, err, tc.want, tc.err)
			continue
		}
		if err == nil {
			if _, err := parseSizes(got); err != nil {
				t.Errorf("cudaAllReduceSizes(%d) = %q does not parse: %v", tc.max, got, err)
			}
		}
	}
}

func TestAllReduceBenchDeviceFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "tpu"}, `--device "tpu": want cpu or cuda`},
		{[]string{"--device", "cuda", "--backend", "ring"}, `"ring" is not a GPU backend`},
		{[]string{"--device", "cuda", "--sizes", "6"}, "not a whole number of float32s"},
		{[]string{"--device", "cuda", "--iters", "0"}, "must be at least 1"},
	} {
		var out, errOut bytes.Buffer
		err := runAllReduceBench(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("allreduce-bench %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
