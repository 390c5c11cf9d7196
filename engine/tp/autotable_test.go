package tp

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// gpuCandidates are the GPU backends allreduce-bench --device cuda
// calibrates, in its order.
var gpuCandidates = []string{"oneshot", "twoshot", "host", "nccl"}

func pt(b string, bytes int64, us, rel float64) Measured {
	return Measured{Backend: b, Bytes: bytes, TimeUs: us, MaxRelErr: rel}
}

func TestBuildAutoTable(t *testing.T) {
	K := int64(1024)
	for _, tc := range []struct {
		name  string
		pts   []Measured
		rules []AutoRule
		picks map[int64]string // bytes -> Pick
		err   bool
	}{
		{
			name: "oneshot small, nccl large",
			pts: []Measured{
				pt("nccl", 64*K, 20, 0), pt("oneshot", 64*K, 30, 0), // unsorted input
				pt("oneshot", 1*K, 5, 0), pt("twoshot", 1*K, 8, 0), pt("host", 1*K, 40, 0), pt("nccl", 1*K, 18, 0),
				pt("oneshot", 4*K, 6, 0), pt("twoshot", 4*K, 7, 0), pt("nccl", 4*K, 19, 0),
			},
			rules: []AutoRule{{MaxBytes: 4 * K, Backend: "oneshot"}, {MaxBytes: 64 * K, Backend: "nccl"}},
			picks: map[int64]string{1: "oneshot", 4 * K: "oneshot", 5 * K: "nccl", 1 << 30: "nccl"},
		},
		{
			name: "inexact and NaN never picked",
			pts: []Measured{
				pt("oneshot", 1*K, 1, 1e-3), pt("twoshot", 1*K, 2, math.NaN()), pt("host", 1*K, 50, 1e-7),
			},
			rules: []AutoRule{{MaxBytes: 1 * K, Backend: "host"}},
		},
		{
			name:  "tie goes to the earlier candidate",
			pts:   []Measured{pt("nccl", 1*K, 5, 0), pt("twoshot", 1*K, 5, 0)},
			rules: []AutoRule{{MaxBytes: 1 * K, Backend: "twoshot"}},
		},
		{
			name:  "a size with nothing exact is skipped",
			pts:   []Measured{pt("oneshot", 1*K, 1, 0), pt("oneshot", 2*K, 1, 1), pt("oneshot", 4*K, 2, 0)},
			rules: []AutoRule{{MaxBytes: 4 * K, Backend: "oneshot"}},
		},
		{
			name: "nothing exact at all",
			pts:  []Measured{pt("oneshot", 1*K, 1, 1)},
			err:  true,
		},
		{name: "no points", err: true},
	} {
		tab, err := BuildAutoTable(2, gpuCandidates, 1e-5, tc.pts)
		if tc.err {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(tab.Rules, tc.rules) {
			t.Errorf("%s: rules %+v, want %+v", tc.name, tab.Rules, tc.rules)
		}
		for b, want := range tc.picks {
			if got := tab.Pick(b); got != want {
				t.Errorf("%s: Pick(%d) = %s, want %s", tc.name, b, got, want)
			}
		}
	}
}

func TestAutoCrossoverDescription(t *testing.T) {
	tab, err := BuildAutoTable(4, gpuCandidates, 1e-5, []Measured{
		pt("oneshot", 1024, 5, 0), pt("nccl", 1024, 9, 0),
		pt("oneshot", 1<<20, 90, 0), pt("nccl", 1<<20, 40, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := tab.Describe()
	for _, want := range []string{"oneshot up to 1K", "nccl above", "oneshot->nccl after 1K"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q, want it to contain %q", got, want)
		}
	}
}
