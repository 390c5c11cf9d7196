package engine

import (
	"slices"
	"testing"
)

// TestFallbackWarnings: a run's warnings name each reason the EAGLE-3
// head drafted on the CPU during the run, with the count of that run.
func TestFallbackWarnings(t *testing.T) {
	why1 := "sampled chain: top-k 3000 between the draft vocabulary (2048) and the target's (4096)"
	why2 := "tree: the device runner drafts no trees"
	for _, tc := range []struct {
		name          string
		before, after map[string]int
		want          []string
	}{
		{"none", nil, nil, nil},
		{"no new ones", map[string]int{why1: 3}, map[string]int{why1: 3}, nil},
		{"first run", nil, map[string]int{why1: 2}, []string{"eagle3: 2 proposals drafted on the CPU head, not the device's (" + why1 + ")"}},
		{"this run's only", map[string]int{why1: 2}, map[string]int{why1: 5, why2: 1}, []string{
			"eagle3: 3 proposals drafted on the CPU head, not the device's (" + why1 + ")",
			"eagle3: 1 proposals drafted on the CPU head, not the device's (" + why2 + ")",
		}},
	} {
		if got := fallbackWarnings(tc.before, tc.after); !slices.Equal(got, tc.want) {
			t.Errorf("%s: fallbackWarnings = %q, want %q", tc.name, got, tc.want)
		}
	}
	if headFallbacks(nil) != nil {
		t.Errorf("headFallbacks(nil) != nil")
	}
}
